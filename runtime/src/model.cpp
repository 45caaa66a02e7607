// Loading = verification. Everything the prediction path relies on (shapes, indices, weight
// sizes, bytecode) is checked here once, so the hot loops never re-check (tflite-micro's
// Prepare/Eval split, but we also treat the blob as untrusted).
#include "tunecast/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "constraint_vm.h"
#include "tunecast/kernel_types.h"
#include "tunecast/layers.h"

namespace tunecast {
namespace {

using schema::LayerType;

constexpr uint32_t kMaxDim = 1u << 16;

size_t round_up_panel(size_t n) {
  return (n + kernels::kPanelWidth - 1) / kernels::kPanelWidth * kernels::kPanelWidth;
}

const char* layer_name(const schema::Layer* layer) {
  return layer->name() ? layer->name()->c_str() : "(unnamed)";
}

const char* type_name(LayerType type) {
  const char* name = schema::EnumNameLayerType(type);
  return (name && *name) ? name : "unknown";
}

bool valid_activation(schema::Activation act) {
  return static_cast<int>(act) <= static_cast<int>(schema::Activation::HardSigmoid);
}

// Checks a weight matrix's declared shape and storage. `packed` matrices feed matmul.
Status check_matrix(const schema::Matrix* m, const char* what, const schema::Layer* layer,
                    uint32_t rows, uint32_t cols, bool packed) {
  if (m == nullptr || (m->data() == nullptr && m->half_data() == nullptr)) {
    return Status::error(StatusCode::kCorruptModel, "layer '%s': missing %s weights",
                         layer_name(layer), what);
  }
  // fp16 storage (compile --weights fp16) is for product weights only; tables stay float.
  if (m->data() != nullptr && m->half_data() != nullptr) {
    return Status::error(StatusCode::kCorruptModel,
                         "layer '%s': %s weights stored both as fp32 and as fp16",
                         layer_name(layer), what);
  }
  if (m->half_data() != nullptr && !packed) {
    return Status::error(StatusCode::kUnsupported,
                         "layer '%s': %s weights stored as fp16, supported only for packed "
                         "product weights", layer_name(layer), what);
  }
  if (m->rows() != rows || m->cols() != cols) {
    return Status::error(StatusCode::kCorruptModel,
                         "layer '%s': %s weights are [%u, %u], expected [%u, %u]",
                         layer_name(layer), what, m->rows(), m->cols(), rows, cols);
  }
  const uint32_t want_panel = packed ? kernels::kPanelWidth : 0;
  if (m->panel_width() != want_panel) {
    return Status::error(StatusCode::kUnsupported,
                         "layer '%s': %s weights packed with panel width %u, this runtime reads %u",
                         layer_name(layer), what, m->panel_width(), want_panel);
  }
  const size_t want = packed ? kernels::packed_size(rows, cols) : size_t{rows} * cols;
  const bool half = m->half_data() != nullptr;
  const uint32_t have = half ? m->half_data()->size() : m->data()->size();
  if (have != want) {
    return Status::error(StatusCode::kCorruptModel,
                         "layer '%s': %s weights hold %u %s, shape needs %zu",
                         layer_name(layer), what, have, half ? "fp16 values" : "floats", want);
  }
  return Status::ok();
}

Status check_bias(const schema::Layer* layer, uint32_t n, bool required) {
  const auto* bias = layer->bias();
  if (bias == nullptr || bias->size() == 0) {
    if (required) {
      return Status::error(StatusCode::kCorruptModel, "layer '%s': missing bias",
                           layer_name(layer));
    }
    return Status::ok();
  }
  if (bias->size() != round_up_panel(n)) {
    return Status::error(StatusCode::kCorruptModel,
                         "layer '%s': bias holds %u floats, expected %zu (%u padded to %d)",
                         layer_name(layer), bias->size(), round_up_panel(n), n,
                         kernels::kPanelWidth);
  }
  return Status::ok();
}

struct Shape {
  uint32_t rows;
  uint32_t cols;
};

// Verifies one graph and records its shapes, temporary space and arithmetic.
Status check_graph(const schema::Graph* g, int index, GraphInfo* info) {
  const char* gname = g->name() ? g->name()->c_str() : "";
  if (g->values() == nullptr || g->values()->size() == 0 || g->layers() == nullptr ||
      g->inputs() == nullptr || g->outputs() == nullptr) {
    return Status::error(StatusCode::kCorruptModel,
                         "graph %d '%s': missing values, layers, inputs or outputs", index, gname);
  }
  const uint32_t value_count = g->values()->size();
  if (value_count > static_cast<uint32_t>(kMaxValues) ||
      g->layers()->size() > static_cast<uint32_t>(kMaxLayers) ||
      g->inputs()->size() > static_cast<uint32_t>(kMaxGraphIo) ||
      g->outputs()->size() > static_cast<uint32_t>(kMaxGraphIo)) {
    return Status::error(StatusCode::kUnsupported,
                         "graph '%s': %u values, %u layers, %u inputs, %u outputs exceed this "
                         "runtime's limits (%d, %d, %d, %d)",
                         gname, value_count, g->layers()->size(), g->inputs()->size(),
                         g->outputs()->size(), kMaxValues, kMaxLayers, kMaxGraphIo, kMaxGraphIo);
  }
  info->graph = g;
  info->batched = g->batched();
  info->value_count = value_count;
  for (uint32_t v = 0; v < value_count; ++v) {
    const auto* value = g->values()->Get(v);
    if (value == nullptr || value->cols() == 0 || value->cols() > kMaxDim ||
        value->rows() > kMaxDim || (!g->batched() && value->rows() == 0)) {
      return Status::error(StatusCode::kCorruptModel,
                           "graph '%s': value %u has an invalid shape", gname, v);
    }
    info->value_rows[v] = value->rows();
    info->value_cols[v] = value->cols();
    info->storage[v] = v;
  }

  bool defined[kMaxValues] = {};
  for (uint32_t id : *g->inputs()) {
    if (id >= value_count) {
      return Status::error(StatusCode::kCorruptModel, "graph '%s': input value %u out of range",
                           gname, id);
    }
    defined[id] = true;
  }

  const bool batched = g->batched();
  for (uint32_t li = 0; li < g->layers()->size(); ++li) {
    const schema::Layer* layer = g->layers()->Get(li);
    if (layer == nullptr || layer->inputs() == nullptr || layer->outputs() == nullptr) {
      return Status::error(StatusCode::kCorruptModel, "graph '%s': layer %u is incomplete",
                           gname, li);
    }
    const auto& ins = *layer->inputs();
    const auto& outs = *layer->outputs();
    for (uint32_t id : ins) {
      if (id >= value_count || !defined[id]) {
        return Status::error(StatusCode::kCorruptModel,
                             "layer '%s' reads value %u before it is computed (or out of range)",
                             layer_name(layer), id);
      }
    }
    for (uint32_t id : outs) {
      if (id >= value_count || defined[id]) {
        return Status::error(StatusCode::kCorruptModel,
                             "layer '%s' writes value %u twice (or out of range)",
                             layer_name(layer), id);
      }
      defined[id] = true;
    }
    auto shape_of = [&](uint32_t id) { return Shape{info->value_rows[id], info->value_cols[id]}; };
    auto want_counts = [&](uint32_t min_in, uint32_t max_in, uint32_t n_out) -> Status {
      if (ins.size() < min_in || ins.size() > max_in || outs.size() != n_out) {
        return Status::error(StatusCode::kCorruptModel,
                             "layer '%s' (%s) has %u inputs and %u outputs", layer_name(layer),
                             type_name(layer->type()), ins.size(), outs.size());
      }
      return Status::ok();
    };
    auto want_shape = [&](uint32_t id, Shape s) -> Status {
      const Shape have = shape_of(id);
      if (have.rows != s.rows || have.cols != s.cols) {
        return Status::error(StatusCode::kCorruptModel,
                             "layer '%s' (%s): value %u is [%u, %u], the layer gives [%u, %u]",
                             layer_name(layer), type_name(layer->type()), id, have.rows,
                             have.cols, s.rows, s.cols);
      }
      return Status::ok();
    };
    // Per-beam values in step graphs; only attention memories may be shared there.
    auto want_per_beam = [&](uint32_t id) -> Status {
      if (batched && info->value_rows[id] != 0) {
        return Status::error(StatusCode::kCorruptModel,
                             "layer '%s': value %u must have one row per beam in a step graph",
                             layer_name(layer), id);
      }
      return Status::ok();
    };

    const LayerType type = layer->type();
    switch (type) {
      case LayerType::Dense: {
        TUNECAST_RETURN_IF_ERROR(want_counts(1, 1, 1));
        TUNECAST_RETURN_IF_ERROR(want_per_beam(ins[0]));
        const Shape in = shape_of(ins[0]);
        const uint32_t units = layer->units();
        if (units == 0 || units > kMaxDim || !valid_activation(layer->activation())) {
          return Status::error(StatusCode::kCorruptModel, "layer '%s': bad units or activation",
                               layer_name(layer));
        }
        TUNECAST_RETURN_IF_ERROR(check_matrix(layer->kernel(), "kernel", layer, in.cols, units, true));
        TUNECAST_RETURN_IF_ERROR(check_bias(layer, units, false));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], {in.rows, units}));
        (in.rows ? info->multiply_adds_fixed : info->multiply_adds_per_row) +=
            uint64_t{in.rows ? in.rows : 1} * in.cols * units;
        break;
      }
      case LayerType::Embedding: {
        TUNECAST_RETURN_IF_ERROR(want_counts(1, 1, 1));
        TUNECAST_RETURN_IF_ERROR(want_per_beam(ins[0]));
        const Shape in = shape_of(ins[0]);
        const auto* table = layer->kernel();
        if (in.cols != 1 || table == nullptr || table->rows() == 0) {
          return Status::error(StatusCode::kCorruptModel,
                               "layer '%s': embedding needs a [rows, 1] index input and a table",
                               layer_name(layer));
        }
        TUNECAST_RETURN_IF_ERROR(
            check_matrix(table, "embedding", layer, table->rows(), table->cols(), false));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], {in.rows, table->cols()}));
        break;
      }
      case LayerType::Lstm: {
        if (!((ins.size() == 1 || ins.size() == 3) && outs.size() == 3)) {
          return Status::error(StatusCode::kCorruptModel,
                               "layer '%s' (Lstm) needs inputs (x[, h0, c0]) and outputs "
                               "(sequence, h, c); it has %u and %u",
                               layer_name(layer), ins.size(), outs.size());
        }
        const uint32_t u = layer->units();
        if (u == 0 || u > kMaxDim / 4 || !valid_activation(layer->recurrent_activation()) ||
            !valid_activation(layer->cell_activation())) {
          return Status::error(StatusCode::kCorruptModel, "layer '%s': bad units or activations",
                               layer_name(layer));
        }
        const Shape x = shape_of(ins[0]);
        TUNECAST_RETURN_IF_ERROR(want_per_beam(ins[0]));
        if (layer->token_input()) {
          const auto* table = layer->kernel();
          if (x.cols != 1 || table == nullptr) {
            return Status::error(StatusCode::kCorruptModel,
                                 "layer '%s': token-input LSTM needs a [rows, 1] index input",
                                 layer_name(layer));
          }
          TUNECAST_RETURN_IF_ERROR(
              check_matrix(table, "token table", layer, table->rows(), 4 * u, false));
        } else {
          TUNECAST_RETURN_IF_ERROR(check_matrix(layer->kernel(), "kernel", layer, x.cols, 4 * u, true));
        }
        TUNECAST_RETURN_IF_ERROR(check_matrix(layer->recurrent(), "recurrent", layer, u, 4 * u, true));
        TUNECAST_RETURN_IF_ERROR(check_bias(layer, 4 * u, false));
        const uint32_t state_rows = batched ? 0 : 1;
        if (ins.size() == 3) {
          TUNECAST_RETURN_IF_ERROR(want_shape(ins[1], {state_rows, u}));
          TUNECAST_RETURN_IF_ERROR(want_shape(ins[2], {state_rows, u}));
        }
        const uint32_t seq_rows = batched ? 0 : (layer->return_sequences() ? x.rows : 1);
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], {seq_rows, u}));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[1], {state_rows, u}));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[2], {state_rows, u}));
        const uint64_t per_step =
            uint64_t{layer->token_input() ? 0u : x.cols} * 4 * u + uint64_t{u} * 4 * u;
        const size_t gates = round_up_panel(4 * u);
        if (batched) {
          info->multiply_adds_per_row += per_step;
          info->temp_floats_per_step_row = std::max(info->temp_floats_per_step_row, gates);
          info->storage[outs[0]] = outs[1];
        } else {
          info->multiply_adds_fixed += per_step * x.rows;
          info->temp_floats_fixed = std::max(info->temp_floats_fixed, gates * x.rows);
        }
        break;
      }
      case LayerType::Relu:
      case LayerType::Tanh:
      case LayerType::Sigmoid:
      case LayerType::Softmax: {
        TUNECAST_RETURN_IF_ERROR(want_counts(1, 1, 1));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], shape_of(ins[0])));
        break;
      }
      case LayerType::Add: {
        TUNECAST_RETURN_IF_ERROR(want_counts(2, kMaxGraphIo, 1));
        for (uint32_t id : ins) TUNECAST_RETURN_IF_ERROR(want_shape(id, shape_of(ins[0])));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], shape_of(ins[0])));
        break;
      }
      case LayerType::Concat: {
        TUNECAST_RETURN_IF_ERROR(want_counts(2, kMaxGraphIo, 1));
        uint32_t cols = 0;
        for (uint32_t id : ins) {
          if (shape_of(id).rows != shape_of(ins[0]).rows) {
            return Status::error(StatusCode::kCorruptModel,
                                 "layer '%s': concatenated values differ in rows",
                                 layer_name(layer));
          }
          cols += shape_of(id).cols;
        }
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], {shape_of(ins[0]).rows, cols}));
        break;
      }
      case LayerType::Conv1D: {
        TUNECAST_RETURN_IF_ERROR(want_counts(1, 1, 1));
        if (batched) {
          return Status::error(StatusCode::kCorruptModel,
                               "layer '%s': Conv1D runs only in sequence graphs", layer_name(layer));
        }
        const Shape in = shape_of(ins[0]);
        const uint32_t k = layer->kernel_size();
        const uint32_t units = layer->units();
        if (k == 0 || k > 64 || units == 0 || units > kMaxDim ||
            (!layer->padding_same() && k > in.rows) || !valid_activation(layer->activation())) {
          return Status::error(StatusCode::kCorruptModel,
                               "layer '%s': bad kernel size, units or activation",
                               layer_name(layer));
        }
        TUNECAST_RETURN_IF_ERROR(check_matrix(layer->kernel(), "kernel", layer, k * in.cols, units, true));
        TUNECAST_RETURN_IF_ERROR(check_bias(layer, units, false));
        const uint32_t out_rows = layer->padding_same() ? in.rows : in.rows - k + 1;
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], {out_rows, units}));
        // im2col rows of k * in floats
        info->temp_floats_fixed =
            std::max(info->temp_floats_fixed, size_t{out_rows} * k * in.cols);
        info->multiply_adds_fixed += uint64_t{out_rows} * k * in.cols * units;
        break;
      }
      case LayerType::Attention: {
        TUNECAST_RETURN_IF_ERROR(want_counts(2, 2, 1));
        const Shape query = shape_of(ins[0]);
        const Shape memory = shape_of(ins[1]);
        if (memory.rows == 0 || memory.cols != query.cols) {
          return Status::error(StatusCode::kCorruptModel,
                               "layer '%s': attention memory must be a fixed [T, %u] matrix",
                               layer_name(layer), query.cols);
        }
        TUNECAST_RETURN_IF_ERROR(want_per_beam(ins[0]));
        TUNECAST_RETURN_IF_ERROR(want_shape(outs[0], query));
        const size_t scores = round_up_panel(memory.rows);
        if (query.rows == 0) {
          info->temp_floats_per_row = std::max(info->temp_floats_per_row, scores);
          info->multiply_adds_per_row += uint64_t{2} * memory.rows * memory.cols;
        } else {
          info->temp_floats_fixed = std::max(info->temp_floats_fixed, scores * query.rows);
          info->multiply_adds_fixed += uint64_t{2} * query.rows * memory.rows * memory.cols;
        }
        break;
      }
      default:
        return Status::error(StatusCode::kUnsupported,
                             "layer '%s' has type %d, unknown to this runtime (format %u)",
                             layer_name(layer), static_cast<int>(type), kFormatVersion);
    }
    for (uint32_t id : outs) {
      if (batched && info->value_rows[id] != 0) {
        return Status::error(StatusCode::kCorruptModel,
                             "layer '%s': output value %u must have one row per beam",
                             layer_name(layer), id);
      }
    }
  }
  for (uint32_t id : *g->outputs()) {
    if (id >= value_count || !defined[id]) {
      return Status::error(StatusCode::kCorruptModel,
                           "graph '%s': output value %u is never computed", gname, id);
    }
  }
  return Status::ok();
}

