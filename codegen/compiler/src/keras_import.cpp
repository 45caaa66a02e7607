#include "tunecast/codegen/keras_import.h"

#include "tunecast/model.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/ir_json.h"

namespace tunecast::keras {
namespace {

using nlohmann::json;
using ir::Activation;
using ir::LayerType;

std::string base_name(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Every importer message ends in " in <file>", so the file survives when a long message is cut.
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
Status error_in(StatusCode code, std::string_view source, const char* format, ...) {
  char what[Status::kMaxMessage];
  va_list args;
  va_start(args, format);
  std::vsnprintf(what, sizeof what, format, args);
  va_end(args);
  return Status::error_with_tail(code, what, (" in " + std::string(source)).c_str());
}

// A Keras tensor as the importer tracks it: the IR value plus its Keras rank without the batch
// axis (1: a vector [batch, F]; 2: a sequence [batch, T, F]). Rank tells a sequence from a vector
// where IR rows cannot (in a step graph both have rows 0).
struct Tensor {
  uint32_t value = 0;
  int rank = 1;
};

struct Ref {
  std::string layer;
  int64_t node = 0;
  int64_t tensor = 0;
};

struct LstmConfig {
  uint32_t units = 0;
  Activation cell_activation = Activation::Tanh;
  Activation recurrent_activation = Activation::Sigmoid;
  bool use_bias = true;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
};

class GraphImporter {
 public:
  GraphImporter(std::string_view source, bool batched, ir::Graph* graph)
      : source_(source), batched_(batched), graph_(graph) {}

  Status run(const json& model) {
    if (!model.is_object()) return fail(StatusCode::kInvalidArgument, "model JSON is not an object");
    const json* arch = find(model, "architecture");
    if (!arch || !arch->is_object()) {
      return fail(StatusCode::kNotFound, "missing object 'architecture'");
    }
    std::string class_name;
    TUNECAST_RETURN_IF_ERROR(get_string(*arch, "class_name", "architecture", &class_name));
    if (class_name != "Functional" && class_name != "Model") {
      return fail(StatusCode::kUnsupported,
                  "architecture class '%s' is not supported (only functional models)",
                  class_name.c_str());
    }
    const json* config = find(*arch, "config");
    if (!config || !config->is_object()) {
      return fail(StatusCode::kNotFound, "missing object 'architecture.config'");
    }
    if (const json* name = find(*config, "name"); name && name->is_string()) {
      graph_->name = name->get<std::string>();
    }
    const json* layers = find(*config, "layers");
    const json* input_layers = find(*config, "input_layers");
    const json* output_layers = find(*config, "output_layers");
    if (!layers || !layers->is_array()) {
      return fail(StatusCode::kNotFound, "missing array 'architecture.config.layers'");
    }
    if (!input_layers || !input_layers->is_array()) {
      return fail(StatusCode::kNotFound, "missing array 'architecture.config.input_layers'");
    }
    if (!output_layers || !output_layers->is_array()) {
      return fail(StatusCode::kNotFound, "missing array 'architecture.config.output_layers'");
    }
    params_ = find(model, "trainable_params");
    if (params_ && !params_->is_object()) {
      return fail(StatusCode::kInvalidArgument, "'trainable_params' is not an object");
    }
    graph_->batched = batched_;

    // Index the layers by name.
    std::vector<const json*> order;
    for (size_t i = 0; i < layers->size(); ++i) {
      const json& layer = (*layers)[i];
      if (!layer.is_object()) {
        return fail(StatusCode::kInvalidArgument, "layers[%zu] is not an object", i);
      }
      std::string name;
      TUNECAST_RETURN_IF_ERROR(get_string(layer, "name", "layers[" + std::to_string(i) + "]",
                                          &name));
      if (!by_name_.emplace(name, &layer).second) {
        return fail(StatusCode::kInvalidArgument, "two layers are named '%s'", name.c_str());
      }
      order.push_back(&layer);
    }

    for (size_t i = 0; i < input_layers->size(); ++i) {
      Ref ref;
      TUNECAST_RETURN_IF_ERROR(parse_ref((*input_layers)[i], "input_layers", &ref));
      TUNECAST_RETURN_IF_ERROR(add_input(ref));
    }

    // Keras lists layers in a topological order already; the loop only guards against files that
    // do not, and reports references that nothing produces.
    struct Pending {
      const json* layer;
      size_t node;
    };
    std::vector<Pending> pending;
    for (const json* layer : order) {
      if (layer->value("class_name", "") == "InputLayer") continue;
      const json* nodes = find(*layer, "inbound_nodes");
      if (!nodes || !nodes->is_array()) {
        return fail(StatusCode::kNotFound, "layer '%s' has no array 'inbound_nodes'",
                    layer->value("name", "").c_str());
      }
      for (size_t n = 0; n < nodes->size(); ++n) pending.push_back({layer, n});
    }
    for (bool progress = true; progress && !pending.empty();) {
      progress = false;
      for (size_t i = 0; i < pending.size();) {
        bool ready = false;
        TUNECAST_RETURN_IF_ERROR(run_node(*pending[i].layer, pending[i].node, &ready));
        if (ready) {
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          progress = true;
        } else {
          ++i;
        }
      }
    }
    if (!pending.empty()) {
      const json& layer = *pending.front().layer;
      std::vector<Ref> refs;
      TUNECAST_RETURN_IF_ERROR(node_refs(layer, pending.front().node, &refs));
      for (const Ref& ref : refs) {
        if (!tensors_.count(key(ref))) {
          return fail(StatusCode::kInvalidArgument,
                      "layer '%s' reads '%s' (node %lld, tensor %lld), which no layer produces",
                      layer.value("name", "").c_str(), ref.layer.c_str(),
                      static_cast<long long>(ref.node), static_cast<long long>(ref.tensor));
        }
      }
      return fail(StatusCode::kInvalidArgument, "layer '%s' is part of a cycle",
                  layer.value("name", "").c_str());
    }

    for (size_t i = 0; i < output_layers->size(); ++i) {
      Ref ref;
      TUNECAST_RETURN_IF_ERROR(parse_ref((*output_layers)[i], "output_layers", &ref));
      auto it = tensors_.find(key(ref));
      if (it == tensors_.end()) {
        return fail(StatusCode::kInvalidArgument,
                    "output '%s' (node %lld, tensor %lld) is not produced by any layer",
                    ref.layer.c_str(), static_cast<long long>(ref.node),
                    static_cast<long long>(ref.tensor));
      }
      graph_->outputs.push_back(it->second.value);
    }
    if (graph_->inputs.empty()) return fail(StatusCode::kInvalidArgument, "model has no inputs");
    if (graph_->outputs.empty()) return fail(StatusCode::kInvalidArgument, "model has no outputs");
    return Status::ok();
  }

 private:
  using Key = std::tuple<std::string, int64_t, int64_t>;
  static Key key(const Ref& ref) { return {ref.layer, ref.node, ref.tensor}; }

#if defined(__GNUC__)
  __attribute__((format(printf, 3, 4)))
#endif
  Status fail(StatusCode code, const char* format, ...) const {
    char what[Status::kMaxMessage];
    va_list args;
    va_start(args, format);
    std::vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return Status::error_with_tail(code, what, (" in " + source_).c_str());
  }

  static const json* find(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  Status get_string(const json& obj, const char* key, const std::string& where,
                    std::string* out) const {
    const json* j = find(obj, key);
    if (!j) return fail(StatusCode::kNotFound, "%s is missing field '%s'", where.c_str(), key);
    if (!j->is_string()) {
      return fail(StatusCode::kInvalidArgument, "%s field '%s' must be a string, is %s",
                  where.c_str(), key, j->type_name());
    }
    *out = j->get<std::string>();
    return Status::ok();
  }

  Status parse_ref(const json& j, const char* where, Ref* out) const {
    if (!j.is_array() || j.size() < 3 || !j[0].is_string() || !j[1].is_number_integer() ||
        !j[2].is_number_integer()) {
      return fail(StatusCode::kInvalidArgument,
                  "%s entry %s is not [layer name, node index, tensor index]", where,
                  j.dump().substr(0, 60).c_str());
    }
    out->layer = j[0].get<std::string>();
    out->node = j[1].get<int64_t>();
    out->tensor = j[2].get<int64_t>();
    return Status::ok();
  }

  Status node_refs(const json& layer, size_t node, std::vector<Ref>* refs) const {
    const json& nodes = layer["inbound_nodes"];
    const json& entries = nodes[node];
    const std::string name = layer.value("name", "");
    if (!entries.is_array()) {
      return fail(StatusCode::kUnsupported,
                  "layer '%s' inbound node %zu is not a list of [layer, node, tensor] (Keras 3 "
                  "files are not supported)", name.c_str(), node);
    }
    refs->clear();
    for (const json& entry : entries) {
      Ref ref;
      TUNECAST_RETURN_IF_ERROR(parse_ref(entry, "inbound_nodes", &ref));
      refs->push_back(ref);
    }
    if (refs->empty()) {
      return fail(StatusCode::kInvalidArgument, "layer '%s' inbound node %zu has no inputs",
                  name.c_str(), node);
    }
    return Status::ok();
  }

  // ---- config fields ---------------------------------------------------------------------------

  Status cfg_uint(const json& cfg, const char* key, const std::string& layer, bool required,
                  uint32_t* out) const {
    const json* j = find(cfg, key);
    if (!j || j->is_null()) {
      if (required) {
        return fail(StatusCode::kNotFound, "layer '%s' config is missing '%s'", layer.c_str(),
                    key);
      }
      return Status::ok();
    }
    if (!j->is_number_integer() || j->get<int64_t>() <= 0 || j->get<int64_t>() > (1 << 24)) {
      return fail(StatusCode::kInvalidArgument,
                  "layer '%s' config '%s' must be a positive integer, is %s", layer.c_str(), key,
                  j->dump().substr(0, 40).c_str());
    }
    *out = static_cast<uint32_t>(j->get<int64_t>());
    return Status::ok();
  }

  Status cfg_bool(const json& cfg, const char* key, const std::string& layer, bool* out) const {
    const json* j = find(cfg, key);
    if (!j || j->is_null()) return Status::ok();
    if (!j->is_boolean()) {
      return fail(StatusCode::kInvalidArgument, "layer '%s' config '%s' must be true or false",
                  layer.c_str(), key);
    }
    *out = j->get<bool>();
    return Status::ok();
  }

  // A one-element list or a plain integer (Keras writes kernel_size as [k]).
  Status cfg_int_or_list(const json& cfg, const char* key, const std::string& layer,
                         int64_t fallback, int64_t* out) const {
    const json* j = find(cfg, key);
    *out = fallback;
    if (!j || j->is_null()) return Status::ok();
    const json* v = j;
    if (j->is_array() && j->size() == 1) v = &(*j)[0];
    if (!v->is_number_integer()) {
      return fail(StatusCode::kInvalidArgument, "layer '%s' config '%s' must be an integer or [n]",
                  layer.c_str(), key);
    }
    *out = v->get<int64_t>();
    return Status::ok();
  }

  Status parse_activation(const json& cfg, const char* key, const std::string& layer,
                          Activation* out) const {
    const json* j = find(cfg, key);
    if (!j || j->is_null()) return Status::ok();
    if (!j->is_string()) {
      return fail(StatusCode::kUnsupported, "layer '%s' %s must be a name string, is %s",
                  layer.c_str(), key, j->type_name());
    }
    const std::string name = j->get<std::string>();
    static const std::pair<const char*, Activation> kNames[] = {
        {"linear", Activation::Linear},   {"relu", Activation::Relu},
        {"tanh", Activation::Tanh},       {"sigmoid", Activation::Sigmoid},
        {"softmax", Activation::Softmax}, {"hard_sigmoid", Activation::HardSigmoid}};
    for (const auto& [known, value] : kNames) {
      if (name == known) {
        *out = value;
        return Status::ok();
      }
    }
    return fail(StatusCode::kUnsupported, "layer '%s' has unknown %s '%s'", layer.c_str(), key,
                name.c_str());
  }

  // ---- weights ---------------------------------------------------------------------------------

  // Reads trainable_params[layer][param] (base64 chunks, each decoded on its own, or plain
  // numbers) and checks it holds rows x cols finite floats.
  Status read_weights(const std::string& layer, const std::string& param, uint32_t rows,
                      uint32_t cols, std::vector<float>* out) const {
    const json* entry = params_ ? find(*params_, layer.c_str()) : nullptr;
    if (!entry || !entry->is_object()) {
      return fail(StatusCode::kNotFound, "layer '%s' has no weights in trainable_params",
                  layer.c_str());
    }
    const json* chunks = find(*entry, param.c_str());
    if (!chunks) {
      return fail(StatusCode::kNotFound, "layer '%s' is missing weights '%s'", layer.c_str(),
                  param.c_str());
    }
    if (!chunks->is_array()) {
      return fail(StatusCode::kInvalidArgument, "layer '%s' weights '%s' must be a list, is %s",
                  layer.c_str(), param.c_str(), chunks->type_name());
    }
    out->clear();
    const bool numbers = !chunks->empty() && (*chunks)[0].is_number();
    if (numbers) {
      for (size_t i = 0; i < chunks->size(); ++i) {
        if (!(*chunks)[i].is_number()) {
          return fail(StatusCode::kInvalidArgument, "layer '%s' weights '%s'[%zu] is not a number",
                      layer.c_str(), param.c_str(), i);
        }
        out->push_back((*chunks)[i].get<float>());
      }
    } else {
      std::vector<uint8_t> bytes;
      for (size_t i = 0; i < chunks->size(); ++i) {
        const json& chunk = (*chunks)[i];
        if (!chunk.is_string()) {
          return fail(StatusCode::kInvalidArgument,
                      "layer '%s' weights '%s' chunk %zu is not a base64 string", layer.c_str(),
                      param.c_str(), i);
        }
        size_t bad = 0;
        if (!decode_base64(chunk.get_ref<const std::string&>(), &bytes, &bad)) {
          return fail(StatusCode::kInvalidArgument,
                      "layer '%s' weights '%s' chunk %zu is bad base64 (at character %zu)",
                      layer.c_str(), param.c_str(), i, bad);
        }
      }
      if (bytes.size() % 4 != 0) {
        return fail(StatusCode::kInvalidArgument,
                    "layer '%s' weights '%s' hold %zu bytes, not whole float32s", layer.c_str(),
                    param.c_str(), bytes.size());
      }
      out->resize(bytes.size() / 4);
      if (!bytes.empty()) std::memcpy(out->data(), bytes.data(), bytes.size());
    }
    const uint64_t expected = static_cast<uint64_t>(rows) * cols;
    if (out->size() != expected) {
      return fail(StatusCode::kInvalidArgument,
                  "layer '%s' weights '%s' hold %zu floats, expected %llu ([%u, %u])",
                  layer.c_str(), param.c_str(), out->size(),
                  static_cast<unsigned long long>(expected), rows, cols);
    }
    for (size_t i = 0; i < out->size(); ++i) {
      if (!std::isfinite((*out)[i])) {
        return fail(StatusCode::kInvalidArgument, "layer '%s' weights '%s' contain %s at index %zu",
                    layer.c_str(), param.c_str(), std::isnan((*out)[i]) ? "NaN" : "Inf", i);
      }
    }
    return Status::ok();
  }

  Status read_matrix(const std::string& layer, const std::string& param, uint32_t rows,
                     uint32_t cols, ir::Matrix* out) const {
    out->rows = rows;
    out->cols = cols;
    return read_weights(layer, param, rows, cols, &out->data);
  }

  // ---- graph building --------------------------------------------------------------------------

  const ir::Value& value(const Tensor& t) const { return graph_->values[t.value]; }
  uint32_t vector_rows() const { return batched_ ? 0 : 1; }

  Tensor new_tensor(const std::string& name, uint32_t rows, uint32_t cols, int rank) {
    return {graph_->add_value(name, rows, cols), rank};
  }

  Status add_input(const Ref& ref) {
    auto it = by_name_.find(ref.layer);
    if (it == by_name_.end()) {
      return fail(StatusCode::kInvalidArgument, "input layer '%s' is not among the layers",
                  ref.layer.c_str());
    }
    const json& layer = *it->second;
    if (layer.value("class_name", "") != "InputLayer") {
      return fail(StatusCode::kInvalidArgument, "model input '%s' is not an InputLayer",
                  ref.layer.c_str());
    }
    const json* cfg = find(layer, "config");
    const json* shape = cfg ? find(*cfg, "batch_input_shape") : nullptr;
    if (!shape && cfg) shape = find(*cfg, "batch_shape");
    if (!shape || !shape->is_array() || shape->size() < 2) {
      return fail(StatusCode::kNotFound,
                  "input layer '%s' has no batch_input_shape [batch, ...dims]", ref.layer.c_str());
    }
    std::vector<uint32_t> dims;
    for (size_t i = 1; i < shape->size(); ++i) {
      const json& d = (*shape)[i];
      if (d.is_null()) {
        return fail(StatusCode::kUnsupported,
                    "input layer '%s' has a variable-length axis %zu; tunecast needs fixed shapes",
                    ref.layer.c_str(), i);
      }
      if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > (1 << 24)) {
        return fail(StatusCode::kInvalidArgument, "input layer '%s' has a bad dimension %s",
                    ref.layer.c_str(), d.dump().substr(0, 20).c_str());
      }
      dims.push_back(static_cast<uint32_t>(d.get<int64_t>()));
    }
    Tensor t;
    if (dims.size() == 1) {
      t = new_tensor(ref.layer, vector_rows(), dims[0], 1);
    } else if (dims.size() == 2) {
      // In a step graph [1, F] is one step per beam; a longer sequence is shared by all beams.
      const uint32_t rows = batched_ && dims[0] == 1 ? 0 : dims[0];
      t = new_tensor(ref.layer, rows, dims[1], 2);
    } else {
      return fail(StatusCode::kUnsupported, "input layer '%s' has rank %zu; at most 2 (time, "
                  "features) is supported", ref.layer.c_str(), dims.size());
    }
    tensors_[key(ref)] = t;
    graph_->inputs.push_back(t.value);
    return Status::ok();
  }

  Status run_node(const json& layer, size_t node, bool* ready) {
    std::vector<Ref> refs;
    TUNECAST_RETURN_IF_ERROR(node_refs(layer, node, &refs));
    std::vector<Tensor> ins;
    for (const Ref& ref : refs) {
      auto it = tensors_.find(key(ref));
      if (it == tensors_.end()) return Status::ok();  // not yet
      ins.push_back(it->second);
    }
    *ready = true;
    const std::string name = layer.value("name", "");
    std::string class_name;
    TUNECAST_RETURN_IF_ERROR(get_string(layer, "class_name", "layer '" + name + "'", &class_name));
    const json* cfg = find(layer, "config");
    if (!cfg || !cfg->is_object()) {
      return fail(StatusCode::kNotFound, "layer '%s' has no config object", name.c_str());
    }
    // A layer called more than once (shared weights) becomes one IR layer per call.
    const std::string ir_name = node == 0 ? name : name + "#" + std::to_string(node);
    std::vector<Tensor> outs;
    TUNECAST_RETURN_IF_ERROR(add_layer(class_name, name, ir_name, *cfg, ins, &outs));
    for (size_t i = 0; i < outs.size(); ++i) {
      tensors_[Key{name, static_cast<int64_t>(node), static_cast<int64_t>(i)}] = outs[i];
    }
    return Status::ok();
  }

  Status expect_inputs(const std::string& class_name, const std::string& name,
                       const std::vector<Tensor>& ins, size_t min, size_t max) const {
    if (ins.size() < min || ins.size() > max) {
      return fail(StatusCode::kInvalidArgument, "%s layer '%s' takes %zu%s inputs, got %zu",
                  class_name.c_str(), name.c_str(), min, max > min ? " or more" : "", ins.size());
    }
    return Status::ok();
  }

  ir::Layer& push_layer(LayerType type, const std::string& ir_name, std::vector<Tensor> ins,
                        std::vector<Tensor> outs) {
    ir::Layer layer;
    layer.type = type;
    layer.name = ir_name;
    for (const Tensor& t : ins) layer.inputs.push_back(t.value);
    for (const Tensor& t : outs) layer.outputs.push_back(t.value);
    graph_->layers.push_back(std::move(layer));
    return graph_->layers.back();
  }

  Status add_layer(const std::string& class_name, const std::string& name,
                   const std::string& ir_name, const json& cfg, const std::vector<Tensor>& ins,
                   std::vector<Tensor>* outs) {
    if (class_name == "Dense") return add_dense(name, ir_name, cfg, ins, outs);
    if (class_name == "LSTM") return add_lstm(name, ir_name, cfg, ins, outs);
    if (class_name == "Bidirectional") return add_bidirectional(name, ir_name, cfg, ins, outs);
    if (class_name == "Embedding") return add_embedding(name, ir_name, cfg, ins, outs);
    if (class_name == "Conv1D") return add_conv1d(name, ir_name, cfg, ins, outs);
    if (class_name == "ReLU") {
      TUNECAST_RETURN_IF_ERROR(expect_inputs(class_name, name, ins, 1, 1));
      for (const char* key : {"max_value", "negative_slope", "threshold"}) {
        const json* j = find(cfg, key);
        if (j && !j->is_null() && !(j->is_number() && j->get<double>() == 0.0)) {
          return fail(StatusCode::kUnsupported, "ReLU layer '%s' with %s %s is not supported",
                      name.c_str(), key, j->dump().substr(0, 20).c_str());
        }
      }
      return add_elementwise(LayerType::Relu, ir_name, ins[0], outs);
    }
    if (class_name == "Activation") {
      TUNECAST_RETURN_IF_ERROR(expect_inputs(class_name, name, ins, 1, 1));
      Activation a = Activation::Linear;
      if (!find(cfg, "activation")) {
        return fail(StatusCode::kNotFound, "layer '%s' config is missing 'activation'",
                    name.c_str());
      }
      TUNECAST_RETURN_IF_ERROR(parse_activation(cfg, "activation", name, &a));
      switch (a) {
        case Activation::Linear: outs->push_back(ins[0]); return Status::ok();
        case Activation::Relu: return add_elementwise(LayerType::Relu, ir_name, ins[0], outs);
        case Activation::Tanh: return add_elementwise(LayerType::Tanh, ir_name, ins[0], outs);
        case Activation::Sigmoid:
          return add_elementwise(LayerType::Sigmoid, ir_name, ins[0], outs);
        case Activation::Softmax:
          return add_elementwise(LayerType::Softmax, ir_name, ins[0], outs);
        default:
          return fail(StatusCode::kUnsupported,
                      "layer '%s': a standalone hard_sigmoid activation is not supported",
                      name.c_str());
      }
    }
    if (class_name == "Softmax") {
      TUNECAST_RETURN_IF_ERROR(expect_inputs(class_name, name, ins, 1, 1));
      TUNECAST_RETURN_IF_ERROR(expect_last_axis(cfg, name, ins[0]));
      return add_elementwise(LayerType::Softmax, ir_name, ins[0], outs);
    }
    if (class_name == "Dropout") {  // identity at inference
      TUNECAST_RETURN_IF_ERROR(expect_inputs(class_name, name, ins, 1, 1));
      outs->push_back(ins[0]);
      return Status::ok();
    }
    if (class_name == "Add") {
      TUNECAST_RETURN_IF_ERROR(expect_inputs(class_name, name, ins, 2, SIZE_MAX));
      for (const Tensor& t : ins) {
        if (value(t).rows != value(ins[0]).rows || value(t).cols != value(ins[0]).cols) {
          return fail(StatusCode::kInvalidArgument,
                      "Add layer '%s' inputs differ in shape ([%u, %u] and [%u, %u])",
                      name.c_str(), value(ins[0]).rows, value(ins[0]).cols, value(t).rows,
                      value(t).cols);
        }
      }
      const Tensor out = new_tensor(ir_name, value(ins[0]).rows, value(ins[0]).cols, ins[0].rank);
      push_layer(LayerType::Add, ir_name, ins, {out});
      outs->push_back(out);
      return Status::ok();
    }
    if (class_name == "Concatenate") {
      TUNECAST_RETURN_IF_ERROR(expect_inputs(class_name, name, ins, 2, SIZE_MAX));
      TUNECAST_RETURN_IF_ERROR(expect_last_axis(cfg, name, ins[0]));
      uint64_t cols = 0;
      for (const Tensor& t : ins) {
        if (value(t).rows != value(ins[0]).rows || t.rank != ins[0].rank) {
          return fail(StatusCode::kInvalidArgument,
                      "Concatenate layer '%s' inputs differ in rows (%u and %u)", name.c_str(),
                      value(ins[0]).rows, value(t).rows);
        }
        cols += value(t).cols;
      }
      const Tensor out = new_tensor(ir_name, value(ins[0]).rows, static_cast<uint32_t>(cols),
                                    ins[0].rank);
      push_layer(LayerType::Concat, ir_name, ins, {out});
      outs->push_back(out);
      return Status::ok();
    }
    return fail(StatusCode::kUnsupported, "unsupported layer class '%s' (layer '%s')",
                class_name.c_str(), name.c_str());
  }

  // Softmax and Concatenate: only over features, Keras axis -1 (or its positive spelling).
  Status expect_last_axis(const json& cfg, const std::string& name, const Tensor& in) const {
    const json* axis = find(cfg, "axis");
    if (!axis || axis->is_null()) return Status::ok();
    if (axis->is_number_integer() &&
        (axis->get<int64_t>() == -1 || axis->get<int64_t>() == in.rank)) {
      return Status::ok();
    }
    return fail(StatusCode::kUnsupported, "layer '%s' works along axis %s; only the last axis "
                "(features) is supported", name.c_str(), axis->dump().substr(0, 20).c_str());
  }

  Status add_elementwise(LayerType type, const std::string& ir_name, const Tensor& in,
                         std::vector<Tensor>* outs) {
    const Tensor out = new_tensor(ir_name, value(in).rows, value(in).cols, in.rank);
    push_layer(type, ir_name, {in}, {out});
    outs->push_back(out);
    return Status::ok();
  }

  Status add_dense(const std::string& name, const std::string& ir_name, const json& cfg,
                   const std::vector<Tensor>& ins, std::vector<Tensor>* outs) {
    TUNECAST_RETURN_IF_ERROR(expect_inputs("Dense", name, ins, 1, 1));
    uint32_t units = 0;
    bool use_bias = true;
    Activation activation = Activation::Linear;
    TUNECAST_RETURN_IF_ERROR(cfg_uint(cfg, "units", name, true, &units));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "use_bias", name, &use_bias));
    TUNECAST_RETURN_IF_ERROR(parse_activation(cfg, "activation", name, &activation));
    const Tensor in = ins[0];
    ir::Layer layer;
    TUNECAST_RETURN_IF_ERROR(read_matrix(name, "weights", value(in).cols, units, &layer.kernel));
    if (use_bias) TUNECAST_RETURN_IF_ERROR(read_weights(name, "bias", 1, units, &layer.bias));
    const Tensor out = new_tensor(ir_name, value(in).rows, units, in.rank);
    ir::Layer& added = push_layer(LayerType::Dense, ir_name, {in}, {out});
    added.units = units;
    added.activation = activation;
    added.kernel = std::move(layer.kernel);
    added.bias = std::move(layer.bias);
    outs->push_back(out);
    return Status::ok();
  }

