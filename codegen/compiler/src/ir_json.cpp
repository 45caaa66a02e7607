#include "tunecast/codegen/ir_json.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tunecast {

// ---- base64 ------------------------------------------------------------------------------------

namespace {

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string encode_floats_base64(const float* values, size_t count) {
  static_assert(sizeof(float) == 4, "float32 expected");
  const auto* bytes = reinterpret_cast<const uint8_t*>(values);  // little-endian hosts only
  const size_t n = count * 4;
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b0 = bytes[i];
    const uint32_t b1 = i + 1 < n ? bytes[i + 1] : 0;
    const uint32_t b2 = i + 2 < n ? bytes[i + 2] : 0;
    const uint32_t triple = (b0 << 16) | (b1 << 8) | b2;
    out.push_back(kBase64Alphabet[(triple >> 18) & 63]);
    out.push_back(kBase64Alphabet[(triple >> 12) & 63]);
    out.push_back(i + 1 < n ? kBase64Alphabet[(triple >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? kBase64Alphabet[triple & 63] : '=');
  }
  return out;
}

bool decode_base64(std::string_view text, std::vector<uint8_t>* bytes, size_t* error_at) {
  uint32_t acc = 0;
  int digits = 0;     // digits in the current quartet
  int padding = 0;    // '=' seen; only more '=' may follow
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      if (digits + padding < 2 || digits + padding >= 4) {
        *error_at = i;
        return false;
      }
      ++padding;
      continue;
    }
    const int d = base64_digit(c);
    if (d < 0 || padding > 0) {
      *error_at = i;
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(d);
    if (++digits == 4) {
      bytes->push_back(static_cast<uint8_t>(acc >> 16));
      bytes->push_back(static_cast<uint8_t>(acc >> 8));
      bytes->push_back(static_cast<uint8_t>(acc));
      acc = 0;
      digits = 0;
    }
  }
  // A tail of 2 or 3 digits (padded or not) carries 1 or 2 bytes; a lone digit carries nothing.
  if (digits == 1) {
    *error_at = text.size();
    return false;
  }
  if (padding > 0 && digits + padding != 4) {
    *error_at = text.size();
    return false;
  }
  if (digits == 2) {
    bytes->push_back(static_cast<uint8_t>(acc >> 4));
  } else if (digits == 3) {
    bytes->push_back(static_cast<uint8_t>(acc >> 10));
    bytes->push_back(static_cast<uint8_t>(acc >> 2));
  }
  return true;
}

namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// ---- reader ------------------------------------------------------------------------------------

// Reads one interchange document. Every message reads "<json path>: <problem> in <source>".
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Status read_model(const json& doc, ir::Model* model) {
    const std::string root = "(top level)";
    TUNECAST_RETURN_IF_ERROR(expect_object(doc, root));
    TUNECAST_RETURN_IF_ERROR(known_fields(
        doc, root, {"format", "version", "name", "metadata", "graphs", "seq2seq", "vocabulary"}));
    std::string format;
    TUNECAST_RETURN_IF_ERROR(get_string(doc, root, "format", true, &format));
    if (format != kIrJsonFormat) {
      return fail(StatusCode::kInvalidArgument, root, "format is '%s', expected '%s'",
                  format.c_str(), kIrJsonFormat);
    }
    int64_t version = 0;
    TUNECAST_RETURN_IF_ERROR(get_int(doc, root, "version", true, 1, INT32_MAX, &version));
    if (version > kIrJsonVersion) {
      return fail(StatusCode::kUnsupported, root,
                  "version %lld is newer than this compiler's %d", static_cast<long long>(version),
                  kIrJsonVersion);
    }
    TUNECAST_RETURN_IF_ERROR(get_string(doc, root, "name", false, &model->name));
    if (const json* metadata = find(doc, "metadata")) {
      TUNECAST_RETURN_IF_ERROR(expect_object(*metadata, "metadata"));
      for (const auto& item : metadata->items()) {
        if (!item.value().is_string()) {
          return fail(StatusCode::kInvalidArgument, "metadata." + item.key(),
                      "must be a string, is %s", item.value().type_name());
        }
        model->metadata[item.key()] = item.value().get<std::string>();
      }
    }
    const json* graphs = find(doc, "graphs");
    if (!graphs) return fail(StatusCode::kNotFound, root, "missing field 'graphs'");
    TUNECAST_RETURN_IF_ERROR(expect_array(*graphs, "graphs"));
    model->graphs.resize(graphs->size());
    for (size_t g = 0; g < graphs->size(); ++g) {
      TUNECAST_RETURN_IF_ERROR(
          read_graph((*graphs)[g], "graphs[" + std::to_string(g) + "]", &model->graphs[g]));
    }
    if (const json* s = find(doc, "seq2seq")) {
      model->seq2seq.emplace();
      TUNECAST_RETURN_IF_ERROR(read_seq2seq(*s, &*model->seq2seq));
    }
    if (const json* v = find(doc, "vocabulary")) {
      TUNECAST_RETURN_IF_ERROR(read_vocabulary(*v, &model->vocabulary));
    }
    return Status::ok();
  }

