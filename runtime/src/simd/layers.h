// One function per layer type over caller-owned padded matrices (rows `stride` floats apart, the
// stride a multiple of kernels::kPanelWidth): the only home of layer arithmetic, compiled once per
// SIMD level (simd/level.cpp) into the level's namespace. Callers use the public
// tunecast/layers.h, which documents each function and dispatches here.
//
// Product weights (Dense, Conv1D and LSTM kernels, `W`) are float or kernels::Half; embedding and
// token tables, biases and activations are always float.
#pragma once

#include <cstddef>
#include <cstring>

#include "simd/kernels.h"
#include "tunecast/layers.h"
#include "tunecast/status.h"

namespace tunecast::layers::TUNECAST_SIMD_NS {

using kernels::Act;
using ::tunecast::layers::AnyWeights;
using ::tunecast::layers::kLstmStepRows;

// Dense: y = act(x W + b). A mostly-zero input (MIOpen's diagonal KTN encoding) takes the
// row-skipping path, decided exactly as the executor does.
template <typename W>
void dense(const float* x, size_t x_stride, size_t rows, size_t depth, const W* kernel,
           size_t units, const float* bias, Act act, float* y, size_t y_stride) {
  size_t zeros = 0;
  if (rows * depth <= 4096) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < depth; ++k) zeros += x[r * x_stride + k] == 0.0f;
    }
  }
  if (zeros * 4 >= rows * depth * 3) {
    kernels::matmul_sparse_rows(x, x_stride, rows, depth, kernel, units, bias, y, y_stride);
  } else {
    kernels::matmul(x, x_stride, rows, depth, kernel, units, bias, y, y_stride, false);
  }
  kernels::activate_rows(act, y, rows, units, y_stride);
}

// Reads a float token index; false if it is not an integer in [0, limit).
inline bool token_index(float x, size_t limit, size_t* index) {
  if (!(x >= 0.0f) || !(x < static_cast<float>(limit))) return false;
  const size_t i = static_cast<size_t>(x);
  if (static_cast<float>(i) != x) return false;
  *index = i;
  return true;
}

// Embedding: y[r] = table[int(x[r][0])]; table plain row-major [vocab][dim].
inline Status embedding(const char* name, const float* x, size_t x_stride, size_t rows,
                        const float* table, size_t vocab, size_t dim, float* y, size_t y_stride) {
  for (size_t r = 0; r < rows; ++r) {
    size_t index;
    if (!token_index(x[r * x_stride], vocab, &index)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "embedding '%s': token index %g is not in [0, %zu)", name,
                           static_cast<double>(x[r * x_stride]), vocab);
    }
    std::memcpy(y + r * y_stride, table + index * dim, dim * sizeof(float));
  }
  return Status::ok();
}

// LSTM input projection of every row into z ([rows][4 units], stride z_stride): x W + b, or with
// `token_input` a gather of the (already projected) kernel row of token x[r][0], plus b.
template <typename W>
Status lstm_input(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  const W* kernel, size_t kernel_rows, size_t units, const float* bias, float* z,
                  size_t z_stride) {
  const size_t gates = 4 * units;
  if (token_input) {
    for (size_t r = 0; r < rows; ++r) {
      size_t index;
      if (!token_index(x[r * x_stride], kernel_rows, &index)) {
        return Status::error(StatusCode::kInvalidArgument, "lstm '%s': token index out of range",
                             name);
      }
      const W* row = kernel + index * gates;
      float* zr = z + r * z_stride;
      for (size_t j = 0; j < gates; ++j) zr[j] = kernels::weight_value(row[j]);
      if (bias != nullptr) kernels::add_to(bias, gates, zr);
    }
    return Status::ok();
  }
  kernels::matmul(x, x_stride, rows, kernel_rows, kernel, gates, bias, z, z_stride, false);
  return Status::ok();
}