  Status add_embedding(const std::string& name, const std::string& ir_name, const json& cfg,
                       const std::vector<Tensor>& ins, std::vector<Tensor>* outs) {
    TUNECAST_RETURN_IF_ERROR(expect_inputs("Embedding", name, ins, 1, 1));
    uint32_t input_dim = 0, output_dim = 0;
    bool mask_zero = false;
    TUNECAST_RETURN_IF_ERROR(cfg_uint(cfg, "input_dim", name, true, &input_dim));
    TUNECAST_RETURN_IF_ERROR(cfg_uint(cfg, "output_dim", name, true, &output_dim));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "mask_zero", name, &mask_zero));
    if (mask_zero) {
      return fail(StatusCode::kUnsupported, "Embedding layer '%s' with mask_zero is not supported",
                  name.c_str());
    }
    const Tensor in = ins[0];
    // Keras maps [batch, L] token indices to [batch, L, dim]; the IR takes one token per row.
    if (in.rank != 1 || value(in).cols != 1) {
      return fail(StatusCode::kUnsupported,
                  "Embedding layer '%s' needs one token per sample ([batch, 1]), got [%u, %u]",
                  name.c_str(), value(in).rows, value(in).cols);
    }
    ir::Matrix table;
    TUNECAST_RETURN_IF_ERROR(read_matrix(name, "weights", input_dim, output_dim, &table));
    const Tensor out = new_tensor(ir_name, value(in).rows, output_dim, 2);
    ir::Layer& added = push_layer(LayerType::Embedding, ir_name, {in}, {out});
    added.units = output_dim;
    added.kernel = std::move(table);
    outs->push_back(out);
    return Status::ok();
  }

  Status parse_lstm_config(const json& cfg, const std::string& name, LstmConfig* c) const {
    TUNECAST_RETURN_IF_ERROR(cfg_uint(cfg, "units", name, true, &c->units));
    TUNECAST_RETURN_IF_ERROR(parse_activation(cfg, "activation", name, &c->cell_activation));
    TUNECAST_RETURN_IF_ERROR(
        parse_activation(cfg, "recurrent_activation", name, &c->recurrent_activation));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "use_bias", name, &c->use_bias));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "return_sequences", name, &c->return_sequences));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "return_state", name, &c->return_state));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "go_backwards", name, &c->go_backwards));
    bool stateful = false, time_major = false;
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "stateful", name, &stateful));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "time_major", name, &time_major));
    if (stateful || time_major) {
      return fail(StatusCode::kUnsupported, "LSTM layer '%s' with %s is not supported",
                  name.c_str(), stateful ? "stateful" : "time_major");
    }
    if (c->units > (1u << 20)) {
      return fail(StatusCode::kInvalidArgument, "LSTM layer '%s' has %u units", name.c_str(),
                  c->units);
    }
    return Status::ok();
  }

  // One IR Lstm with outputs (sequence-or-last, h, c). Weights are read from
  // trainable_params[weights_layer][prefix + "weights" | "recurrent_weights" | "bias"].
  Status build_lstm(const std::string& weights_layer, const std::string& prefix,
                    const std::string& ir_name, const LstmConfig& c, bool reverse, const Tensor& x,
                    const Tensor* h0, const Tensor* c0, Tensor out[3]) {
    const ir::Value& xv = value(x);
    if (x.rank != 2) {
      return fail(StatusCode::kInvalidArgument,
                  "LSTM layer '%s' needs a sequence input [batch, time, features], got a vector",
                  weights_layer.c_str());
    }
    if (batched_ && xv.rows != 0) {
      return fail(StatusCode::kUnsupported,
                  "LSTM layer '%s' runs over %u time steps in a step graph; one step per beam "
                  "only", weights_layer.c_str(), xv.rows);
    }
    for (const Tensor* state : {h0, c0}) {
      if (state && (value(*state).cols != c.units || value(*state).rows != vector_rows())) {
        return fail(StatusCode::kInvalidArgument,
                    "LSTM layer '%s' initial state '%s' is [%u, %u], expected [%u, %u]",
                    weights_layer.c_str(), value(*state).name.c_str(), value(*state).rows,
                    value(*state).cols, vector_rows(), c.units);
      }
    }
    ir::Layer layer;
    TUNECAST_RETURN_IF_ERROR(
        read_matrix(weights_layer, prefix + "weights", xv.cols, 4 * c.units, &layer.kernel));
    TUNECAST_RETURN_IF_ERROR(read_matrix(weights_layer, prefix + "recurrent_weights", c.units,
                                         4 * c.units, &layer.recurrent));
    if (c.use_bias) {
      TUNECAST_RETURN_IF_ERROR(
          read_weights(weights_layer, prefix + "bias", 1, 4 * c.units, &layer.bias));
    }
    const uint32_t seq_rows = c.return_sequences ? xv.rows : vector_rows();
    out[0] = new_tensor(ir_name, seq_rows, c.units, c.return_sequences ? 2 : 1);
    out[1] = new_tensor(ir_name + "/h", vector_rows(), c.units, 1);
    out[2] = new_tensor(ir_name + "/c", vector_rows(), c.units, 1);
    std::vector<Tensor> ins = {x};
    if (h0) ins.push_back(*h0);
    if (c0) ins.push_back(*c0);
    ir::Layer& added = push_layer(LayerType::Lstm, ir_name, ins, {out[0], out[1], out[2]});
    added.units = c.units;
    added.kernel = std::move(layer.kernel);
    added.recurrent = std::move(layer.recurrent);
    added.bias = std::move(layer.bias);
    added.return_sequences = c.return_sequences;
    added.reverse = reverse;
    added.recurrent_activation = c.recurrent_activation;
    added.cell_activation = c.cell_activation;
    return Status::ok();
  }

  Status add_lstm(const std::string& name, const std::string& ir_name, const json& cfg,
                  const std::vector<Tensor>& ins, std::vector<Tensor>* outs) {
    TUNECAST_RETURN_IF_ERROR(expect_inputs("LSTM", name, ins, 1, 3));
    if (ins.size() == 2) {
      return fail(StatusCode::kInvalidArgument,
                  "LSTM layer '%s' takes (x) or (x, h0, c0), got 2 inputs", name.c_str());
    }
    LstmConfig c;
    TUNECAST_RETURN_IF_ERROR(parse_lstm_config(cfg, name, &c));
    // go_backwards returns its sequence in reversed order; the IR's reverse keeps input order,
    // so only the last output and the states agree.
    if (c.go_backwards && c.return_sequences) {
      return fail(StatusCode::kUnsupported,
                  "LSTM layer '%s' with go_backwards and return_sequences is not supported",
                  name.c_str());
    }
    Tensor out[3];
    TUNECAST_RETURN_IF_ERROR(build_lstm(name, "", ir_name, c, c.go_backwards, ins[0],
                                        ins.size() == 3 ? &ins[1] : nullptr,
                                        ins.size() == 3 ? &ins[2] : nullptr, out));
    outs->assign(out, out + (c.return_state ? 3 : 1));
    return Status::ok();
  }

  Status add_bidirectional(const std::string& name, const std::string& ir_name, const json& cfg,
                           const std::vector<Tensor>& ins, std::vector<Tensor>* outs) {
    const json* wrapped = find(cfg, "layer");
    std::string wrapped_class;
    if (!wrapped) {
      return fail(StatusCode::kNotFound, "Bidirectional layer '%s' has no wrapped 'layer'",
                  name.c_str());
    }
    TUNECAST_RETURN_IF_ERROR(get_string(*wrapped, "class_name", "Bidirectional layer '" + name +
                                        "' wrapped layer", &wrapped_class));
    if (wrapped_class != "LSTM") {
      return fail(StatusCode::kUnsupported,
                  "unsupported layer class 'Bidirectional(%s)' (layer '%s')",
                  wrapped_class.c_str(), name.c_str());
    }
    const json* wrapped_cfg = find(*wrapped, "config");
    if (!wrapped_cfg) {
      return fail(StatusCode::kNotFound, "Bidirectional layer '%s' wrapped layer has no config",
                  name.c_str());
    }
    std::string merge_mode = "concat";
    if (const json* m = find(cfg, "merge_mode")) {
      merge_mode = m->is_string() ? m->get<std::string>() : m->dump();
    }
    if (merge_mode != "concat" && merge_mode != "sum") {
      return fail(StatusCode::kUnsupported,
                  "Bidirectional layer '%s' merge_mode '%s' is not supported (concat, sum)",
                  name.c_str(), merge_mode.c_str());
    }
    if (ins.size() != 1 && ins.size() != 5) {
      return fail(StatusCode::kInvalidArgument,
                  "Bidirectional layer '%s' takes (x) or (x, fh, fc, bh, bc), got %zu inputs",
                  name.c_str(), ins.size());
    }
    LstmConfig c;
    TUNECAST_RETURN_IF_ERROR(parse_lstm_config(*wrapped_cfg, name, &c));
    if (c.go_backwards) {
      return fail(StatusCode::kUnsupported,
                  "Bidirectional layer '%s' wraps an LSTM with go_backwards", name.c_str());
    }
    const bool states = ins.size() == 5;
    Tensor fwd[3], bwd[3];
    TUNECAST_RETURN_IF_ERROR(build_lstm(name, "forward_", ir_name + "/forward", c, false, ins[0],
                                        states ? &ins[1] : nullptr, states ? &ins[2] : nullptr,
                                        fwd));
    TUNECAST_RETURN_IF_ERROR(build_lstm(name, "backward_", ir_name + "/backward", c, true, ins[0],
                                        states ? &ins[3] : nullptr, states ? &ins[4] : nullptr,
                                        bwd));
    const ir::Value& f = value(fwd[0]);
    const bool concat = merge_mode == "concat";
    const Tensor merged = new_tensor(ir_name, f.rows, concat ? 2 * f.cols : f.cols, fwd[0].rank);
    push_layer(concat ? LayerType::Concat : LayerType::Add, ir_name + "/merge", {fwd[0], bwd[0]},
               {merged});
    outs->push_back(merged);
    if (c.return_state) outs->insert(outs->end(), {fwd[1], fwd[2], bwd[1], bwd[2]});
    return Status::ok();
  }

  Status add_conv1d(const std::string& name, const std::string& ir_name, const json& cfg,
                    const std::vector<Tensor>& ins, std::vector<Tensor>* outs) {
    TUNECAST_RETURN_IF_ERROR(expect_inputs("Conv1D", name, ins, 1, 1));
    uint32_t filters = 0;
    bool use_bias = true;
    Activation activation = Activation::Linear;
    int64_t kernel_size = 0, strides = 1, dilation = 1, groups = 1;
    TUNECAST_RETURN_IF_ERROR(cfg_uint(cfg, "filters", name, true, &filters));
    TUNECAST_RETURN_IF_ERROR(cfg_bool(cfg, "use_bias", name, &use_bias));
    TUNECAST_RETURN_IF_ERROR(parse_activation(cfg, "activation", name, &activation));
    TUNECAST_RETURN_IF_ERROR(cfg_int_or_list(cfg, "kernel_size", name, 0, &kernel_size));
    TUNECAST_RETURN_IF_ERROR(cfg_int_or_list(cfg, "strides", name, 1, &strides));
    TUNECAST_RETURN_IF_ERROR(cfg_int_or_list(cfg, "dilation_rate", name, 1, &dilation));
    TUNECAST_RETURN_IF_ERROR(cfg_int_or_list(cfg, "groups", name, 1, &groups));
    const std::string padding = cfg.value("padding", "valid");
    const std::string data_format = cfg.value("data_format", "channels_last");
    if (kernel_size <= 0 || kernel_size > 4096) {
      return fail(StatusCode::kInvalidArgument, "Conv1D layer '%s' has kernel_size %lld",
                  name.c_str(), static_cast<long long>(kernel_size));
    }
    if (strides != 1 || dilation != 1 || groups != 1 || data_format != "channels_last" ||
        (padding != "valid" && padding != "same")) {
      return fail(StatusCode::kUnsupported,
                  "Conv1D layer '%s': only strides 1, dilation 1, groups 1, channels_last and "
                  "padding valid/same are supported", name.c_str());
    }
    const Tensor in = ins[0];
    const ir::Value& iv = value(in);
    if (in.rank != 2 || iv.rows == 0) {
      return fail(StatusCode::kUnsupported,
                  "Conv1D layer '%s' needs a fixed-length sequence input", name.c_str());
    }
    const uint32_t k = static_cast<uint32_t>(kernel_size);
    const bool same = padding == "same";
    if (!same && iv.rows < k) {
      return fail(StatusCode::kInvalidArgument, "Conv1D layer '%s': %u steps < kernel_size %u",
                  name.c_str(), iv.rows, k);
    }
    // frugally-deep stores Keras' [k, in, filters] kernel as [filters][k][in]; the IR wants
    // [k * in, filters] with row tap * in + channel.
    std::vector<float> stored;
    TUNECAST_RETURN_IF_ERROR(read_weights(name, "weights", filters, k * iv.cols, &stored));
    ir::Matrix kernel;
    kernel.rows = k * iv.cols;
    kernel.cols = filters;
    kernel.data.resize(stored.size());
    for (uint32_t o = 0; o < filters; ++o) {
      for (uint32_t r = 0; r < kernel.rows; ++r) {
        kernel.data[static_cast<size_t>(r) * filters + o] =
            stored[static_cast<size_t>(o) * kernel.rows + r];
      }
    }
    std::vector<float> bias;
    if (use_bias) TUNECAST_RETURN_IF_ERROR(read_weights(name, "bias", 1, filters, &bias));
    const Tensor out = new_tensor(ir_name, same ? iv.rows : iv.rows - k + 1, filters, 2);
    ir::Layer& added = push_layer(LayerType::Conv1D, ir_name, {in}, {out});
    added.units = filters;
    added.activation = activation;
    added.kernel = std::move(kernel);
    added.bias = std::move(bias);
    added.kernel_size = k;
    added.padding_same = same;
    outs->push_back(out);
    return Status::ok();
  }

  const std::string source_;
  const bool batched_;
  ir::Graph* graph_;
  const json* params_ = nullptr;
  std::map<std::string, const json*> by_name_;
  std::map<Key, Tensor> tensors_;
};