 private:
#if defined(__GNUC__)
  __attribute__((format(printf, 4, 5)))
#endif
  Status fail(StatusCode code, const std::string& path, const char* format, ...) const {
    char what[Status::kMaxMessage];
    va_list args;
    va_start(args, format);
    std::vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return Status::error_with_tail(code, (path + ": " + what).c_str(), (" in " + std::string(source_)).c_str());
  }

  static const json* find(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  Status expect_object(const json& j, const std::string& path) const {
    if (!j.is_object()) {
      return fail(StatusCode::kInvalidArgument, path, "must be an object, is %s", j.type_name());
    }
    return Status::ok();
  }
  Status expect_array(const json& j, const std::string& path) const {
    if (!j.is_array()) {
      return fail(StatusCode::kInvalidArgument, path, "must be an array, is %s", j.type_name());
    }
    return Status::ok();
  }

  Status known_fields(const json& obj, const std::string& path,
                      std::initializer_list<const char*> allowed) const {
    for (const auto& item : obj.items()) {
      bool ok = false;
      for (const char* name : allowed) ok = ok || item.key() == name;
      if (!ok) {
        return fail(StatusCode::kInvalidArgument, path, "unknown field '%s'", item.key().c_str());
      }
    }
    return Status::ok();
  }

  Status get_string(const json& obj, const std::string& path, const char* key, bool required,
                    std::string* out) const {
    const json* j = find(obj, key);
    if (!j) {
      if (required) return fail(StatusCode::kNotFound, path, "missing field '%s'", key);
      return Status::ok();
    }
    if (!j->is_string()) {
      return fail(StatusCode::kInvalidArgument, path, "'%s' must be a string, is %s", key,
                  j->type_name());
    }
    *out = j->get<std::string>();
    return Status::ok();
  }

  Status as_int(const json& j, const std::string& path, const char* key, int64_t min, int64_t max,
                int64_t* out) const {
    if (!j.is_number_integer()) {
      return fail(StatusCode::kInvalidArgument, path, "'%s' must be an integer, is %s", key,
                  j.type_name());
    }
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return fail(StatusCode::kInvalidArgument, path, "'%s' is out of range", key);
    }
    const int64_t v = j.get<int64_t>();
    if (v < min || v > max) {
      return fail(StatusCode::kInvalidArgument, path, "'%s' is %lld, outside [%lld, %lld]", key,
                  static_cast<long long>(v), static_cast<long long>(min),
                  static_cast<long long>(max));
    }
    *out = v;
    return Status::ok();
  }

  Status get_int(const json& obj, const std::string& path, const char* key, bool required,
                 int64_t min, int64_t max, int64_t* out) const {
    const json* j = find(obj, key);
    if (!j) {
      if (required) return fail(StatusCode::kNotFound, path, "missing field '%s'", key);
      return Status::ok();
    }
    return as_int(*j, path, key, min, max, out);
  }

  Status get_u32(const json& obj, const std::string& path, const char* key, bool required,
                 uint32_t* out) const {
    int64_t v = *out;
    TUNECAST_RETURN_IF_ERROR(get_int(obj, path, key, required, 0, UINT32_MAX, &v));
    *out = static_cast<uint32_t>(v);
    return Status::ok();
  }

  Status get_bool(const json& obj, const std::string& path, const char* key, bool* out) const {
    const json* j = find(obj, key);
    if (!j) return Status::ok();
    if (!j->is_boolean()) {
      return fail(StatusCode::kInvalidArgument, path, "'%s' must be true or false, is %s", key,
                  j->type_name());
    }
    *out = j->get<bool>();
    return Status::ok();
  }

