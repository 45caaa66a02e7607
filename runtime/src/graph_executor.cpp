#include "graph_executor.h"

#include <cstring>

#include "tunecast/layers.h"

namespace tunecast::detail {
namespace {

using kernels::Act;
using schema::LayerType;

constexpr size_t kAlignFloats = 16;  // 64 bytes

size_t align_floats(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

size_t value_rows(const GraphInfo& info, uint32_t v, int batch) {
  return info.value_rows[v] ? info.value_rows[v] : static_cast<size_t>(batch);
}

// Floats value v occupies in the arena: its rows at the padded stride, 64-byte aligned.
size_t value_floats(const GraphInfo& info, uint32_t v, int batch) {
  return align_floats(value_rows(info, v, batch) * padded_cols(info.value_cols[v]));
}

Act to_act(schema::Activation a) { return static_cast<Act>(a); }

const float* bias_of(const schema::Layer* layer) {
  return (layer->bias() && layer->bias()->size() > 0) ? layer->bias()->data() : nullptr;
}

const char* name_of(const schema::Layer* layer) {
  return layer->name() ? layer->name()->c_str() : "";
}

const float* weights(const schema::Matrix* m) { return m->data()->data(); }

// Calls `f` with the matrix's weights as `const float*` or `const kernels::Half*` (the verifier
// admits exactly one of data / half_data).
template <typename F>
auto with_weights(const schema::Matrix* m, F&& f) {
  if (m->half_data() != nullptr) return f(m->half_data()->data());
  return f(m->data()->data());
}

// Kernel and recurrent weights are each float or Half (token tables always float). A sequence
// LSTM's input projection and recurrence dispatch separately (two instantiations each rather than
// four); a batched step interleaves them per block of rows and dispatches inside.
Status run_lstm(const schema::Layer* layer, bool batched, GraphArena* a) {
  const auto& ins = *layer->inputs();
  const uint32_t x = ins[0];
  const uint32_t seq = layer->outputs()->Get(0);
  const uint32_t h = layer->outputs()->Get(1);
  const uint32_t c = layer->outputs()->Get(2);
  const size_t units = layer->units();
  const size_t z_stride = padded_cols(4 * units);
  const bool initial = ins.size() == 3;
  const float* h0 = initial ? a->value[ins[1]] : nullptr;
  const float* c0 = initial ? a->value[ins[2]] : nullptr;
  const size_t h0_stride = initial ? a->stride[ins[1]] : 0;
  const size_t c0_stride = initial ? a->stride[ins[2]] : 0;
  const Act gate_act = to_act(layer->recurrent_activation());
  const Act cell_act = to_act(layer->cell_activation());
  if (batched) {
    auto any = [](const schema::Matrix* m) {
      return with_weights(m, [](const auto* w) { return layers::AnyWeights(w); });
    };
    return layers::lstm_batch(name_of(layer), layer->token_input(), a->value[x], a->stride[x],
                              a->rows[x], any(layer->kernel()), layer->kernel()->rows(), units,
                              bias_of(layer), any(layer->recurrent()), h0, h0_stride, c0,
                              c0_stride, gate_act, cell_act, a->temp, z_stride, a->value[h],
                              a->stride[h], a->value[c], a->stride[c]);
  }
  TUNECAST_RETURN_IF_ERROR(with_weights(layer->kernel(), [&](const auto* kernel) {
    return layers::lstm_input(name_of(layer), layer->token_input(), a->value[x], a->stride[x],
                              a->rows[x], kernel, layer->kernel()->rows(), units, bias_of(layer),
                              a->temp, z_stride);
  }));
  with_weights(layer->recurrent(), [&](const auto* recurrent) {
    layers::lstm_sequence(a->rows[x], units, recurrent, h0, c0, gate_act, cell_act,
                          layer->reverse(), layer->return_sequences(), a->temp, z_stride,
                          a->value[h], a->value[c], a->value[seq], a->stride[seq]);
  });
  return Status::ok();
}

}  // namespace

size_t graph_floats(const GraphInfo& info, int batch) {
  size_t total = 0;
  for (uint32_t v = 0; v < info.value_count; ++v) {
    if (info.storage[v] == v) total += value_floats(info, v, batch);
  }
  total += align_floats(info.temp_floats(batch));
  return total;
}

void bind_graph(const GraphInfo& info, int batch, float* base, GraphArena* arena) {
  arena->batch = batch;
  size_t offset = 0;
  for (uint32_t v = 0; v < info.value_count; ++v) {
    arena->rows[v] = value_rows(info, v, batch);
    arena->stride[v] = padded_cols(info.value_cols[v]);
    if (info.storage[v] != v) continue;
    arena->value[v] = base + offset;
    offset += value_floats(info, v, batch);
  }
  for (uint32_t v = 0; v < info.value_count; ++v) arena->value[v] = arena->value[info.storage[v]];
  arena->temp = base + offset;
}

void write_value(GraphArena* arena, uint32_t id, size_t cols, const float* src) {
  for (size_t r = 0; r < arena->rows[id]; ++r) {
    float* dst = arena->value[id] + r * arena->stride[id];
    std::memcpy(dst, src + r * cols, cols * sizeof(float));
    std::memset(dst + cols, 0, (arena->stride[id] - cols) * sizeof(float));
  }
}

void read_value(const GraphArena& arena, uint32_t id, size_t cols, float* dst) {
  for (size_t r = 0; r < arena.rows[id]; ++r) {
    std::memcpy(dst + r * cols, arena.value[id] + r * arena.stride[id], cols * sizeof(float));
  }
}

Status execute_graph(const GraphInfo& info, GraphArena* a) {
  for (const schema::Layer* layer : *info.graph->layers()) {
    const auto& ins = *layer->inputs();
    const uint32_t in = ins[0];
    const uint32_t out = layer->outputs()->Get(0);
    switch (layer->type()) {
      case LayerType::Dense:
        with_weights(layer->kernel(), [&](const auto* kernel) {
          layers::dense(a->value[in], a->stride[in], a->rows[in], layer->kernel()->rows(), kernel,
                        layer->units(), bias_of(layer), to_act(layer->activation()),
                        a->value[out], a->stride[out]);
        });
        break;
      case LayerType::Embedding:
        TUNECAST_RETURN_IF_ERROR(layers::embedding(
            name_of(layer), a->value[in], a->stride[in], a->rows[in], weights(layer->kernel()),
            layer->kernel()->rows(), layer->kernel()->cols(), a->value[out], a->stride[out]));
        break;
      case LayerType::Lstm:
        TUNECAST_RETURN_IF_ERROR(run_lstm(layer, info.batched, a));
        break;
      case LayerType::Relu:
      case LayerType::Tanh:
      case LayerType::Sigmoid:
      case LayerType::Softmax: {
        const Act act = layer->type() == LayerType::Relu      ? Act::kRelu
                        : layer->type() == LayerType::Tanh    ? Act::kTanh
                        : layer->type() == LayerType::Sigmoid ? Act::kSigmoid
                                                              : Act::kSoftmax;
        layers::activation(act, a->value[in], a->rows[out], info.value_cols[out], a->stride[out],
                           a->value[out]);
        break;
      }
      case LayerType::Add: {
        const float* xs[kMaxGraphIo] = {};
        for (uint32_t i = 0; i < ins.size(); ++i) xs[i] = a->value[ins[i]];
        layers::add(xs, ins.size(), a->rows[out] * a->stride[out], a->value[out]);
        break;
      }
      case LayerType::Concat: {
        const float* xs[kMaxGraphIo] = {};
        size_t cols[kMaxGraphIo];
        size_t strides[kMaxGraphIo];
        for (uint32_t i = 0; i < ins.size(); ++i) {
          xs[i] = a->value[ins[i]];
          cols[i] = info.value_cols[ins[i]];
          strides[i] = a->stride[ins[i]];
        }
        layers::concat(xs, cols, strides, ins.size(), a->rows[out], a->value[out], a->stride[out]);
        break;
      }
      case LayerType::Conv1D:
        with_weights(layer->kernel(), [&](const auto* kernel) {
          layers::conv1d(a->value[in], a->stride[in], a->rows[in], info.value_cols[in],
                         layer->kernel_size(), layer->padding_same(), kernel, layer->units(),
                         bias_of(layer), to_act(layer->activation()), a->temp, a->value[out],
                         a->rows[out], a->stride[out]);
        });
        break;
      case LayerType::Attention: {
        const uint32_t memory = ins[1];
        layers::attention(a->value[in], a->stride[in], a->rows[in], info.value_cols[in],
                          a->value[memory], a->stride[memory], a->rows[memory], a->temp,
                          padded_cols(a->rows[memory]), a->value[out], a->stride[out]);
        break;
      }
      default:
        return Status::error(StatusCode::kUnsupported, "unsupported layer type");
    }
  }
  return Status::ok();
}

}  // namespace tunecast::detail