// ---- KTN / TunaNet helpers ---------------------------------------------------------------------

// Scalar metadata as text: strings as-is, numbers in JSON, one-element lists unwrapped.
bool scalar_text(const json* j, std::string* out) {
  if (!j) return false;
  if (j->is_array() && j->size() == 1) j = &(*j)[0];
  if (j->is_string()) {
    *out = j->get<std::string>();
    return true;
  }
  if (j->is_number() || j->is_boolean()) {
    *out = j->dump();
    return true;
  }
  return false;
}

bool parse_int64(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = v;
  return true;
}

// {"name": index, ...} -> names in index order joined by ','; false unless indices are 0..n-1.
bool names_by_index(const json* map, std::string* out) {
  if (!map || !map->is_object() || map->empty()) return false;
  std::vector<std::string> names(map->size());
  for (const auto& item : map->items()) {
    if (!item.value().is_number_integer()) return false;
    const int64_t i = item.value().get<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= names.size() || !names[i].empty()) return false;
    names[i] = item.key();
  }
  out->clear();
  for (const std::string& n : names) *out += (out->empty() ? "" : ",") + n;
  return true;
}

std::string format_float(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

Status ktn_vocabulary(const json& meta, const std::string& source, std::string_view direction,
                      ir::Model* model) {
  if (!meta.is_object()) {
    return error_in(StatusCode::kInvalidArgument, source, "metadata is not a JSON object");
  }
  int64_t predict_type = 0;
  if (auto it = meta.find("predict_type"); it != meta.end()) {
    if (!it->is_number_integer()) {
      return error_in(StatusCode::kInvalidArgument, source, "'predict_type' is not an integer");
    }
    predict_type = it->get<int64_t>();
  }
  model->metadata["predict_type"] = std::to_string(predict_type);
  auto counts = meta.find("num_tuning_params");
  if (counts == meta.end() || !counts->is_object() || counts->empty()) {
    return error_in(StatusCode::kNotFound, source,
                    "missing object 'num_tuning_params' ({\"fwd\": n, ...})");
  }
  model->metadata["num_tuning_params"] = counts->dump();
  std::string listing;
  for (const auto& item : counts->items()) {
    if (!item.value().is_number_integer() || item.value().get<int64_t>() <= 0 ||
        item.value().get<int64_t>() > 4096) {
      return error_in(StatusCode::kInvalidArgument, source,
                      "num_tuning_params '%s' is not a positive integer", item.key().c_str());
    }
    listing += (listing.empty() ? "" : ", ") + item.key() + " " + item.value().dump();
  }
  if (predict_type != 0) {
    return error_in(StatusCode::kUnsupported, source,
                    "predict_type %lld (the first token picks one of %zu parameter counts) is "
                    "not supported", static_cast<long long>(predict_type), counts->size());
  }
  int64_t count = 0;
  if (!direction.empty()) {
    auto it = counts->find(std::string(direction));
    if (it == counts->end()) {
      return error_in(StatusCode::kInvalidArgument, source, "num_tuning_params has no '%.*s' (has %s)",
                      static_cast<int>(direction.size()), direction.data(), listing.c_str());
    }
    count = it->get<int64_t>();
    model->metadata["direction"] = std::string(direction);
  } else {
    for (const auto& item : counts->items()) {
      if (count != 0 && item.value().get<int64_t>() != count) {
        return error_in(StatusCode::kUnsupported, source,
                        "parameter count differs by direction (%s); import one with --direction",
                        listing.c_str());
      }
      count = item.value().get<int64_t>();
    }
  }

  const json* tunings = nullptr;
  if (auto d = meta.find("decodings"); d != meta.end() && d->is_object()) {
    if (auto t = d->find("tunings"); t != d->end()) tunings = &*t;
  }
  if (!tunings || !tunings->is_object() || tunings->empty()) {
    return error_in(StatusCode::kNotFound, source,
                    "missing object 'decodings.tunings' (token index -> value)");
  }
  const size_t size = tunings->size();
  if (size > 65536) {
    return error_in(StatusCode::kUnsupported, source, "%zu tokens, at most 65536", size);
  }
  ir::Vocabulary vocab;
  vocab.token_values.assign(size, 0);
  std::vector<bool> seen(size, false);
  bool symbolic = false;
  for (const auto& item : tunings->items()) {
    int64_t index = 0;
    if (!parse_int64(item.key(), &index) || index < 0 || static_cast<size_t>(index) >= size ||
        seen[index]) {
      return error_in(StatusCode::kInvalidArgument, source,
                      "decodings.tunings key '%s' is not a distinct token index in [0, %zu)",
                      item.key().c_str(), size);
    }
    seen[index] = true;
    std::string text;
    int64_t v = 0;
    if (!scalar_text(&item.value(), &text)) {
      return error_in(StatusCode::kInvalidArgument, source, "token %lld has a non-scalar value",
                      static_cast<long long>(index));
    }
    vocab.token_labels.resize(size);
    vocab.token_labels[index] = text;
    if (!parse_int64(text, &v)) {  // "Default", "OddC", ...
      v = kSymbolicTokenBase - index;
      symbolic = true;
    }
    vocab.token_values[index] = v;
  }
  // Labels are kept only when some token is symbolic; numbers print as themselves.
  if (!symbolic) vocab.token_labels.clear();
  for (size_t t = 0; t < size; ++t) {
    if (vocab.token_values[t] == -1) vocab.end_tokens.push_back(static_cast<uint16_t>(t));
  }
  for (int64_t p = 0; p < count; ++p) vocab.parameters.push_back({"p" + std::to_string(p), {}, {}});
  vocab.end_policy = ir::EndPolicy::FixedLength;
  model->vocabulary = std::move(vocab);
  return Status::ok();
}

// Whether the graph output value comes out of a softmax already.
bool is_probability(const ir::Graph& graph, uint32_t value) {
  for (const ir::Layer& layer : graph.layers) {
    for (uint32_t out : layer.outputs) {
      if (out != value) continue;
      return layer.type == LayerType::Softmax ||
             (layer.type == LayerType::Dense && layer.activation == Activation::Softmax);
    }
  }
  return false;
}

Status import_ktn_impl(const std::string& prefix, std::string_view direction, ir::Model* out) {
  const std::string base = base_name(prefix);
  const size_t underscore = base.find('_');
  if (underscore == std::string::npos || underscore == 0 || underscore + 1 == base.size()) {
    return Status::error(StatusCode::kInvalidArgument,
                         "KTN prefix '%s' does not end in '<arch>_<solver>'", prefix.c_str());
  }
  const std::string files[3] = {prefix + "_encoder.ktn.model", prefix + "_decoder.ktn.model",
                                prefix + "_metadata.ktn.model"};
  json docs[3];
  for (int i = 0; i < 3; ++i) TUNECAST_RETURN_IF_ERROR(load_json_file(files[i], &docs[i]));

  ir::Model model;
  model.name = base;
  model.graphs.resize(2);
  TUNECAST_RETURN_IF_ERROR(import_graph(docs[0], files[0], false, &model.graphs[0]));
  TUNECAST_RETURN_IF_ERROR(import_graph(docs[1], files[1], true, &model.graphs[1]));
  ir::Graph& encoder = model.graphs[0];
  ir::Graph& decoder = model.graphs[1];
  encoder.name = "encoder";
  decoder.name = "decoder";
  if (encoder.inputs.size() != 1 || encoder.outputs.size() != 4) {
    return error_in(StatusCode::kInvalidArgument, files[0],
                    "a KTN encoder has 1 input and 4 outputs (h, c of two LSTMs), this has %zu "
                    "and %zu", encoder.inputs.size(), encoder.outputs.size());
  }
  if (decoder.inputs.size() != 5 || decoder.outputs.size() != 5) {
    return error_in(StatusCode::kInvalidArgument, files[1],
                    "a KTN decoder has 5 inputs (token, 4 states) and 5 outputs (logits, 4 "
                    "states), this has %zu and %zu", decoder.inputs.size(),
                    decoder.outputs.size());
  }
  ir::Seq2Seq s;
  s.encoder = 0;
  s.decoder = 1;
  s.token_input = 0;
  s.logits_output = 0;
  s.start_token = 0;
  for (uint32_t i = 0; i < 4; ++i) s.states.push_back({i + 1, i, i + 1});
  s.logits_are_probabilities = is_probability(decoder, decoder.outputs[0]);
  model.seq2seq = s;

  model.metadata["arch"] = base.substr(0, underscore);
  model.metadata["solver"] = base.substr(underscore + 1);
  model.metadata["source"] = base_name(files[0]) + "," + base_name(files[1]) + "," +
                             base_name(files[2]);
  std::string hash;
  if (scalar_text(docs[0].is_object() ? &docs[0]["hash"] : nullptr, &hash)) {
    model.metadata["encoder_hash"] = hash;
  }
  if (scalar_text(docs[1].is_object() ? &docs[1]["hash"] : nullptr, &hash)) {
    model.metadata["decoder_hash"] = hash;
  }
  TUNECAST_RETURN_IF_ERROR(ktn_vocabulary(docs[2], files[2], direction, &model));

  const Status checked = check_ir(model);
  if (!checked) {
    return Status::error(checked.code(), "%s (KTN %s)", checked.message(), base.c_str());
  }
  *out = std::move(model);
  return Status::ok();
}

}  // namespace