// One LSTM step for every row (a decoder step over the beams), from z = lstm_input(...).
// h0/c0 null: zero initial state. Writes h and c; a step graph's sequence output shares h's
// storage (GraphInfo::storage), so it needs no copy.
template <typename W>
void lstm_step(size_t rows, size_t units, const W* recurrent, const float* h0, size_t h0_stride,
               const float* c0, size_t c0_stride, Act gate_act, Act cell_act, float* z,
               size_t z_stride, float* h, size_t h_stride, float* c, size_t c_stride) {
  if (h0 != nullptr) {
    kernels::matmul(h0, h0_stride, rows, units, recurrent, 4 * units, nullptr, z, z_stride, true);
  }
  for (size_t r = 0; r < rows; ++r) {
    float* hr = h + r * h_stride;
    float* cr = c + r * c_stride;
    if (c0 != nullptr) {
      std::memcpy(cr, c0 + r * c0_stride, units * sizeof(float));
    } else {
      std::memset(cr, 0, units * sizeof(float));
    }
    kernels::lstm_cell(z + r * z_stride, units, hr, cr, gate_act, cell_act);
  }
}

// A batched LSTM layer (decoder step over the beams): lstm_input then lstm_step, kLstmStepRows
// rows at a time; z holds kLstmStepRows rows. Its sequence output is h (see lstm_step).
inline Status lstm_batch(
    const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
    AnyWeights kernel, size_t kernel_rows, size_t units, const float* bias, AnyWeights recurrent,
    const float* h0, size_t h0_stride, const float* c0, size_t c0_stride, Act gate_act,
    Act cell_act, float* z, size_t z_stride, float* h, size_t h_stride, float* c, size_t c_stride) {
  for (size_t r0 = 0; r0 < rows; r0 += kLstmStepRows) {
    const size_t n = rows - r0 < kLstmStepRows ? rows - r0 : kLstmStepRows;
    const float* xr = x + r0 * x_stride;
    TUNECAST_RETURN_IF_ERROR(
        kernel.f16 != nullptr
            ? lstm_input(name, token_input, xr, x_stride, n, kernel.f16, kernel_rows, units, bias, z, z_stride)
            : lstm_input(name, token_input, xr, x_stride, n, kernel.f32, kernel_rows, units, bias, z, z_stride));
    const float* h0r = h0 != nullptr ? h0 + r0 * h0_stride : nullptr;
    const float* c0r = c0 != nullptr ? c0 + r0 * c0_stride : nullptr;
    float* hr = h + r0 * h_stride;
    float* cr = c + r0 * c_stride;
    if (recurrent.f16 != nullptr) {
      lstm_step(n, units, recurrent.f16, h0r, h0_stride, c0r, c0_stride, gate_act, cell_act, z,
                z_stride, hr, h_stride, cr, c_stride);
    } else {
      lstm_step(n, units, recurrent.f32, h0r, h0_stride, c0r, c0_stride, gate_act, cell_act, z,
                z_stride, hr, h_stride, cr, c_stride);
    }
  }
  return Status::ok();
}

// An LSTM over a sequence (rows are time steps, batch 1), from z = lstm_input(...). h and c are
// single rows; `seq` receives every step's h (return_sequences) or the last one.
template <typename W>
void lstm_sequence(size_t steps, size_t units, const W* recurrent, const float* h0,
                   const float* c0, Act gate_act, Act cell_act, bool reverse,
                   bool return_sequences, float* z, size_t z_stride, float* h, float* c,
                   float* seq, size_t seq_stride) {
  const bool has_initial = h0 != nullptr;
  if (has_initial) {
    std::memcpy(h, h0, units * sizeof(float));
    std::memcpy(c, c0, units * sizeof(float));
  } else {
    std::memset(h, 0, units * sizeof(float));
    std::memset(c, 0, units * sizeof(float));
  }
  for (size_t s = 0; s < steps; ++s) {
    const size_t t = reverse ? steps - 1 - s : s;
    float* zt = z + t * z_stride;
    // With no initial state h is zero at the first step: skipping h U changes no bit.
    if (s > 0 || has_initial) {
      kernels::matmul(h, units, 1, units, recurrent, 4 * units, nullptr, zt, z_stride, true);
    }
    kernels::lstm_cell(zt, units, h, c, gate_act, cell_act);
    if (return_sequences) std::memcpy(seq + t * seq_stride, h, units * sizeof(float));
  }
  if (!return_sequences) std::memcpy(seq, h, units * sizeof(float));
}

