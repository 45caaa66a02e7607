#include "graph_executor.h"

#include <cmath>
#include <cstring>

namespace tunecast::detail {
namespace {

using kernels::Act;
using schema::LayerType;

constexpr size_t kAlignFloats = 16;  // 64 bytes

size_t align_floats(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

Act to_act(schema::Activation a) { return static_cast<Act>(a); }

const float* bias_of(const schema::Layer* layer) {
  return (layer->bias() && layer->bias()->size() > 0) ? layer->bias()->data() : nullptr;
}

// Dense: y = act(x W + b). A mostly-zero input (MIOpen's diagonal KTN encoding) takes the
// row-skipping path, which gives the same bits because zero rows only add zeros.
void run_dense(const schema::Layer* layer, GraphArena* a) {
  const uint32_t in = layer->inputs()->Get(0);
  const uint32_t out = layer->outputs()->Get(0);
  const float* x = a->value[in];
  const size_t rows = a->rows[in];
  const size_t depth = layer->kernel()->rows();
  const size_t units = layer->units();
  size_t zeros = 0;
  if (rows * depth <= 4096) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < depth; ++k) zeros += x[r * a->stride[in] + k] == 0.0f;
    }
  }
  if (zeros * 4 >= rows * depth * 3) {
    kernels::matmul_sparse_rows(x, a->stride[in], rows, depth, layer->kernel()->data()->data(),
                                units, bias_of(layer), a->value[out], a->stride[out]);
  } else {
    kernels::matmul(x, a->stride[in], rows, depth, layer->kernel()->data()->data(), units,
                    bias_of(layer), a->value[out], a->stride[out], false);
  }
  kernels::activate_rows(to_act(layer->activation()), a->value[out], rows, units, a->stride[out]);
}

// Reads a float token index; false if it is not an integer in [0, limit).
bool token_index(float x, uint32_t limit, uint32_t* index) {
  if (!(x >= 0.0f) || !(x < static_cast<float>(limit))) return false;
  const uint32_t i = static_cast<uint32_t>(x);
  if (static_cast<float>(i) != x) return false;
  *index = i;
  return true;
}

Status run_embedding(const schema::Layer* layer, GraphArena* a) {
  const uint32_t in = layer->inputs()->Get(0);
  const uint32_t out = layer->outputs()->Get(0);
  const schema::Matrix* table = layer->kernel();
  const size_t dim = table->cols();
  for (size_t r = 0; r < a->rows[in]; ++r) {
    uint32_t index;
    if (!token_index(a->value[in][r * a->stride[in]], table->rows(), &index)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "embedding '%s': token index %g is not in [0, %u)",
                           layer->name() ? layer->name()->c_str() : "",
                           static_cast<double>(a->value[in][r * a->stride[in]]), table->rows());
    }
    std::memcpy(a->value[out] + r * a->stride[out], table->data()->data() + index * dim,
                dim * sizeof(float));
  }
  return Status::ok();
}

// Input projection of every row into z (stride `z_stride`): x W + b, or a token-table gather.
Status lstm_input_projection(const schema::Layer* layer, GraphArena* a, float* z,
                             size_t z_stride) {
  const uint32_t in = layer->inputs()->Get(0);
  const size_t rows = a->rows[in];
  const size_t gates = 4 * size_t{layer->units()};
  const float* bias = bias_of(layer);
  if (layer->token_input()) {
    const schema::Matrix* table = layer->kernel();
    for (size_t r = 0; r < rows; ++r) {
      uint32_t index;
      if (!token_index(a->value[in][r * a->stride[in]], table->rows(), &index)) {
        return Status::error(StatusCode::kInvalidArgument,
                             "lstm '%s': token index out of range",
                             layer->name() ? layer->name()->c_str() : "");
      }
      const float* row = table->data()->data() + index * gates;
      float* zr = z + r * z_stride;
      for (size_t j = 0; j < gates; ++j) zr[j] = row[j] + (bias ? bias[j] : 0.0f);
    }
    return Status::ok();
  }
  kernels::matmul(a->value[in], a->stride[in], rows, layer->kernel()->rows(),
                  layer->kernel()->data()->data(), gates, bias, z, z_stride, false);
  return Status::ok();
}