Status load_json_file(const std::string& path, json* out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Status::error(StatusCode::kNotFound, "no such file: %s", path.c_str());
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::error(StatusCode::kIoError, "cannot open %s", path.c_str());
  try {
    *out = json::parse(file);
    return Status::ok();
  } catch (const json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3, column 7: ...".
    return Status::error_with_tail(StatusCode::kInvalidArgument, (std::string("malformed JSON: ") + e.what()).c_str(),
                                   (" in " + path).c_str());
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kIoError, "cannot read %s: %s", path.c_str(), e.what());
  }
}

Status import_graph(const json& model_json, std::string_view source, bool batched,
                    ir::Graph* out) {
  try {
    ir::Graph graph;
    TUNECAST_RETURN_IF_ERROR(GraphImporter(source, batched, &graph).run(model_json));
    *out = std::move(graph);
    return Status::ok();
  } catch (const std::exception& e) {  // a JSON type error missed above, or bad_alloc
    return error_in(StatusCode::kInvalidArgument, source, "cannot import: %s", e.what());
  }
}

Status import_ktn(const std::string& prefix, ir::Model* out) {
  try {
    return import_ktn_impl(prefix, {}, out);
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInvalidArgument, "cannot import KTN %s: %s",
                         prefix.c_str(), e.what());
  }
}

