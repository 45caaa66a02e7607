#include "tunecast/codegen/ir_check.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace tunecast {
namespace {

using ir::Activation;
using ir::LayerType;

const char* layer_type_name(LayerType type) {
  if (type < LayerType::MIN || type > LayerType::MAX) return "?";
  return schema::EnumNameLayerType(type);
}

// Formats "<where>: <what>" into one Status so every message names graph and layer.
class Checker {
 public:
  explicit Checker(const ir::Model& model) : model_(model) {}

  Status run() {
    // No graph: a kernel definition alone (codegen::definition_model: every parameter with its
    // domain, no seq2seq, no encoding; the runtime loads it as a format-3 blob without a
    // predictor), or a model missing its graphs.
    if (model_.graphs.empty()) {
      const std::vector<ir::Parameter>& params = model_.vocabulary.parameters;
      const bool definition = !model_.seq2seq && !model_.encoding && !params.empty() &&
                              std::all_of(params.begin(), params.end(),
                                          [](const ir::Parameter& p) { return !p.domain.empty(); });
      if (!definition) return fail("model '%s' has no graphs", model_.name.c_str());
      TUNECAST_RETURN_IF_ERROR(check_vocabulary());
      TUNECAST_RETURN_IF_ERROR(check_definition_domains());
      return check_constraints();
    }
    for (size_t g = 0; g < model_.graphs.size(); ++g) {
      TUNECAST_RETURN_IF_ERROR(check_graph(model_.graphs[g]));
    }
    where_.clear();
    TUNECAST_RETURN_IF_ERROR(check_vocabulary());
    if (model_.seq2seq) TUNECAST_RETURN_IF_ERROR(check_seq2seq(*model_.seq2seq));
    TUNECAST_RETURN_IF_ERROR(check_encoding());
    return check_constraints();
  }

 private:
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  Status fail(const char* format, ...) const {
    char what[Status::kMaxMessage];
    va_list args;
    va_start(args, format);
    std::vsnprintf(what, sizeof what, format, args);
    va_end(args);
    if (where_.empty()) return Status::error(StatusCode::kInvalidArgument, "%s", what);
    return Status::error(StatusCode::kInvalidArgument, "%s: %s", where_.c_str(), what);
  }

  // ---- graphs ----------------------------------------------------------------------------------

  Status check_graph(const ir::Graph& graph) {
    graph_ = &graph;
    where_ = "graph '" + graph.name + "'";
    if (graph.values.empty()) return fail("no values");
    for (size_t v = 0; v < graph.values.size(); ++v) {
      const ir::Value& value = graph.values[v];
      if (value.cols == 0) return fail("value %zu ('%s') has 0 cols", v, value.name.c_str());
      if (value.rows == 0 && !graph.batched) {
        return fail("value %zu ('%s') has 0 rows (one row per beam) in a sequence graph", v,
                    value.name.c_str());
      }
    }
    defined_.assign(graph.values.size(), false);
    if (graph.inputs.empty()) return fail("no inputs");
    for (uint32_t id : graph.inputs) {
      if (id >= graph.values.size()) return fail("input value id %u out of range (%zu values)", id,
                                                 graph.values.size());
      if (defined_[id]) return fail("value %u listed twice as an input", id);
      defined_[id] = true;
    }
    for (const ir::Layer& layer : graph.layers) {
      where_ = "graph '" + graph.name + "' layer '" + layer.name + "' (" +
               layer_type_name(layer.type) + ")";
      TUNECAST_RETURN_IF_ERROR(check_layer(layer));
    }
    where_ = "graph '" + graph.name + "'";
    if (graph.outputs.empty()) return fail("no outputs");
    for (uint32_t id : graph.outputs) {
      if (id >= graph.values.size()) return fail("output value id %u out of range (%zu values)",
                                                 id, graph.values.size());
      if (!defined_[id]) return fail("output value %u ('%s') is never computed", id,
                                     graph.values[id].name.c_str());
    }
    return Status::ok();
  }

  const ir::Value& value(uint32_t id) const { return graph_->values[id]; }
  // A state or vector value: one row per beam in a step graph, one row in a sequence graph.
  uint32_t vector_rows() const { return graph_->batched ? 0 : 1; }