  template <typename T>
  Status get_int_array(const json& obj, const std::string& path, const char* key, bool required,
                       std::vector<T>* out) const {
    const json* j = find(obj, key);
    if (!j) {
      if (required) return fail(StatusCode::kNotFound, path, "missing field '%s'", key);
      return Status::ok();
    }
    if (!j->is_array()) {
      return fail(StatusCode::kInvalidArgument, path, "'%s' must be an array, is %s", key,
                  j->type_name());
    }
    out->clear();
    out->reserve(j->size());
    for (size_t i = 0; i < j->size(); ++i) {
      int64_t v = 0;
      const std::string element = std::string(key) + "[" + std::to_string(i) + "]";
      TUNECAST_RETURN_IF_ERROR(as_int((*j)[i], path, element.c_str(),
                                      static_cast<int64_t>(std::numeric_limits<T>::min()),
                                      static_cast<int64_t>(std::numeric_limits<T>::max()), &v));
      out->push_back(static_cast<T>(v));
    }
    return Status::ok();
  }

  template <typename Enum>
  Status get_enum(const json& obj, const std::string& path, const char* key,
                  const char* const* names, Enum* out) const {
    const json* j = find(obj, key);
    if (!j) return Status::ok();
    if (j->is_string()) {
      const std::string name = j->get<std::string>();
      for (int v = static_cast<int>(Enum::MIN); v <= static_cast<int>(Enum::MAX); ++v) {
        if (names[v] && name == names[v]) {
          *out = static_cast<Enum>(v);
          return Status::ok();
        }
      }
      std::string choices;
      for (int v = static_cast<int>(Enum::MIN); v <= static_cast<int>(Enum::MAX); ++v) {
        choices += (choices.empty() ? "" : ", ") + std::string(names[v]);
      }
      return fail(StatusCode::kInvalidArgument, path, "unknown %s '%s' (one of %s)", key,
                  name.c_str(), choices.c_str());
    }
    return fail(StatusCode::kInvalidArgument, path, "'%s' must be a name string, is %s", key,
                j->type_name());
  }