Status import_ktn(const std::string& prefix, std::string_view direction, ir::Model* out) {
  if (direction.empty()) {
    return Status::error(StatusCode::kInvalidArgument, "empty direction for KTN %s",
                         prefix.c_str());
  }
  try {
    return import_ktn_impl(prefix, direction, out);
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInvalidArgument, "cannot import KTN %s: %s",
                         prefix.c_str(), e.what());
  }
}

Status import_tn(const std::string& path, ir::Model* out) {
  try {
    const std::string base = base_name(path);
    const std::string name = ends_with(base, ".tn.model")
                                 ? base.substr(0, base.size() - std::strlen(".tn.model"))
                                 : base;
    json doc;
    TUNECAST_RETURN_IF_ERROR(load_json_file(path, &doc));
    ir::Model model;
    model.name = name;
    model.graphs.resize(1);
    TUNECAST_RETURN_IF_ERROR(import_graph(doc, path, false, &model.graphs[0]));
    model.graphs[0].name = "tunanet";
    model.metadata["arch"] = name;
    model.metadata["source"] = base;
    std::string text;
    if (scalar_text(doc.is_object() ? &doc["hash"] : nullptr, &text)) model.metadata["hash"] = text;

    const std::string meta_path =
        path.substr(0, path.size() - (base.size() - name.size())) + "_metadata.tn.model";
    std::error_code ec;
    if (ends_with(base, ".tn.model") && std::filesystem::exists(meta_path, ec)) {
      json meta;
      TUNECAST_RETURN_IF_ERROR(load_json_file(meta_path, &meta));
      if (!meta.is_object()) {
        return error_in(StatusCode::kInvalidArgument, meta_path, "metadata is not an object");
      }
      model.metadata["source"] += "," + base_name(meta_path);
      const json* gpu = meta.contains("gpu") && meta["gpu"].is_object() ? &meta["gpu"] : nullptr;
      if (scalar_text(meta.contains("arch") ? &meta["arch"] : nullptr, &text) ||
          scalar_text(gpu && gpu->contains("arch") ? &(*gpu)["arch"] : nullptr, &text)) {
        model.metadata["arch"] = text;
      }
      if (scalar_text(meta.contains("num_cu") ? &meta["num_cu"] : nullptr, &text) ||
          scalar_text(gpu && gpu->contains("num_cu") ? &(*gpu)["num_cu"] : nullptr, &text)) {
        model.metadata["num_cu"] = text;
      }
      for (const char* key : {"num_inputs", "num_outputs", "num_solvers", "num_algos",
                              "model_name", "generated_on", "database", "kernels", "miopen_v",
                              "rocm_v"}) {
        if (meta.contains(key) && scalar_text(&meta[key], &text)) model.metadata[key] = text;
      }
      const ir::Graph& g = model.graphs[0];
      const json* num_inputs = meta.contains("num_inputs") ? &meta["num_inputs"] : nullptr;
      const json* num_outputs = meta.contains("num_outputs") ? &meta["num_outputs"] : nullptr;
      const json* num_solvers = meta.contains("num_solvers") ? &meta["num_solvers"] : nullptr;
      if (num_inputs && num_inputs->is_number_integer() &&
          num_inputs->get<int64_t>() != g.values[g.inputs[0]].cols) {
        return error_in(StatusCode::kInvalidArgument, meta_path,
                        "num_inputs %lld differs from the model's %u input cols",
                        static_cast<long long>(num_inputs->get<int64_t>()),
                        g.values[g.inputs[0]].cols);
      }
      if (num_outputs && num_outputs->is_number_integer() &&
          num_outputs->get<int64_t>() != g.values[g.outputs[0]].cols) {
        return error_in(StatusCode::kInvalidArgument, meta_path,
                        "num_outputs %lld differs from the model's %u output cols",
                        static_cast<long long>(num_outputs->get<int64_t>()),
                        g.values[g.outputs[0]].cols);
      }
      if (num_outputs && num_solvers && num_outputs->is_number_integer() &&
          num_solvers->is_number_integer() &&
          num_outputs->get<int64_t>() >= num_solvers->get<int64_t>()) {
        model.metadata["solver_offset"] =
            std::to_string(num_outputs->get<int64_t>() - num_solvers->get<int64_t>());
      }
      const json* encodings =
          meta.contains("encodings") && meta["encodings"].is_object() ? &meta["encodings"]
                                                                      : nullptr;
      if (encodings) {
        if (names_by_index(encodings->contains("solver") ? &(*encodings)["solver"] : nullptr,
                           &text)) {
          model.metadata["solvers"] = text;
        }
        if (names_by_index(encodings->contains("algorithm") ? &(*encodings)["algorithm"]
                                                            : nullptr, &text)) {
          model.metadata["algorithms"] = text;
        }
        json small = json::object();
        for (const char* key : {"Direction", "Precision", "Layout"}) {
          if (encodings->contains(key)) small[key] = (*encodings)[key];
        }
        if (!small.empty()) model.metadata["encodings"] = small.dump();
      }
      // Feature standardisation as MIOpen applies it: (x - mean) / std per feature.
      const json* features = meta.contains("conv_params_used_as_features")
                                 ? &meta["conv_params_used_as_features"]
                                 : nullptr;
      if (features && features->is_array()) {
        std::string names, means, stds;
        const json* stats = nullptr;
        for (const char* split : {"overall", "train"}) {
          const json* s = meta.contains("stats") ? &meta["stats"] : nullptr;
          if (!stats && s && s->is_object() && s->contains(split) &&
              (*s)[split].is_object() && (*s)[split].contains("features")) {
            stats = &(*s)[split]["features"];
          }
        }
        bool complete = stats && stats->is_object() && stats->contains("mean") &&
                        stats->contains("std");
        for (const json& f : *features) {
          if (!f.is_string()) continue;
          const std::string feature = f.get<std::string>();
          names += (names.empty() ? "" : ",") + feature;
          if (!complete) continue;
          const json& mean = (*stats)["mean"];
          const json& std_dev = (*stats)["std"];
          if (!mean.contains(feature) || !std_dev.contains(feature) ||
              !mean[feature].is_number() || !std_dev[feature].is_number()) {
            complete = false;
            continue;
          }
          means += (means.empty() ? "" : ",") + format_float(mean[feature].get<double>());
          stds += (stds.empty() ? "" : ",") + format_float(std_dev[feature].get<double>());
        }
        model.metadata["features"] = names;
        if (complete) {
          model.metadata["feature_mean"] = means;
          model.metadata["feature_std"] = stds;
        }
      }
    }
    TUNECAST_RETURN_IF_ERROR(check_ir(model));
    *out = std::move(model);
    return Status::ok();
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInvalidArgument, "cannot import TunaNet %s: %s",
                         path.c_str(), e.what());
  }
}