Status check_seq2seq(const schema::Model* root, const GraphInfo* graphs, int graph_count,
                     int token_count) {
  const schema::Seq2Seq* s = root->seq2seq();
  if (s->encoder() >= static_cast<uint32_t>(graph_count) ||
      s->decoder() >= static_cast<uint32_t>(graph_count) || s->encoder() == s->decoder()) {
    return Status::error(StatusCode::kCorruptModel, "seq2seq: encoder/decoder graph out of range");
  }
  const GraphInfo& enc = graphs[s->encoder()];
  const GraphInfo& dec = graphs[s->decoder()];
  if (enc.batched || !dec.batched) {
    return Status::error(StatusCode::kCorruptModel,
                         "seq2seq: the encoder must be a sequence graph and the decoder a step graph");
  }
  const auto& dec_inputs = *dec.graph->inputs();
  const auto& dec_outputs = *dec.graph->outputs();
  const auto& enc_outputs = *enc.graph->outputs();
  bool covered[kMaxGraphIo] = {};
  if (s->token_input() >= dec_inputs.size()) {
    return Status::error(StatusCode::kCorruptModel, "seq2seq: token input out of range");
  }
  const uint32_t token_value = dec_inputs[s->token_input()];
  if (dec.value_rows[token_value] != 0 || dec.value_cols[token_value] != 1) {
    return Status::error(StatusCode::kCorruptModel, "seq2seq: the token input must be [beams, 1]");
  }
  covered[s->token_input()] = true;
  if (s->logits_output() >= dec_outputs.size()) {
    return Status::error(StatusCode::kCorruptModel, "seq2seq: logits output out of range");
  }
  const uint32_t logits = dec_outputs[s->logits_output()];
  if (dec.value_cols[logits] != static_cast<uint32_t>(token_count)) {
    return Status::error(StatusCode::kCorruptModel,
                         "seq2seq: the decoder gives %u scores, the vocabulary has %d tokens",
                         dec.value_cols[logits], token_count);
  }
  if (s->start_token() < 0 || s->start_token() >= token_count) {
    return Status::error(StatusCode::kCorruptModel, "seq2seq: start token %d out of range",
                         s->start_token());
  }
  auto mark = [&](uint32_t input) -> Status {
    if (input >= dec_inputs.size() || covered[input]) {
      return Status::error(StatusCode::kCorruptModel,
                           "seq2seq: decoder input %u is linked twice or out of range", input);
    }
    covered[input] = true;
    return Status::ok();
  };
  if (s->states()) {
    for (const schema::StateLink* link : *s->states()) {
      TUNECAST_RETURN_IF_ERROR(mark(link->decoder_input()));
      if (link->encoder_output() >= enc_outputs.size() ||
          link->decoder_output() >= dec_outputs.size()) {
        return Status::error(StatusCode::kCorruptModel, "seq2seq: state link out of range");
      }
      const uint32_t in = dec_inputs[link->decoder_input()];
      const uint32_t enc_out = enc_outputs[link->encoder_output()];
      const uint32_t dec_out = dec_outputs[link->decoder_output()];
      if (dec.value_rows[in] != 0 || enc.value_rows[enc_out] != 1 ||
          dec.value_cols[in] != enc.value_cols[enc_out] ||
          dec.value_cols[in] != dec.value_cols[dec_out]) {
        return Status::error(StatusCode::kCorruptModel,
                             "seq2seq: state for decoder input %u has mismatched shapes",
                             link->decoder_input());
      }
    }
  }
  if (s->contexts()) {
    for (const schema::ContextLink* link : *s->contexts()) {
      TUNECAST_RETURN_IF_ERROR(mark(link->decoder_input()));
      if (link->encoder_output() >= enc_outputs.size()) {
        return Status::error(StatusCode::kCorruptModel, "seq2seq: context link out of range");
      }
      const uint32_t in = dec_inputs[link->decoder_input()];
      const uint32_t enc_out = enc_outputs[link->encoder_output()];
      if (dec.value_rows[in] == 0 || dec.value_rows[in] != enc.value_rows[enc_out] ||
          dec.value_cols[in] != enc.value_cols[enc_out]) {
        return Status::error(StatusCode::kCorruptModel,
                             "seq2seq: context for decoder input %u has mismatched shapes",
                             link->decoder_input());
      }
    }
  }
  for (uint32_t i = 0; i < dec_inputs.size(); ++i) {
    if (!covered[i]) {
      return Status::error(StatusCode::kCorruptModel,
                           "seq2seq: decoder input %u is fed by nothing", i);
    }
  }
  return Status::ok();
}

}  // namespace