  // Weights: base64 float32 little-endian, or (for hand-written files) an array of numbers.
  Status get_floats(const json& j, const std::string& path, const char* key,
                    std::vector<float>* out) const {
    out->clear();
    if (j.is_string()) {
      const std::string& text = j.get_ref<const std::string&>();
      std::vector<uint8_t> bytes;
      size_t bad = 0;
      if (!decode_base64(text, &bytes, &bad)) {
        return fail(StatusCode::kInvalidArgument, path, "'%s' is not valid base64 (at character "
                    "%zu)", key, bad);
      }
      if (bytes.size() % 4 != 0) {
        return fail(StatusCode::kInvalidArgument, path, "'%s' holds %zu bytes, not whole float32s",
                    key, bytes.size());
      }
      out->resize(bytes.size() / 4);
      if (!bytes.empty()) std::memcpy(out->data(), bytes.data(), bytes.size());
      return Status::ok();
    }
    if (j.is_array()) {
      out->reserve(j.size());
      for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_number()) {
          return fail(StatusCode::kInvalidArgument, path, "'%s'[%zu] must be a number, is %s", key,
                      i, j[i].type_name());
        }
        out->push_back(j[i].get<float>());
      }
      return Status::ok();
    }
    return fail(StatusCode::kInvalidArgument, path,
                "'%s' must be a base64 string or an array of numbers, is %s", key, j.type_name());
  }

  Status read_matrix(const json& obj, const std::string& path, const char* key,
                     ir::Matrix* out) const {
    const json* j = find(obj, key);
    if (!j) return Status::ok();
    const std::string here = path + "." + key;
    TUNECAST_RETURN_IF_ERROR(expect_object(*j, here));
    TUNECAST_RETURN_IF_ERROR(known_fields(*j, here, {"rows", "cols", "data"}));
    TUNECAST_RETURN_IF_ERROR(get_u32(*j, here, "rows", true, &out->rows));
    TUNECAST_RETURN_IF_ERROR(get_u32(*j, here, "cols", true, &out->cols));
    const json* data = find(*j, "data");
    if (!data) return fail(StatusCode::kNotFound, here, "missing field 'data'");
    TUNECAST_RETURN_IF_ERROR(get_floats(*data, here, "data", &out->data));
    const uint64_t expected = static_cast<uint64_t>(out->rows) * out->cols;
    if (out->data.size() != expected) {
      return fail(StatusCode::kInvalidArgument, here, "data holds %zu floats, expected %llu (%u x "
                  "%u)", out->data.size(), static_cast<unsigned long long>(expected), out->rows,
                  out->cols);
    }
    return Status::ok();
  }

  Status read_graph(const json& j, const std::string& path, ir::Graph* graph) const {
    TUNECAST_RETURN_IF_ERROR(expect_object(j, path));
    TUNECAST_RETURN_IF_ERROR(
        known_fields(j, path, {"name", "batched", "values", "inputs", "outputs", "layers"}));
    TUNECAST_RETURN_IF_ERROR(get_string(j, path, "name", false, &graph->name));
    TUNECAST_RETURN_IF_ERROR(get_bool(j, path, "batched", &graph->batched));
    const json* values = find(j, "values");
    if (!values) return fail(StatusCode::kNotFound, path, "missing field 'values'");
    TUNECAST_RETURN_IF_ERROR(expect_array(*values, path + ".values"));
    graph->values.resize(values->size());
    for (size_t v = 0; v < values->size(); ++v) {
      const std::string here = path + ".values[" + std::to_string(v) + "]";
      const json& value = (*values)[v];
      TUNECAST_RETURN_IF_ERROR(expect_object(value, here));
      TUNECAST_RETURN_IF_ERROR(known_fields(value, here, {"name", "rows", "cols"}));
      TUNECAST_RETURN_IF_ERROR(get_string(value, here, "name", false, &graph->values[v].name));
      TUNECAST_RETURN_IF_ERROR(get_u32(value, here, "rows", true, &graph->values[v].rows));
      TUNECAST_RETURN_IF_ERROR(get_u32(value, here, "cols", true, &graph->values[v].cols));
    }
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "inputs", true, &graph->inputs));
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "outputs", true, &graph->outputs));
    const json* layers = find(j, "layers");
    if (!layers) return fail(StatusCode::kNotFound, path, "missing field 'layers'");
    TUNECAST_RETURN_IF_ERROR(expect_array(*layers, path + ".layers"));
    graph->layers.resize(layers->size());
    for (size_t l = 0; l < layers->size(); ++l) {
      TUNECAST_RETURN_IF_ERROR(read_layer((*layers)[l],
                                          path + ".layers[" + std::to_string(l) + "]",
                                          &graph->layers[l]));
    }
    return Status::ok();
  }

  Status read_layer(const json& j, std::string path, ir::Layer* layer) const {
    TUNECAST_RETURN_IF_ERROR(expect_object(j, path));
    TUNECAST_RETURN_IF_ERROR(get_string(j, path, "name", false, &layer->name));
    if (!layer->name.empty()) path += " ('" + layer->name + "')";
    TUNECAST_RETURN_IF_ERROR(known_fields(
        j, path,
        {"type", "name", "inputs", "outputs", "units", "activation", "kernel", "recurrent", "bias",
         "return_sequences", "reverse", "recurrent_activation", "cell_activation", "token_input",
         "kernel_size", "padding_same"}));
    if (!find(j, "type")) return fail(StatusCode::kNotFound, path, "missing field 'type'");
    TUNECAST_RETURN_IF_ERROR(
        get_enum(j, path, "type", schema::EnumNamesLayerType(), &layer->type));
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "inputs", true, &layer->inputs));
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "outputs", true, &layer->outputs));
    TUNECAST_RETURN_IF_ERROR(get_u32(j, path, "units", false, &layer->units));
    const char* const* activations = schema::EnumNamesActivation();
    TUNECAST_RETURN_IF_ERROR(get_enum(j, path, "activation", activations, &layer->activation));
    TUNECAST_RETURN_IF_ERROR(
        get_enum(j, path, "recurrent_activation", activations, &layer->recurrent_activation));
    TUNECAST_RETURN_IF_ERROR(
        get_enum(j, path, "cell_activation", activations, &layer->cell_activation));
    TUNECAST_RETURN_IF_ERROR(read_matrix(j, path, "kernel", &layer->kernel));
    TUNECAST_RETURN_IF_ERROR(read_matrix(j, path, "recurrent", &layer->recurrent));
    if (const json* bias = find(j, "bias")) {
      TUNECAST_RETURN_IF_ERROR(get_floats(*bias, path, "bias", &layer->bias));
    }
    TUNECAST_RETURN_IF_ERROR(get_bool(j, path, "return_sequences", &layer->return_sequences));
    TUNECAST_RETURN_IF_ERROR(get_bool(j, path, "reverse", &layer->reverse));
    TUNECAST_RETURN_IF_ERROR(get_bool(j, path, "token_input", &layer->token_input));
    TUNECAST_RETURN_IF_ERROR(get_u32(j, path, "kernel_size", false, &layer->kernel_size));
    TUNECAST_RETURN_IF_ERROR(get_bool(j, path, "padding_same", &layer->padding_same));
    return Status::ok();
  }

  Status read_seq2seq(const json& j, ir::Seq2Seq* s) const {
    const std::string path = "seq2seq";
    TUNECAST_RETURN_IF_ERROR(expect_object(j, path));
    TUNECAST_RETURN_IF_ERROR(known_fields(
        j, path,
        {"encoder", "decoder", "token_input", "logits_output", "start_token", "states", "contexts",
         "logits_are_probabilities"}));
    TUNECAST_RETURN_IF_ERROR(get_u32(j, path, "encoder", true, &s->encoder));
    TUNECAST_RETURN_IF_ERROR(get_u32(j, path, "decoder", true, &s->decoder));
    TUNECAST_RETURN_IF_ERROR(get_u32(j, path, "token_input", false, &s->token_input));
    TUNECAST_RETURN_IF_ERROR(get_u32(j, path, "logits_output", false, &s->logits_output));
    int64_t start = s->start_token;
    TUNECAST_RETURN_IF_ERROR(get_int(j, path, "start_token", false, INT32_MIN, INT32_MAX, &start));
    s->start_token = static_cast<int32_t>(start);
    TUNECAST_RETURN_IF_ERROR(
        get_bool(j, path, "logits_are_probabilities", &s->logits_are_probabilities));
    if (const json* states = find(j, "states")) {
      TUNECAST_RETURN_IF_ERROR(expect_array(*states, path + ".states"));
      s->states.resize(states->size());
      for (size_t i = 0; i < states->size(); ++i) {
        const std::string here = path + ".states[" + std::to_string(i) + "]";
        const json& link = (*states)[i];
        TUNECAST_RETURN_IF_ERROR(expect_object(link, here));
        TUNECAST_RETURN_IF_ERROR(
            known_fields(link, here, {"decoder_input", "encoder_output", "decoder_output"}));
        TUNECAST_RETURN_IF_ERROR(
            get_u32(link, here, "decoder_input", true, &s->states[i].decoder_input));
        TUNECAST_RETURN_IF_ERROR(
            get_u32(link, here, "encoder_output", true, &s->states[i].encoder_output));
        TUNECAST_RETURN_IF_ERROR(
            get_u32(link, here, "decoder_output", true, &s->states[i].decoder_output));
      }
    }
    if (const json* contexts = find(j, "contexts")) {
      TUNECAST_RETURN_IF_ERROR(expect_array(*contexts, path + ".contexts"));
      s->contexts.resize(contexts->size());
      for (size_t i = 0; i < contexts->size(); ++i) {
        const std::string here = path + ".contexts[" + std::to_string(i) + "]";
        const json& link = (*contexts)[i];
        TUNECAST_RETURN_IF_ERROR(expect_object(link, here));
        TUNECAST_RETURN_IF_ERROR(known_fields(link, here, {"decoder_input", "encoder_output"}));
        TUNECAST_RETURN_IF_ERROR(
            get_u32(link, here, "decoder_input", true, &s->contexts[i].decoder_input));
        TUNECAST_RETURN_IF_ERROR(
            get_u32(link, here, "encoder_output", true, &s->contexts[i].encoder_output));
      }
    }
    return Status::ok();
  }

  Status read_vocabulary(const json& j, ir::Vocabulary* v) const {
    const std::string path = "vocabulary";
    TUNECAST_RETURN_IF_ERROR(expect_object(j, path));
    TUNECAST_RETURN_IF_ERROR(
        known_fields(j, path, {"token_values", "end_tokens", "parameters", "end_policy", "token_labels",
                               "decode_order"}));
    if (const json* labels = find(j, "token_labels")) {
      TUNECAST_RETURN_IF_ERROR(expect_array(*labels, path + ".token_labels"));
      for (const json& label : *labels) {
        if (!label.is_string()) {
          return Status::error(StatusCode::kInvalidArgument, "%s.token_labels: labels are strings",
                               path.c_str());
        }
        v->token_labels.push_back(label.get<std::string>());
      }
    }
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "token_values", true, &v->token_values));
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "end_tokens", false, &v->end_tokens));
    TUNECAST_RETURN_IF_ERROR(get_int_array(j, path, "decode_order", false, &v->decode_order));
    TUNECAST_RETURN_IF_ERROR(
        get_enum(j, path, "end_policy", schema::EnumNamesEndPolicy(), &v->end_policy));
    if (const json* params = find(j, "parameters")) {
      TUNECAST_RETURN_IF_ERROR(expect_array(*params, path + ".parameters"));
      v->parameters.resize(params->size());
      for (size_t p = 0; p < params->size(); ++p) {
        const std::string here = path + ".parameters[" + std::to_string(p) + "]";
        const json& param = (*params)[p];
        TUNECAST_RETURN_IF_ERROR(expect_object(param, here));
        TUNECAST_RETURN_IF_ERROR(known_fields(param, here, {"name", "tokens"}));
        TUNECAST_RETURN_IF_ERROR(get_string(param, here, "name", true, &v->parameters[p].name));
        TUNECAST_RETURN_IF_ERROR(
            get_int_array(param, here, "tokens", false, &v->parameters[p].tokens));
      }
    }
    return Status::ok();
  }

  std::string_view source_;
};