Status read_test_vectors(const std::string& path, std::vector<TestVector>* out) {
  try {
    json doc;
    TUNECAST_RETURN_IF_ERROR(load_json_file(path, &doc));
    const json* tests = doc.is_object() && doc.contains("tests") ? &doc["tests"] : nullptr;
    if (!tests) return error_in(StatusCode::kNotFound, path, "no test vectors ('tests')");
    if (!tests->is_array()) {
      return error_in(StatusCode::kInvalidArgument, path, "'tests' is not a list");
    }
    std::vector<TestVector> vectors(tests->size());
    for (size_t t = 0; t < tests->size(); ++t) {
      const json& test = (*tests)[t];
      for (int side = 0; side < 2; ++side) {
        const char* key = side == 0 ? "inputs" : "outputs";
        auto& values = side == 0 ? vectors[t].inputs : vectors[t].outputs;
        auto& shapes = side == 0 ? vectors[t].input_shapes : vectors[t].output_shapes;
        if (!test.is_object() || !test.contains(key) || !test[key].is_array()) {
          return error_in(StatusCode::kNotFound, path, "tests[%zu] has no list '%s'", t, key);
        }
        for (size_t i = 0; i < test[key].size(); ++i) {
          const json& tensor = test[key][i];
          const json* shape = tensor.is_object() && tensor.contains("shape") ? &tensor["shape"]
                                                                             : nullptr;
          const json* chunks = tensor.is_object() && tensor.contains("values")
                                   ? &tensor["values"]
                                   : nullptr;
          if (!shape || !shape->is_array() || !chunks || !chunks->is_array()) {
            return error_in(StatusCode::kInvalidArgument, path,
                            "tests[%zu].%s[%zu] needs 'shape' and 'values' lists", t, key, i);
          }
          std::vector<uint32_t> dims;
          uint64_t count = 1;
          for (const json& d : *shape) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (1 << 24)) {
              return error_in(StatusCode::kInvalidArgument, path, "tests[%zu].%s[%zu] has a bad "
                              "shape", t, key, i);
            }
            dims.push_back(static_cast<uint32_t>(d.get<int64_t>()));
            count *= dims.back();
          }
          std::vector<float> floats;
          std::vector<uint8_t> bytes;
          for (const json& chunk : *chunks) {
            size_t bad = 0;
            if (chunk.is_number()) {
              floats.push_back(chunk.get<float>());
            } else if (!chunk.is_string() ||
                       !decode_base64(chunk.get_ref<const std::string&>(), &bytes, &bad)) {
              return error_in(StatusCode::kInvalidArgument, path,
                              "tests[%zu].%s[%zu] values are not valid base64", t, key, i);
            }
          }
          if (bytes.size() % 4 != 0) {
            return error_in(StatusCode::kInvalidArgument, path,
                            "tests[%zu].%s[%zu] holds %zu bytes, not whole float32s", t, key, i,
                            bytes.size());
          }
          const size_t old = floats.size();
          floats.resize(old + bytes.size() / 4);
          if (!bytes.empty()) std::memcpy(floats.data() + old, bytes.data(), bytes.size());
          if (floats.size() != count) {
            return error_in(StatusCode::kInvalidArgument, path,
                            "tests[%zu].%s[%zu] holds %zu floats, its shape %llu", t, key, i,
                            floats.size(), static_cast<unsigned long long>(count));
          }
          values.push_back(std::move(floats));
          shapes.push_back(std::move(dims));
        }
      }
    }
    *out = std::move(vectors);
    return Status::ok();
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInvalidArgument, "cannot read test vectors of %s: %s",
                         path.c_str(), e.what());
  }
}

}  // namespace tunecast::keras