  Status check_arity(const ir::Layer& layer, size_t min_in, size_t max_in, size_t min_out,
                     size_t max_out) const {
    if (layer.inputs.size() < min_in || layer.inputs.size() > max_in) {
      if (min_in == max_in) return fail("takes %zu inputs, has %zu", min_in, layer.inputs.size());
      return fail("takes %zu to %zu inputs, has %zu", min_in, max_in, layer.inputs.size());
    }
    if (layer.outputs.size() < min_out || layer.outputs.size() > max_out) {
      if (min_out == max_out) {
        return fail("produces %zu outputs, has %zu", min_out, layer.outputs.size());
      }
      return fail("produces %zu to %zu outputs, has %zu", min_out, max_out, layer.outputs.size());
    }
    return Status::ok();
  }

  Status check_matrix(const ir::Matrix& m, const char* field, uint32_t rows, uint32_t cols,
                      const char* expected) const {
    if (m.rows != rows || m.cols != cols) {
      return fail("%s is [%u, %u], expected [%u, %u] (%s)", field, m.rows, m.cols, rows, cols,
                  expected);
    }
    if (m.data.size() != static_cast<size_t>(rows) * cols) {
      return fail("%s is [%u, %u] but holds %zu floats", field, rows, cols, m.data.size());
    }
    return check_finite(m.data, field);
  }

  Status check_finite(const std::vector<float>& data, const char* field) const {
    for (size_t i = 0; i < data.size(); ++i) {
      if (!std::isfinite(data[i])) {
        return fail("%s contains %s at index %zu", field, std::isnan(data[i]) ? "NaN" : "Inf", i);
      }
    }
    return Status::ok();
  }

  Status check_bias(const ir::Layer& layer, uint32_t size) const {
    if (!layer.bias.empty() && layer.bias.size() != size) {
      return fail("bias has %zu floats, expected %u", layer.bias.size(), size);
    }
    return check_finite(layer.bias, "bias");
  }

  Status check_shape(uint32_t id, uint32_t rows, uint32_t cols, const char* role) const {
    const ir::Value& v = value(id);
    if (v.rows != rows || v.cols != cols) {
      return fail("%s value %u ('%s') is [%u, %u], expected [%u, %u]", role, id, v.name.c_str(),
                  v.rows, v.cols, rows, cols);
    }
    return Status::ok();
  }

  Status check_activation(Activation a, const char* field) const {
    if (a < Activation::MIN || a > Activation::MAX) {
      return fail("%s %d is not an activation", field, static_cast<int>(a));
    }
    return Status::ok();
  }

  Status no_weights(const ir::Layer& layer) const {
    if (!layer.kernel.empty() || !layer.recurrent.empty() || !layer.bias.empty()) {
      return fail("has weights but takes none");
    }
    return Status::ok();
  }

  Status check_layer(const ir::Layer& layer) {
    if (layer.type < LayerType::MIN || layer.type > LayerType::MAX) {
      return fail("unknown layer type %d", static_cast<int>(layer.type));
    }
    for (uint32_t id : layer.inputs) {
      if (id >= graph_->values.size()) return fail("input value id %u out of range", id);
      if (!defined_[id]) {
        return fail("reads value %u ('%s') before it is computed (layers must be in topological "
                    "order)", id, value(id).name.c_str());
      }
    }
    for (uint32_t id : layer.outputs) {
      if (id >= graph_->values.size()) return fail("output value id %u out of range", id);
      if (defined_[id]) {
        return fail("writes value %u ('%s') that is already a graph input or another layer's "
                    "output", id, value(id).name.c_str());
      }
    }
    TUNECAST_RETURN_IF_ERROR(check_activation(layer.activation, "activation"));
    TUNECAST_RETURN_IF_ERROR(check_activation(layer.recurrent_activation, "recurrent_activation"));
    TUNECAST_RETURN_IF_ERROR(check_activation(layer.cell_activation, "cell_activation"));
    TUNECAST_RETURN_IF_ERROR(check_layer_shapes(layer));
    for (uint32_t id : layer.outputs) defined_[id] = true;
    return Status::ok();
  }