// ---- writer ------------------------------------------------------------------------------------

ordered_json write_matrix(const ir::Matrix& m) {
  ordered_json j;
  j["rows"] = m.rows;
  j["cols"] = m.cols;
  j["data"] = encode_floats_base64(m.data.data(), m.data.size());
  return j;
}

ordered_json write_layer(const ir::Layer& layer) {
  const ir::Layer defaults;
  ordered_json j;
  j["type"] = schema::EnumNameLayerType(layer.type);
  j["name"] = layer.name;
  j["inputs"] = layer.inputs;
  j["outputs"] = layer.outputs;
  if (layer.units != defaults.units) j["units"] = layer.units;
  if (layer.activation != defaults.activation) {
    j["activation"] = schema::EnumNameActivation(layer.activation);
  }
  if (!layer.kernel.empty() || layer.kernel.rows != 0 || layer.kernel.cols != 0) {
    j["kernel"] = write_matrix(layer.kernel);
  }
  if (!layer.recurrent.empty() || layer.recurrent.rows != 0 || layer.recurrent.cols != 0) {
    j["recurrent"] = write_matrix(layer.recurrent);
  }
  if (!layer.bias.empty()) j["bias"] = encode_floats_base64(layer.bias.data(), layer.bias.size());
  if (layer.return_sequences != defaults.return_sequences) {
    j["return_sequences"] = layer.return_sequences;
  }
  if (layer.reverse != defaults.reverse) j["reverse"] = layer.reverse;
  if (layer.recurrent_activation != defaults.recurrent_activation) {
    j["recurrent_activation"] = schema::EnumNameActivation(layer.recurrent_activation);
  }
  if (layer.cell_activation != defaults.cell_activation) {
    j["cell_activation"] = schema::EnumNameActivation(layer.cell_activation);
  }
  if (layer.token_input != defaults.token_input) j["token_input"] = layer.token_input;
  if (layer.kernel_size != defaults.kernel_size) j["kernel_size"] = layer.kernel_size;
  if (layer.padding_same != defaults.padding_same) j["padding_same"] = layer.padding_same;
  return j;
}