size_t GraphInfo::temp_floats(int batch) const {
  const size_t rows = static_cast<size_t>(batch);
  return temp_floats_fixed + temp_floats_per_row * rows +
         temp_floats_per_step_row * std::min(rows, layers::kLstmStepRows);
}

Status Model::load(const void* data, size_t size, const LoadOptions& options, Model* out) {
  TUNECAST_RETURN_IF_ERROR(load(data, size, out));
  if (options.verify_checksum) {
    const Status status = out->verify_checksum();
    if (!status) {
      *out = Model();
      return status;
    }
  }
  return Status::ok();
}

Status Model::load(const void* data, size_t size, Model* out) {
  *out = Model();
  if (data == nullptr || size < 8) {
    return Status::error(StatusCode::kCorruptModel, "model blob is empty or truncated (%zu bytes)",
                         size);
  }
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    return Status::error(StatusCode::kInvalidArgument,
                         "model blob must be 8-byte aligned (32 recommended); copy it into "
                         "aligned memory");
  }
  if (!schema::ModelBufferHasIdentifier(data)) {
    const char* id = static_cast<const char*>(data) + 4;
    return Status::error(StatusCode::kCorruptModel,
                         "not a tunecast model: file identifier '%.4s', expected '%s'",
                         (std::isprint(id[0]) && std::isprint(id[1]) && std::isprint(id[2]) &&
                          std::isprint(id[3]))
                             ? id
                             : "????",
                         schema::ModelIdentifier());
  }
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(data), size, /*max_depth=*/32,
                                 /*max_tables=*/100000);
  if (!schema::VerifyModelBuffer(verifier)) {
    return Status::error(StatusCode::kCorruptModel,
                         "model blob failed FlatBuffers verification (truncated or corrupt, "
                         "%zu bytes)",
                         size);
  }
  const schema::Model* root = schema::GetModel(data);
  if (root->format_version() == 0 || root->format_version() > kFormatVersion) {
    return Status::error(StatusCode::kUnsupported,
                         "model format version %u; this runtime reads versions 1 to %u",
                         root->format_version(), kFormatVersion);
  }
  Model model;
  model.root_ = root;
  TUNECAST_RETURN_IF_ERROR(verify_problem_schema(root->problem()));
  const ProblemSchema problem_schema(root->problem());
  // A kernel definition alone has no graph: then nothing may need one.
  const bool definition_only = (root->graphs() == nullptr || root->graphs()->size() == 0) &&
                               root->seq2seq() == nullptr && root->encoding() == nullptr &&
                               root->vocabulary() != nullptr;
  if (!definition_only && (root->graphs() == nullptr || root->graphs()->size() == 0 ||
                           root->graphs()->size() > static_cast<uint32_t>(kMaxGraphs))) {
    return Status::error(StatusCode::kCorruptModel, "model has %u graphs (1 to %d allowed)",
                         root->graphs() ? root->graphs()->size() : 0, kMaxGraphs);
  }
  if (definition_only && root->format_version() < 3) {
    return Status::error(StatusCode::kCorruptModel, "model has no graph (a kernel definition alone needs format version 3)");
  }
  model.graph_count_ = root->graphs() ? static_cast<int>(root->graphs()->size()) : 0;
  for (int i = 0; i < model.graph_count_; ++i) {
    TUNECAST_RETURN_IF_ERROR(check_graph(root->graphs()->Get(i), i, &model.graphs_[i]));
  }

  // Vocabulary.
  const schema::Vocabulary* vocab = root->vocabulary();
  if (vocab != nullptr) {
    if (vocab->token_values() == nullptr || vocab->token_values()->size() == 0 ||
        vocab->token_values()->size() > static_cast<uint32_t>(kMaxTokens)) {
      return Status::error(StatusCode::kCorruptModel, "vocabulary has %u tokens (1 to %d allowed)",
                           vocab->token_values() ? vocab->token_values()->size() : 0, kMaxTokens);
    }
    // The FlatBuffers verifier checks a vector's 4-byte length prefix only, not 8-byte elements.
    if (reinterpret_cast<uintptr_t>(vocab->token_values()->data()) % alignof(int64_t) != 0) {
      return Status::error(StatusCode::kCorruptModel,
                           "vocabulary: token values are not 8-byte aligned in the blob");
    }
    model.token_count_ = static_cast<int>(vocab->token_values()->size());
    if (vocab->end_tokens()) {
      for (uint16_t t : *vocab->end_tokens()) {
        if (t >= model.token_count_) {
          return Status::error(StatusCode::kCorruptModel,
                               "vocabulary: end token %u out of range (%d tokens)", t,
                               model.token_count_);
        }
        model.end_mask_[t >> 6] |= uint64_t{1} << (t & 63);
      }
    }
    if (vocab->token_labels() != nullptr && vocab->token_labels()->size() != 0 &&
        vocab->token_labels()->size() != static_cast<uint32_t>(model.token_count_)) {
      return Status::error(StatusCode::kCorruptModel,
                           "vocabulary has %u token labels for %d tokens",
                           vocab->token_labels()->size(), model.token_count_);
    }
    if (vocab->parameters() == nullptr || vocab->parameters()->size() == 0 ||
        vocab->parameters()->size() > static_cast<uint32_t>(kMaxParameters)) {
      return Status::error(StatusCode::kCorruptModel,
                           "vocabulary has %u parameter positions (1 to %d allowed)",
                           vocab->parameters() ? vocab->parameters()->size() : 0, kMaxParameters);
    }
    model.parameter_count_ = static_cast<int>(vocab->parameters()->size());
    for (int p = 0; p < model.parameter_count_; ++p) {
      const schema::Parameter* param = vocab->parameters()->Get(p);
      if (const auto* domain = param->domain(); domain != nullptr && domain->size() > 0) {
        if (reinterpret_cast<uintptr_t>(domain->data()) % alignof(int64_t) != 0 ||
            domain->size() > static_cast<uint32_t>(kMaxTokens)) {
          return Status::error(StatusCode::kCorruptModel, "vocabulary: position %d's domain is misaligned or too long", p);
        }
        for (uint32_t i = 1; i < domain->size(); ++i) {
          if (!(domain->Get(i - 1) < domain->Get(i))) {
            return Status::error(StatusCode::kCorruptModel,
                                 "vocabulary: position %d's domain is not ascending and distinct", p);
          }
        }
      }
      if (param->tokens() == nullptr || param->tokens()->size() == 0) {
        // Every non-end token.
        for (int t = 0; t < model.token_count_; ++t) {
          if (!model.is_end_token(t)) model.allowed_mask_[p][t >> 6] |= uint64_t{1} << (t & 63);
        }
        continue;
      }
      for (uint16_t t : *param->tokens()) {
        if (t >= model.token_count_) {
          return Status::error(StatusCode::kCorruptModel,
                               "vocabulary: position %d allows token %u, beyond the %d tokens",
                               p, t, model.token_count_);
        }
        model.allowed_mask_[p][t >> 6] |= uint64_t{1} << (t & 63);
      }
    }
    // Decode order: the positions in the order the decoder emits them, each once; absent: in order.
    const auto* order = vocab->decode_order();
    const bool has_order = order != nullptr && order->size() != 0;
    uint32_t seen = 0;  // positions listed, each in range
    for (uint32_t i = 0; has_order && i < order->size(); ++i) {
      if (order->Get(i) < model.parameter_count_) seen |= 1u << order->Get(i);
    }
    if (has_order && (order->size() != static_cast<uint32_t>(model.parameter_count_) ||
                      seen != (1u << model.parameter_count_) - 1u)) {
      return Status::error(StatusCode::kCorruptModel,
                           "vocabulary: decode_order must list each of the %d parameter positions once",
                           model.parameter_count_);
    }
    for (int s = 0; s < model.parameter_count_; ++s) {
      model.decode_order_[s] = has_order ? order->Get(s) : static_cast<uint8_t>(s);
    }
    if (static_cast<int>(vocab->end_policy()) > static_cast<int>(schema::EndPolicy::MAX)) {
      return Status::error(StatusCode::kUnsupported, "vocabulary: unknown end policy %d",
                           static_cast<int>(vocab->end_policy()));
    }
  }
  if (root->seq2seq() != nullptr) {
    if (vocab == nullptr) {
      return Status::error(StatusCode::kCorruptModel, "seq2seq model without a vocabulary");
    }
    TUNECAST_RETURN_IF_ERROR(
        check_seq2seq(root, model.graphs_, model.graph_count_, model.token_count_));
  }

  // Constraints: verify bytecode, then order by decode step (counting sort, stable).
  if (root->constraints() != nullptr && root->constraints()->size() > 0) {
    const uint32_t count = root->constraints()->size();
    if (count > static_cast<uint32_t>(kMaxConstraints) || model.parameter_count_ == 0) {
      return Status::error(StatusCode::kUnsupported,
                           "model has %u constraints (at most %d, and a vocabulary is needed)",
                           count, kMaxConstraints);
    }
    int per_position[kMaxParameters] = {};
    for (uint32_t i = 0; i < count; ++i) {
      const schema::Constraint* c = root->constraints()->Get(i);
      if (c->position() >= static_cast<uint32_t>(model.parameter_count_)) {
        return Status::error(StatusCode::kCorruptModel,
                             "constraint %u is placed at position %u of %d", i, c->position(),
                             model.parameter_count_);
      }
      char what[96];
      std::snprintf(what, sizeof what, "constraint %u '%.48s'", i,
                    c->text() ? c->text()->c_str() : "");
      TUNECAST_RETURN_IF_ERROR(
          vm::verify_reading(vm::view_of(c->program()),
                             vm::readable_params_mask(static_cast<int>(c->position()), model.decode_order_),
                             what, problem_schema.field_count()));
      ++per_position[c->position()];
    }
    int start = 0;
    for (int p = 0; p < model.parameter_count_; ++p) {
      model.constraint_begin_[p] = start;
      start += per_position[p];
    }
    model.constraint_begin_[model.parameter_count_] = start;
    int fill[kMaxParameters];
    for (int p = 0; p < model.parameter_count_; ++p) fill[p] = model.constraint_begin_[p];
    for (uint32_t i = 0; i < count; ++i) {
      model.constraint_order_[fill[root->constraints()->Get(i)->position()]++] =
          static_cast<uint16_t>(i);
    }
  }

  // Applicability: problem-only programs (they read no parameter).
  if (root->applicability() != nullptr) {
    const uint32_t count = root->applicability()->size();
    if (count > static_cast<uint32_t>(kMaxConstraints)) {
      return Status::error(StatusCode::kUnsupported, "model has %u applicability conditions (at most %d)",
                           count, kMaxConstraints);
    }
    for (uint32_t i = 0; i < count; ++i) {
      const schema::Constraint* c = root->applicability()->Get(i);
      char what[96];
      std::snprintf(what, sizeof what, "applicability condition %u '%.48s'", i,
                    c->text() ? c->text()->c_str() : "");
      TUNECAST_RETURN_IF_ERROR(vm::verify(vm::view_of(c->program()), 0, what, problem_schema.field_count()));
    }
  }

  // Encoding.
  if (const schema::Encoding* enc = root->encoding()) {
    const int graph_index = root->seq2seq() ? static_cast<int>(root->seq2seq()->encoder()) : 0;
    const GraphInfo& g = model.graphs_[graph_index];
    const uint32_t input = g.graph->inputs()->size() > 0 ? g.graph->inputs()->Get(0) : 0;
    if (enc->rows() != g.value_rows[input] || enc->cols() != g.value_cols[input]) {
      return Status::error(StatusCode::kCorruptModel,
                           "encoding writes a [%u, %u] input, the model reads [%u, %u]",
                           enc->rows(), enc->cols(), g.value_rows[input], g.value_cols[input]);
    }
    if (enc->features()) {
      for (uint32_t i = 0; i < enc->features()->size(); ++i) {
        const schema::FeatureEncoding* f = enc->features()->Get(i);
        const uint32_t width = f->transform() == schema::FeatureTransform::OneHot ? f->width() : 1;
        if (f->row() >= enc->rows() || width == 0 || f->col() >= enc->cols() ||
            width > enc->cols() - f->col() ||
            static_cast<int>(f->transform()) > static_cast<int>(schema::FeatureTransform::MAX) ||
            !std::isfinite(f->mean()) || !std::isfinite(f->std()) || f->std() == 0.0f) {
          return Status::error(StatusCode::kCorruptModel,
                               "encoding feature %u is out of the input's bounds or malformed", i);
        }
        char what[96];
        std::snprintf(what, sizeof what, "encoding feature %u '%.48s'", i,
                      f->text() ? f->text()->c_str() : "");
        TUNECAST_RETURN_IF_ERROR(vm::verify(vm::view_of(f->program()), 0, what, problem_schema.field_count()));
      }
    }
    if (enc->required_fields()) {
      for (const auto* name : *enc->required_fields()) {
        int field = -1;
        if (!problem_schema.find_field(name->string_view(), &field)) {
          return Status::error(StatusCode::kUnsupported,
                               "encoding needs problem field '%.40s', unknown to this runtime",
                               name->c_str());
        }
        model.required_fields_ |= 1u << field;
      }
    }
    if (enc->ranges()) {
      for (const schema::FeatureRange* range : *enc->ranges()) {
        int f = -1;
        if (range->field() == nullptr || !problem_schema.find_field(range->field()->string_view(), &f) ||
            range->min() > range->max()) {
          return Status::error(StatusCode::kCorruptModel, "encoding has a malformed field range");
        }
        const bool first = !((model.ranged_fields_ >> f) & 1u);
        model.range_min_[f] = first ? range->min() : std::max(model.range_min_[f], range->min());
        model.range_max_[f] = first ? range->max() : std::min(model.range_max_[f], range->max());
        model.ranged_fields_ |= 1u << f;
      }
    }
  }
  // The architectures it covers: the schema's names, or an older blob's metadata "arch" (free
  // text there: what is no architecture name is left out).
  if (root->archs() != nullptr && root->archs()->size() > 0) {
    if (root->archs()->size() > static_cast<uint32_t>(kMaxArchs)) {
      return Status::error(StatusCode::kCorruptModel, "model lists %u architectures (at most %d)",
                           root->archs()->size(), kMaxArchs);
    }
    for (const flatbuffers::String* name : *root->archs()) {
      int64_t code = 0;
      if (name == nullptr || !arch_code(name->string_view(), &code)) {
        return Status::error(StatusCode::kCorruptModel,
                             "model lists architecture '%.40s', which is not an architecture name",
                             name ? name->c_str() : "");
      }
      model.arch_codes_[model.arch_count_++] = code;
    }
  } else if (const char* listed = model.metadata("arch")) {
    std::string_view rest(listed);
    while (!rest.empty() && model.arch_count_ < kMaxArchs) {
      const size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      int64_t code = 0;
      if (arch_code(item, &code)) model.arch_codes_[model.arch_count_++] = code;
    }
  }
  *out = model;
  return Status::ok();
}

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash) {
  const unsigned char* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace {

template <typename T>
uint64_t hash_vector(const flatbuffers::Vector<T>* v, uint64_t hash) {
  // FlatBuffers stores scalars little-endian: the bytes as they lie are the format's bytes.
  return v ? fnv1a64(v->Data(), v->size() * sizeof(T), hash) : hash;
}

uint64_t hash_matrix(const schema::Matrix* m, uint64_t hash) {
  if (m == nullptr) return hash;
  return hash_vector(m->half_data(), hash_vector(m->data(), hash));
}

}  // namespace

uint64_t weights_checksum(const schema::Model* model) {
  uint64_t hash = kFnv1a64Offset;
  if (model == nullptr || model->graphs() == nullptr) return hash;
  for (const schema::Graph* graph : *model->graphs()) {
    if (graph == nullptr || graph->layers() == nullptr) continue;
    for (const schema::Layer* layer : *graph->layers()) {
      if (layer == nullptr) continue;
      hash = hash_matrix(layer->kernel(), hash);
      hash = hash_matrix(layer->recurrent(), hash);
      hash = hash_vector(layer->bias(), hash);
    }
  }
  return hash;
}

uint64_t Model::recorded_weights_checksum() const { return root_ ? root_->weights_fnv1a64() : 0; }

uint64_t Model::compute_weights_checksum() const { return weights_checksum(root_); }

Status Model::verify_checksum() const {
  if (root_ == nullptr) return Status::error(StatusCode::kInvalidArgument, "no model loaded");
  const uint64_t recorded = recorded_weights_checksum();
  if (recorded == 0) {
    return Status::error(StatusCode::kNotFound,
                         "the model records no weights checksum (compiled before tunecast wrote "
                         "one; compile it again)");
  }
  const uint64_t computed = compute_weights_checksum();
  if (computed != recorded) {
    return Status::error(StatusCode::kCorruptModel,
                         "weights checksum mismatch: the model records fnv1a64:%016llx, its weights "
                         "hash to fnv1a64:%016llx (a weight changed after compilation)",
                         static_cast<unsigned long long>(recorded),
                         static_cast<unsigned long long>(computed));
  }
  return Status::ok();
}

bool Model::parameter_domain(int position, const int64_t** values, int* count) const {
  if (root_ == nullptr || root_->vocabulary() == nullptr || position < 0 || position >= parameter_count_) return false;
  const auto* domain = root_->vocabulary()->parameters()->Get(position)->domain();
  if (domain == nullptr || domain->size() == 0) return false;
  *values = domain->data();
  *count = static_cast<int>(domain->size());
  return true;
}

uint32_t Model::fields_out_of_range(const Problem& problem) const {
  uint32_t flags = 0;
  const ProblemSchema schema = problem_schema();
  for (int f = 0; f < kMaxProblemFields; ++f) {
    if (!((ranged_fields_ >> f) & 1u)) continue;
    const int64_t v = problem.get(f);
    // An architecture's code orders nothing (names beyond MIOpen's are packed characters): a range
    // of codes flags arbitrary GPUs, so the architectures the model covers decide.
    if (f < schema.field_count() && schema.field_kind(f) == FieldKind::kArchitecture && arch_count_ > 0) {
      if (!covers_arch(v)) flags |= 1u << f;
      continue;
    }
    if (v < range_min_[f] || v > range_max_[f]) flags |= 1u << f;
  }
  return flags;
}

const char* Model::token_label(int token) const {
  const auto* labels = root_->vocabulary()->token_labels();
  return (labels != nullptr && labels->size() > 0) ? labels->Get(token)->c_str() : nullptr;
}

const char* Model::parameter_name(int position) const {
  const auto* name = root_->vocabulary()->parameters()->Get(position)->name();
  return name ? name->c_str() : "";
}

const char* Model::metadata(const char* key) const {
  if (root_ == nullptr || root_->metadata() == nullptr) return nullptr;
  const schema::MetadataEntry* entry = root_->metadata()->LookupByKey(key);
  return (entry && entry->value()) ? entry->value()->c_str() : nullptr;
}

uint64_t Model::greedy_multiply_adds() const {
  if (!is_seq2seq()) {
    return graph_count_ == 0 ? 0 : graphs_[0].multiply_adds_fixed + graphs_[0].multiply_adds_per_row;
  }
  const GraphInfo& enc = graphs_[root_->seq2seq()->encoder()];
  const GraphInfo& dec = graphs_[root_->seq2seq()->decoder()];
  return enc.multiply_adds_fixed +
         uint64_t(parameter_count_) * (dec.multiply_adds_fixed + dec.multiply_adds_per_row);
}

}  // namespace tunecast