  Status check_layer_shapes(const ir::Layer& layer) const {
    switch (layer.type) {
      case LayerType::Dense: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 1, 1, 1, 1));
        const ir::Value& in = value(layer.inputs[0]);
        if (layer.units == 0) return fail("units is 0");
        TUNECAST_RETURN_IF_ERROR(
            check_matrix(layer.kernel, "kernel", in.cols, layer.units, "input cols x units"));
        TUNECAST_RETURN_IF_ERROR(check_bias(layer, layer.units));
        return check_shape(layer.outputs[0], in.rows, layer.units, "output");
      }
      case LayerType::Embedding: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 1, 1, 1, 1));
        const ir::Value& in = value(layer.inputs[0]);
        if (in.cols != 1) return fail("input must have 1 col (a token index), has %u", in.cols);
        if (layer.kernel.rows == 0 || layer.kernel.cols == 0) return fail("empty kernel");
        if (layer.units != 0 && layer.units != layer.kernel.cols) {
          return fail("units %u differs from the kernel's %u cols", layer.units, layer.kernel.cols);
        }
        TUNECAST_RETURN_IF_ERROR(check_matrix(layer.kernel, "kernel", layer.kernel.rows,
                                              layer.kernel.cols, "vocab x dim"));
        if (!layer.bias.empty()) return fail("has a bias but takes none");
        return check_shape(layer.outputs[0], in.rows, layer.kernel.cols, "output");
      }
      case LayerType::Lstm: return check_lstm(layer);
      case LayerType::Relu:
      case LayerType::Softmax:
      case LayerType::Tanh:
      case LayerType::Sigmoid: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 1, 1, 1, 1));
        TUNECAST_RETURN_IF_ERROR(no_weights(layer));
        const ir::Value& in = value(layer.inputs[0]);
        return check_shape(layer.outputs[0], in.rows, in.cols, "output");
      }
      case LayerType::Add: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 2, SIZE_MAX, 1, 1));
        TUNECAST_RETURN_IF_ERROR(no_weights(layer));
        const ir::Value& first = value(layer.inputs[0]);
        for (uint32_t id : layer.inputs) {
          TUNECAST_RETURN_IF_ERROR(check_shape(id, first.rows, first.cols, "input"));
        }
        return check_shape(layer.outputs[0], first.rows, first.cols, "output");
      }
      case LayerType::Concat: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 2, SIZE_MAX, 1, 1));
        TUNECAST_RETURN_IF_ERROR(no_weights(layer));
        const uint32_t rows = value(layer.inputs[0]).rows;
        uint64_t cols = 0;
        for (uint32_t id : layer.inputs) {
          if (value(id).rows != rows) {
            return fail("input value %u ('%s') has %u rows, the first input %u", id,
                        value(id).name.c_str(), value(id).rows, rows);
          }
          cols += value(id).cols;
        }
        if (cols > UINT32_MAX) return fail("too many output cols");
        return check_shape(layer.outputs[0], rows, static_cast<uint32_t>(cols), "output");
      }
      case LayerType::Conv1D: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 1, 1, 1, 1));
        const ir::Value& in = value(layer.inputs[0]);
        if (in.rows == 0) return fail("convolves over time but its input has one row per beam");
        if (layer.units == 0) return fail("units is 0");
        if (layer.kernel_size == 0) return fail("kernel_size is 0");
        const uint64_t rows = static_cast<uint64_t>(layer.kernel_size) * in.cols;
        if (rows > UINT32_MAX) return fail("kernel too large");
        TUNECAST_RETURN_IF_ERROR(check_matrix(layer.kernel, "kernel", static_cast<uint32_t>(rows),
                                              layer.units, "kernel_size * input cols x units"));
        TUNECAST_RETURN_IF_ERROR(check_bias(layer, layer.units));
        if (!layer.padding_same && in.rows < layer.kernel_size) {
          return fail("input has %u rows, fewer than kernel_size %u (padding valid)", in.rows,
                      layer.kernel_size);
        }
        const uint32_t out_rows = layer.padding_same ? in.rows : in.rows - layer.kernel_size + 1;
        return check_shape(layer.outputs[0], out_rows, layer.units, "output");
      }
      case LayerType::Attention: {
        TUNECAST_RETURN_IF_ERROR(check_arity(layer, 2, 2, 1, 1));
        TUNECAST_RETURN_IF_ERROR(no_weights(layer));
        const ir::Value& query = value(layer.inputs[0]);
        const ir::Value& memory = value(layer.inputs[1]);
        if (memory.rows == 0) return fail("memory must have fixed rows (time steps), has 0");
        if (memory.cols != query.cols) {
          return fail("query has %u cols, memory %u", query.cols, memory.cols);
        }
        return check_shape(layer.outputs[0], query.rows, query.cols, "output");
      }
    }
    return fail("unknown layer type");
  }

  Status check_lstm(const ir::Layer& layer) const {
    TUNECAST_RETURN_IF_ERROR(check_arity(layer, 1, 3, 1, 3));
    const uint32_t u = layer.units;
    if (u == 0) return fail("units is 0");
    if (u > UINT32_MAX / 4) return fail("units %u too large", u);
    const ir::Value& x = value(layer.inputs[0]);
    if (graph_->batched && x.rows != 0) {
      return fail("input has %u rows in a step graph; an LSTM there runs one step per beam (rows "
                  "0)", x.rows);
    }
    if (layer.token_input) {
      if (x.cols != 1) return fail("token_input: input must have 1 col, has %u", x.cols);
      if (layer.kernel.rows == 0) return fail("token_input: empty kernel");
      TUNECAST_RETURN_IF_ERROR(
          check_matrix(layer.kernel, "kernel", layer.kernel.rows, 4 * u, "vocab x 4 units"));
    } else {
      TUNECAST_RETURN_IF_ERROR(
          check_matrix(layer.kernel, "kernel", x.cols, 4 * u, "input cols x 4 units"));
    }
    TUNECAST_RETURN_IF_ERROR(check_matrix(layer.recurrent, "recurrent", u, 4 * u,
                                          "units x 4 units"));
    TUNECAST_RETURN_IF_ERROR(check_bias(layer, 4 * u));
    static const char* const kStateRoles[] = {"", "initial h", "initial c"};
    for (size_t i = 1; i < layer.inputs.size(); ++i) {
      TUNECAST_RETURN_IF_ERROR(check_shape(layer.inputs[i], vector_rows(), u, kStateRoles[i]));
    }
    const uint32_t out_rows = layer.return_sequences ? x.rows : vector_rows();
    TUNECAST_RETURN_IF_ERROR(check_shape(layer.outputs[0], out_rows, u,
                                         layer.return_sequences ? "sequence output" : "output"));
    static const char* const kOutRoles[] = {"", "h", "c"};
    for (size_t i = 1; i < layer.outputs.size(); ++i) {
      TUNECAST_RETURN_IF_ERROR(check_shape(layer.outputs[i], vector_rows(), u, kOutRoles[i]));
    }
    return Status::ok();
  }

  // ---- seq2seq ---------------------------------------------------------------------------------

  Status check_seq2seq(const ir::Seq2Seq& s) {
    where_ = "seq2seq";
    const size_t n = model_.graphs.size();
    if (s.encoder >= n || s.decoder >= n) {
      return fail("encoder %u / decoder %u out of range (%zu graphs)", s.encoder, s.decoder, n);
    }
    if (s.encoder == s.decoder) return fail("encoder and decoder are the same graph %u", s.encoder);
    const ir::Graph& enc = model_.graphs[s.encoder];
    const ir::Graph& dec = model_.graphs[s.decoder];
    if (enc.batched) return fail("encoder '%s' must be a sequence graph", enc.name.c_str());
    if (!dec.batched) return fail("decoder '%s' must be a step graph (batched)", dec.name.c_str());

    std::vector<int> covered(dec.inputs.size(), 0);
    if (s.token_input >= dec.inputs.size()) {
      return fail("token_input %u out of range (decoder has %zu inputs)", s.token_input,
                  dec.inputs.size());
    }
    covered[s.token_input]++;
    const ir::Value& token = dec.values[dec.inputs[s.token_input]];
    if (token.rows != 0 || token.cols != 1) {
      return fail("token input '%s' is [%u, %u], expected [0, 1]", token.name.c_str(), token.rows,
                  token.cols);
    }
    if (s.logits_output >= dec.outputs.size()) {
      return fail("logits_output %u out of range (decoder has %zu outputs)", s.logits_output,
                  dec.outputs.size());
    }
    const ir::Value& logits = dec.values[dec.outputs[s.logits_output]];
    const size_t vocab = model_.vocabulary.token_values.size();
    if (logits.rows != 0) return fail("logits '%s' must have rows 0", logits.name.c_str());
    if (logits.cols != vocab) {
      return fail("logits '%s' have %u cols but the vocabulary has %zu tokens",
                  logits.name.c_str(), logits.cols, vocab);
    }
    if (s.start_token < 0 || static_cast<size_t>(s.start_token) >= vocab) {
      return fail("start_token %d out of range (%zu tokens)", s.start_token, vocab);
    }
    for (size_t i = 0; i < s.states.size(); ++i) {
      const ir::StateLink& link = s.states[i];
      if (link.decoder_input >= dec.inputs.size() || link.encoder_output >= enc.outputs.size() ||
          link.decoder_output >= dec.outputs.size()) {
        return fail("state %zu (decoder input %u, encoder output %u, decoder output %u) out of "
                    "range (%zu, %zu, %zu)", i, link.decoder_input, link.encoder_output,
                    link.decoder_output, dec.inputs.size(), enc.outputs.size(),
                    dec.outputs.size());
      }
      covered[link.decoder_input]++;
      const ir::Value& in = dec.values[dec.inputs[link.decoder_input]];
      const ir::Value& from_enc = enc.values[enc.outputs[link.encoder_output]];
      const ir::Value& from_dec = dec.values[dec.outputs[link.decoder_output]];
      if (in.rows != 0 || from_dec.rows != 0) {
        return fail("state %zu: decoder input '%s' and output '%s' must have rows 0 (per beam)", i,
                    in.name.c_str(), from_dec.name.c_str());
      }
      if (from_enc.rows != 1) {
        return fail("state %zu: encoder output '%s' has %u rows, expected 1", i,
                    from_enc.name.c_str(), from_enc.rows);
      }
      if (in.cols != from_enc.cols || in.cols != from_dec.cols) {
        return fail("state %zu: decoder input '%s' has %u cols, encoder output '%s' %u, decoder "
                    "output '%s' %u", i, in.name.c_str(), in.cols, from_enc.name.c_str(),
                    from_enc.cols, from_dec.name.c_str(), from_dec.cols);
      }
    }
    for (size_t i = 0; i < s.contexts.size(); ++i) {
      const ir::ContextLink& link = s.contexts[i];
      if (link.decoder_input >= dec.inputs.size() || link.encoder_output >= enc.outputs.size()) {
        return fail("context %zu (decoder input %u, encoder output %u) out of range", i,
                    link.decoder_input, link.encoder_output);
      }
      covered[link.decoder_input]++;
      const ir::Value& in = dec.values[dec.inputs[link.decoder_input]];
      const ir::Value& from_enc = enc.values[enc.outputs[link.encoder_output]];
      if (in.rows != from_enc.rows || in.cols != from_enc.cols || in.rows == 0) {
        return fail("context %zu: decoder input '%s' [%u, %u] differs from encoder output '%s' "
                    "[%u, %u]", i, in.name.c_str(), in.rows, in.cols, from_enc.name.c_str(),
                    from_enc.rows, from_enc.cols);
      }
    }
    for (size_t i = 0; i < covered.size(); ++i) {
      if (covered[i] != 1) {
        return fail("decoder input %zu is fed by %d links (token, states, contexts); expected "
                    "exactly 1", i, covered[i]);
      }
    }
    if (model_.vocabulary.parameters.empty()) return fail("vocabulary has no parameters");
    return Status::ok();
  }

  // ---- vocabulary, encoding, constraints -------------------------------------------------------

  Status check_vocabulary() {
    where_ = "vocabulary";
    const ir::Vocabulary& v = model_.vocabulary;
    const size_t size = v.token_values.size();
    if (size > 65536) return fail("%zu tokens, at most 65536", size);
    if (v.end_policy < ir::EndPolicy::MIN || v.end_policy > ir::EndPolicy::MAX) {
      return fail("unknown end_policy %d", static_cast<int>(v.end_policy));
    }
    std::set<uint16_t> ends;
    for (uint16_t t : v.end_tokens) {
      if (t >= size) return fail("end token %u out of range (%zu tokens)", t, size);
      ends.insert(t);
    }
    if (!v.parameters.empty() && ends.size() == size) return fail("every token is an end token");
    if (!v.token_labels.empty() && v.token_labels.size() != size) {
      return fail("%zu token labels for %zu tokens", v.token_labels.size(), size);
    }
    if (!v.decode_order.empty() && !ir::is_permutation(v.decode_order, v.parameters.size())) {
      return fail("decode_order must list each of the %zu parameter positions once", v.parameters.size());
    }
    std::set<std::string> names;
    for (size_t p = 0; p < v.parameters.size(); ++p) {
      const ir::Parameter& param = v.parameters[p];
      if (param.name.empty()) return fail("parameter %zu has no name", p);
      if (!names.insert(param.name).second) {
        return fail("parameter name '%s' used twice", param.name.c_str());
      }
      for (uint16_t t : param.tokens) {
        if (t >= size) {
          return fail("parameter '%s' allows token %u, out of range (%zu tokens)",
                      param.name.c_str(), t, size);
        }
        if (ends.count(t)) {
          return fail("parameter '%s' allows end token %u", param.name.c_str(), t);
        }
      }
    }
    return Status::ok();
  }

  // A model without a predictor searches its parameters' domains: each ascending and distinct,
  // each position allowing exactly its values' tokens.
  Status check_definition_domains() {
    where_ = "vocabulary";
    const ir::Vocabulary& v = model_.vocabulary;
    if (v.token_values.empty()) return fail("a model without a predictor (no graphs) has no tokens");
    for (const ir::Parameter& param : v.parameters) {  // each with a domain (run)
      if (param.tokens.size() != param.domain.size()) {
        return fail("parameter '%s' allows %zu tokens for the %zu values of its domain", param.name.c_str(),
                    param.tokens.size(), param.domain.size());
      }
      for (size_t i = 0; i < param.domain.size(); ++i) {
        if (i > 0 && !(param.domain[i - 1] < param.domain[i])) {
          return fail("parameter '%s': its domain is not ascending and distinct", param.name.c_str());
        }
        if (v.token_values[param.tokens[i]] != param.domain[i]) {  // tokens checked by check_vocabulary
          return fail("parameter '%s': token %u is %lld, its domain's value %zu is %lld", param.name.c_str(),
                      param.tokens[i], static_cast<long long>(v.token_values[param.tokens[i]]), i,
                      static_cast<long long>(param.domain[i]));
        }
      }
    }
    return Status::ok();
  }

  Status check_encoding() {
    if (!model_.encoding) return Status::ok();
    where_ = "encoding";
    const ir::Encoding& e = *model_.encoding;
    const ir::Graph& first = model_.graphs[model_.seq2seq ? model_.seq2seq->encoder : 0];
    const ir::Value& in = first.values[first.inputs[0]];
    const uint32_t in_rows = in.rows == 0 ? 1 : in.rows;
    if (e.rows != in_rows || e.cols != in.cols) {
      return fail("encodes [%u, %u] but graph '%s' input '%s' is [%u, %u]", e.rows, e.cols,
                  first.name.c_str(), in.name.c_str(), in.rows, in.cols);
    }
    for (size_t i = 0; i < e.features.size(); ++i) {
      const ir::FeatureEncoding& f = e.features[i];
      if (f.transform < ir::FeatureTransform::MIN || f.transform > ir::FeatureTransform::MAX) {
        return fail("feature %zu has unknown transform %d", i, static_cast<int>(f.transform));
      }
      const uint32_t width = f.transform == ir::FeatureTransform::OneHot ? f.width : 1;
      if (width == 0) return fail("feature %zu ('%s') has width 0", i, f.text.c_str());
      if (f.row >= e.rows || f.col >= e.cols || width > e.cols - f.col) {
        return fail("feature %zu ('%s') at [%u, %u] width %u lies outside [%u, %u]", i,
                    f.text.c_str(), f.row, f.col, width, e.rows, e.cols);
      }
      if (f.transform == ir::FeatureTransform::Standardize &&
          (!std::isfinite(f.mean) || !std::isfinite(f.std) || f.std == 0.0f)) {
        return fail("feature %zu ('%s') has mean %g std %g", i, f.text.c_str(), f.mean, f.std);
      }
    }
    return Status::ok();
  }

  Status check_constraints() {
    where_ = "constraints";
    const size_t positions = model_.vocabulary.parameters.size();
    for (size_t i = 0; i < model_.constraints.size(); ++i) {
      const ir::Constraint& c = model_.constraints[i];
      if (c.position >= positions) {
        return fail("constraint %zu ('%s') at position %u, but there are %zu parameters", i,
                    c.text.c_str(), c.position, positions);
      }
    }
    for (size_t i = 0; i < model_.applicability.size(); ++i) {
      if (model_.applicability[i].position != 0) {
        return fail("applicability condition %zu ('%s') at position %u: it reads the problem alone", i,
                    model_.applicability[i].text.c_str(), model_.applicability[i].position);
      }
    }
    return Status::ok();
  }

  const ir::Model& model_;
  const ir::Graph* graph_ = nullptr;
  std::vector<bool> defined_;
  std::string where_;
};

}  // namespace

Status check_ir(const ir::Model& model) {
  try {
    return Checker(model).run();
  } catch (const std::exception& e) {  // std::bad_alloc from the name strings
    return Status::error(StatusCode::kInvalidArgument, "check_ir: %s", e.what());
  }
}

}  // namespace tunecast