Status run_lstm(const schema::Layer* layer, bool batched, GraphArena* a) {
  const auto& ins = *layer->inputs();
  const uint32_t seq_out = layer->outputs()->Get(0);
  const uint32_t h_out = layer->outputs()->Get(1);
  const uint32_t c_out = layer->outputs()->Get(2);
  const size_t units = layer->units();
  const size_t z_stride = padded_cols(4 * units);
  const float* recurrent = layer->recurrent()->data()->data();
  const Act gate_act = to_act(layer->recurrent_activation());
  const Act cell_act = to_act(layer->cell_activation());
  const bool has_initial = ins.size() == 3;
  float* z = a->temp;
  TUNECAST_RETURN_IF_ERROR(lstm_input_projection(layer, a, z, z_stride));

  if (batched) {
    // One step for every beam row.
    const size_t rows = a->rows[ins[0]];
    if (has_initial) {
      kernels::matmul(a->value[ins[1]], a->stride[ins[1]], rows, units, recurrent, 4 * units,
                      nullptr, z, z_stride, true);
    }
    for (size_t r = 0; r < rows; ++r) {
      float* h = a->value[h_out] + r * a->stride[h_out];
      float* c = a->value[c_out] + r * a->stride[c_out];
      if (has_initial) {
        std::memcpy(c, a->value[ins[2]] + r * a->stride[ins[2]], units * sizeof(float));
      } else {
        std::memset(c, 0, units * sizeof(float));
      }
      kernels::lstm_cell(z + r * z_stride, units, h, c, gate_act, cell_act);
      std::memcpy(a->value[seq_out] + r * a->stride[seq_out], h, units * sizeof(float));
    }
    return Status::ok();
  }

  // Sequence: rows are time steps, batch 1; h and c live in the output values.
  const size_t steps = a->rows[ins[0]];
  float* h = a->value[h_out];
  float* c = a->value[c_out];
  if (has_initial) {
    std::memcpy(h, a->value[ins[1]], units * sizeof(float));
    std::memcpy(c, a->value[ins[2]], units * sizeof(float));
  } else {
    std::memset(h, 0, units * sizeof(float));
    std::memset(c, 0, units * sizeof(float));
  }
  for (size_t s = 0; s < steps; ++s) {
    const size_t t = layer->reverse() ? steps - 1 - s : s;
    float* zt = z + t * z_stride;
    // With no initial state h is zero at the first step: skipping h U changes no bit.
    if (s > 0 || has_initial) {
      kernels::matmul(h, units, 1, units, recurrent, 4 * units, nullptr, zt, z_stride, true);
    }
    kernels::lstm_cell(zt, units, h, c, gate_act, cell_act);
    if (layer->return_sequences()) {
      std::memcpy(a->value[seq_out] + t * a->stride[seq_out], h, units * sizeof(float));
    }
  }
  if (!layer->return_sequences()) std::memcpy(a->value[seq_out], h, units * sizeof(float));
  return Status::ok();
}

}  // namespace

size_t graph_floats(const GraphInfo& info, int batch) {
  size_t total = 0;
  for (uint32_t v = 0; v < info.value_count; ++v) {
    const size_t rows = info.value_rows[v] ? info.value_rows[v] : static_cast<size_t>(batch);
    total += align_floats(rows * padded_cols(info.value_cols[v]));
  }
  total += align_floats(info.temp_floats_fixed + info.temp_floats_per_row * batch);
  return total;
}