// Relu / Tanh / Sigmoid / Softmax layers: y = act(x), whole padded rows copied.
inline void activation(Act act, const float* x, size_t rows, size_t cols, size_t stride,
                       float* y) {
  std::memcpy(y, x, rows * stride * sizeof(float));
  kernels::activate_rows(act, y, rows, cols, stride);
}

// Add: y = x0 + x1 + ... over `n` floats (whole padded rows).
inline void add(const float* const* xs, size_t count, size_t n, float* y) {
  std::memcpy(y, xs[0], n * sizeof(float));
  for (size_t i = 1; i < count; ++i) kernels::add_to(xs[i], n, y);
}

// Concat along columns; the padding after the last column is zeroed.
inline void concat(const float* const* xs, const size_t* cols, const size_t* strides, size_t count,
                   size_t rows, float* y, size_t y_stride) {
  size_t col = 0;
  for (size_t i = 0; i < count; ++i) {
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(y + r * y_stride + col, xs[i] + r * strides[i], cols[i] * sizeof(float));
    }
    col += cols[i];
  }
  for (size_t r = 0; r < rows; ++r) {
    std::memset(y + r * y_stride + col, 0, (y_stride - col) * sizeof(float));
  }
}

// Conv1D over time via im2col in `temp` (out_rows x kernel_size * channels floats).
template <typename W>
void conv1d(const float* x, size_t x_stride, size_t in_rows, size_t channels, size_t kernel_size,
            bool padding_same, const W* kernel, size_t units, const float* bias, Act act,
            float* temp, float* y, size_t out_rows, size_t y_stride) {
  const size_t pad_before = padding_same ? (kernel_size - 1) / 2 : 0;
  for (size_t t = 0; t < out_rows; ++t) {
    for (size_t tap = 0; tap < kernel_size; ++tap) {
      const long src = static_cast<long>(t + tap) - static_cast<long>(pad_before);
      float* dst = temp + (t * kernel_size + tap) * channels;
      if (src < 0 || src >= static_cast<long>(in_rows)) {
        std::memset(dst, 0, channels * sizeof(float));
      } else {
        std::memcpy(dst, x + src * x_stride, channels * sizeof(float));
      }
    }
  }
  kernels::matmul(temp, kernel_size * channels, out_rows, kernel_size * channels, kernel, units,
                  bias, y, y_stride, false);
  kernels::activate_rows(act, y, out_rows, units, y_stride);
}

// Luong dot attention: context[r] = softmax(query[r] . memory^T) . memory. `scores` holds
// rows x scores_stride floats (scores_stride >= steps, padded).
inline void attention(const float* query, size_t q_stride, size_t rows, size_t width,
                      const float* memory, size_t m_stride, size_t steps, float* scores,
                      size_t scores_stride, float* context, size_t c_stride) {
  for (size_t r = 0; r < rows; ++r) {
    const float* q = query + r * q_stride;
    float* sr = scores + r * scores_stride;
    for (size_t t = 0; t < steps; ++t) {
      const float* key = memory + t * m_stride;
      float dot = 0.0f;
      for (size_t j = 0; j < width; ++j) dot = kernels::fmadd(q[j], key[j], dot);
      sr[t] = dot;
    }
    kernels::softmax(sr, steps);
    float* out = context + r * c_stride;
    std::memset(out, 0, c_stride * sizeof(float));
    for (size_t t = 0; t < steps; ++t) {
      const float* key = memory + t * m_stride;
      for (size_t j = 0; j < width; ++j) out[j] = kernels::fmadd(sr[t], key[j], out[j]);
    }
  }
}

}  // namespace tunecast::layers::TUNECAST_SIMD_NS