ordered_json write_graph(const ir::Graph& graph) {
  ordered_json j;
  j["name"] = graph.name;
  j["batched"] = graph.batched;
  ordered_json values = ordered_json::array();
  for (const ir::Value& v : graph.values) {
    values.push_back(ordered_json{{"name", v.name}, {"rows", v.rows}, {"cols", v.cols}});
  }
  j["values"] = std::move(values);
  j["inputs"] = graph.inputs;
  j["outputs"] = graph.outputs;
  ordered_json layers = ordered_json::array();
  for (const ir::Layer& layer : graph.layers) layers.push_back(write_layer(layer));
  j["layers"] = std::move(layers);
  return j;
}

bool valid_enums(const ir::Model& model) {
  for (const ir::Graph& graph : model.graphs) {
    for (const ir::Layer& l : graph.layers) {
      if (l.type < ir::LayerType::MIN || l.type > ir::LayerType::MAX) return false;
      for (ir::Activation a : {l.activation, l.recurrent_activation, l.cell_activation}) {
        if (a < ir::Activation::MIN || a > ir::Activation::MAX) return false;
      }
    }
  }
  const ir::EndPolicy policy = model.vocabulary.end_policy;
  return policy >= ir::EndPolicy::MIN && policy <= ir::EndPolicy::MAX;
}

}  // namespace