void bind_graph(const GraphInfo& info, int batch, float* base, GraphArena* arena) {
  arena->batch = batch;
  size_t offset = 0;
  for (uint32_t v = 0; v < info.value_count; ++v) {
    arena->rows[v] = info.value_rows[v] ? info.value_rows[v] : static_cast<size_t>(batch);
    arena->stride[v] = padded_cols(info.value_cols[v]);
    arena->value[v] = base + offset;
    offset += align_floats(arena->rows[v] * arena->stride[v]);
  }
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
  const schema::Graph* g = info.graph;
  for (const schema::Layer* layer : *g->layers()) {
    const auto& ins = *layer->inputs();
    const uint32_t out = layer->outputs()->Get(0);
    switch (layer->type()) {
      case LayerType::Dense:
        run_dense(layer, a);
        break;
      case LayerType::Embedding:
        TUNECAST_RETURN_IF_ERROR(run_embedding(layer, a));
        break;
      case LayerType::Lstm:
        TUNECAST_RETURN_IF_ERROR(run_lstm(layer, info.batched, a));
        break;
      case LayerType::Relu:
      case LayerType::Tanh:
      case LayerType::Sigmoid:
      case LayerType::Softmax: {
        const size_t cols = info.value_cols[out];
        std::memcpy(a->value[out], a->value[ins[0]], a->rows[out] * a->stride[out] * sizeof(float));
        Act act = layer->type() == LayerType::Relu      ? Act::kRelu
                  : layer->type() == LayerType::Tanh    ? Act::kTanh
                  : layer->type() == LayerType::Sigmoid ? Act::kSigmoid
                                                        : Act::kSoftmax;
        kernels::activate_rows(act, a->value[out], a->rows[out], cols, a->stride[out]);
        break;
      }
      case LayerType::Add: {
        const size_t n = a->rows[out] * a->stride[out];
        float* y = a->value[out];
        std::memcpy(y, a->value[ins[0]], n * sizeof(float));
        for (uint32_t i = 1; i < ins.size(); ++i) {
          const float* x = a->value[ins[i]];
          for (size_t j = 0; j < n; ++j) y[j] += x[j];
        }
        break;
      }
      case LayerType::Concat: {
        size_t col = 0;
        for (uint32_t id : ins) {
          const size_t cols = info.value_cols[id];
          for (size_t r = 0; r < a->rows[out]; ++r) {
            std::memcpy(a->value[out] + r * a->stride[out] + col, a->value[id] + r * a->stride[id],
                        cols * sizeof(float));
          }
          col += cols;
        }
        for (size_t r = 0; r < a->rows[out]; ++r) {
          std::memset(a->value[out] + r * a->stride[out] + col, 0,
                      (a->stride[out] - col) * sizeof(float));
        }
        break;
      }
      case LayerType::Conv1D: {
        const uint32_t in = ins[0];
        const size_t k = layer->kernel_size();
        const size_t channels = info.value_cols[in];
        const size_t in_rows = a->rows[in];
        const size_t out_rows = a->rows[out];
        const size_t pad_before = layer->padding_same() ? (k - 1) / 2 : 0;
        float* cols = a->temp;  // im2col: out_rows x (k * channels)
        for (size_t t = 0; t < out_rows; ++t) {
          for (size_t tap = 0; tap < k; ++tap) {
            const long src = static_cast<long>(t + tap) - static_cast<long>(pad_before);
            float* dst = cols + (t * k + tap) * channels;
            if (src < 0 || src >= static_cast<long>(in_rows)) {
              std::memset(dst, 0, channels * sizeof(float));
            } else {
              std::memcpy(dst, a->value[in] + src * a->stride[in], channels * sizeof(float));
            }
          }
        }
        kernels::matmul(cols, k * channels, out_rows, k * channels, layer->kernel()->data()->data(),
                        layer->units(), bias_of(layer), a->value[out], a->stride[out], false);
        kernels::activate_rows(to_act(layer->activation()), a->value[out], out_rows,
                               layer->units(), a->stride[out]);
        break;
      }
      case LayerType::Attention: {
        const uint32_t q = ins[0];
        const uint32_t m = ins[1];
        const size_t steps = a->rows[m];
        const size_t width = info.value_cols[q];
        for (size_t r = 0; r < a->rows[q]; ++r) {
          const float* query = a->value[q] + r * a->stride[q];
          float* scores = a->temp + r * padded_cols(steps);
          for (size_t t = 0; t < steps; ++t) {
            const float* key = a->value[m] + t * a->stride[m];
            float dot = 0.0f;
            for (size_t j = 0; j < width; ++j) dot += query[j] * key[j];
            scores[t] = dot;
          }
          kernels::softmax(scores, steps);
          float* context = a->value[out] + r * a->stride[out];
          std::memset(context, 0, a->stride[out] * sizeof(float));
          for (size_t t = 0; t < steps; ++t) {
            const float* key = a->value[m] + t * a->stride[m];
            for (size_t j = 0; j < width; ++j) context[j] += scores[t] * key[j];
          }
        }
        break;
      }
      default:
        return Status::error(StatusCode::kUnsupported, "unsupported layer type");
    }
  }
  return Status::ok();
}

}  // namespace tunecast::detail