Status parse_ir_json(std::string_view text, std::string_view source, ir::Model* out) {
  try {
    const json doc = json::parse(text.begin(), text.end());
    ir::Model model;
    TUNECAST_RETURN_IF_ERROR(Reader(source).read_model(doc, &model));
    *out = std::move(model);
    return Status::ok();
  } catch (const json::parse_error& e) {
    return Status::error(StatusCode::kInvalidArgument, "malformed JSON in %.*s: %s",
                         static_cast<int>(source.size()), source.data(), e.what());
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInvalidArgument, "cannot read %.*s: %s",
                         static_cast<int>(source.size()), source.data(), e.what());
  }
}

Status read_ir_json(const std::string& path, ir::Model* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::error(StatusCode::kNotFound, "cannot open %s", path.c_str());
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return Status::error(StatusCode::kIoError, "cannot read %s", path.c_str());
  return parse_ir_json(text.str(), path, out);
}

Status write_ir_json(const ir::Model& model, std::string* out) {
  if (!valid_enums(model)) {
    return Status::error(StatusCode::kInvalidArgument,
                         "model '%s' holds an out-of-range enum (run check_ir first)",
                         model.name.c_str());
  }
  try {
    ordered_json doc;
    doc["format"] = kIrJsonFormat;
    doc["version"] = kIrJsonVersion;
    doc["name"] = model.name;
    ordered_json metadata = ordered_json::object();
    for (const auto& [key, value] : model.metadata) metadata[key] = value;
    doc["metadata"] = std::move(metadata);
    ordered_json graphs = ordered_json::array();
    for (const ir::Graph& graph : model.graphs) graphs.push_back(write_graph(graph));
    doc["graphs"] = std::move(graphs);
    if (model.seq2seq) {
      const ir::Seq2Seq& s = *model.seq2seq;
      ordered_json j;
      j["encoder"] = s.encoder;
      j["decoder"] = s.decoder;
      j["token_input"] = s.token_input;
      j["logits_output"] = s.logits_output;
      j["start_token"] = s.start_token;
      ordered_json states = ordered_json::array();
      for (const ir::StateLink& l : s.states) {
        states.push_back(ordered_json{{"decoder_input", l.decoder_input},
                                      {"encoder_output", l.encoder_output},
                                      {"decoder_output", l.decoder_output}});
      }
      j["states"] = std::move(states);
      ordered_json contexts = ordered_json::array();
      for (const ir::ContextLink& l : s.contexts) {
        contexts.push_back(ordered_json{{"decoder_input", l.decoder_input},
                                        {"encoder_output", l.encoder_output}});
      }
      j["contexts"] = std::move(contexts);
      j["logits_are_probabilities"] = s.logits_are_probabilities;
      doc["seq2seq"] = std::move(j);
    }
    const ir::Vocabulary& v = model.vocabulary;
    if (!v.token_values.empty() || !v.parameters.empty() || !v.end_tokens.empty()) {
      ordered_json j;
      j["token_values"] = v.token_values;
      j["end_tokens"] = v.end_tokens;
      ordered_json params = ordered_json::array();
      for (const ir::Parameter& p : v.parameters) {
        params.push_back(ordered_json{{"name", p.name}, {"tokens", p.tokens}});
      }
      j["parameters"] = std::move(params);
      j["end_policy"] = schema::EnumNameEndPolicy(v.end_policy);
      if (!v.token_labels.empty()) j["token_labels"] = v.token_labels;
      if (!v.decode_order.empty()) j["decode_order"] = v.decode_order;
      doc["vocabulary"] = std::move(j);
    }
    // Invalid UTF-8 in a name or metadata value is replaced rather than thrown on.
    *out = doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
    out->push_back('\n');
    return Status::ok();
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInvalidArgument, "cannot write model '%s': %s",
                         model.name.c_str(), e.what());
  }
}

}  // namespace tunecast
