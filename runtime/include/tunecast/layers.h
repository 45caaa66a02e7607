// One function per layer type over caller-owned padded matrices (rows `stride` floats apart, the
// stride a multiple of kernels::kPanelWidth). The blob runtime's graph executor calls them with
// sizes read from the artifact, generated predictors with their constant sizes; each call runs
// the runtime library's code for the active SIMD level (simd.h), so both give identical bits
// whatever compiler and flags built the caller.
//
// Product weights (Dense, Conv1D and LSTM kernels) are float or kernels::Half (packed in panels,
// kernel_types.h); embedding and token tables, biases and activations are always float.
#pragma once

#include <cstddef>

#include "tunecast/kernel_types.h"
#include "tunecast/status.h"

namespace tunecast::layers {

using kernels::Act;
using kernels::Half;

// Dense: y = act(x W + b); W packed [depth][units]. A mostly-zero input (MIOpen's diagonal KTN
// encoding) skips its zero rows.
void dense(const float* x, size_t x_stride, size_t rows, size_t depth, const float* kernel,
           size_t units, const float* bias, Act act, float* y, size_t y_stride);
void dense(const float* x, size_t x_stride, size_t rows, size_t depth, const Half* kernel,
           size_t units, const float* bias, Act act, float* y, size_t y_stride);

// Embedding: y[r] = table[int(x[r][0])]; table plain row-major [vocab][dim]. An index that is not
// an integer in [0, vocab) is an error.
Status embedding(const char* name, const float* x, size_t x_stride, size_t rows,
                 const float* table, size_t vocab, size_t dim, float* y, size_t y_stride);

// LSTM input projection of every row into z ([rows][4 units], stride z_stride): x W + b, or with
// `token_input` a gather of the (already projected) kernel row of token x[r][0], plus b.
Status lstm_input(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  const float* kernel, size_t kernel_rows, size_t units, const float* bias,
                  float* z, size_t z_stride);
Status lstm_input(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  const Half* kernel, size_t kernel_rows, size_t units, const float* bias,
                  float* z, size_t z_stride);

// Rows of a batched LSTM step computed together: the gate pre-activations of this many rows, not
// of the whole beam, sit in the temporary region, so a wide beam keeps a small scratch and the
// cells read z while it is still in cache. How rows are grouped changes no bit.
constexpr size_t kLstmStepRows = 32;

// Product weights of either type, for a layer whose weight types are known only at run time.
struct AnyWeights {
  AnyWeights(const float* w) : f32(w) {}  // NOLINT: implicit, as the pointer it wraps
  AnyWeights(const Half* w) : f16(w) {}   // NOLINT
  const float* f32 = nullptr;
  const Half* f16 = nullptr;
};

// A batched LSTM layer (a decoder step over the beams): input projection then one step,
// kLstmStepRows rows at a time; z holds kLstmStepRows rows. h0/c0 null: zero initial state. Its
// sequence output is h.
Status lstm_batch(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  AnyWeights kernel, size_t kernel_rows, size_t units, const float* bias,
                  AnyWeights recurrent, const float* h0, size_t h0_stride, const float* c0,
                  size_t c0_stride, Act gate_act, Act cell_act, float* z, size_t z_stride,
                  float* h, size_t h_stride, float* c, size_t c_stride);

// An LSTM over a sequence (rows are time steps, batch 1), from z = lstm_input(...). h and c are
// single rows; `seq` receives every step's h (return_sequences) or the last one.
void lstm_sequence(size_t steps, size_t units, const float* recurrent, const float* h0,
                   const float* c0, Act gate_act, Act cell_act, bool reverse,
                   bool return_sequences, float* z, size_t z_stride, float* h, float* c,
                   float* seq, size_t seq_stride);
void lstm_sequence(size_t steps, size_t units, const Half* recurrent, const float* h0,
                   const float* c0, Act gate_act, Act cell_act, bool reverse,
                   bool return_sequences, float* z, size_t z_stride, float* h, float* c,
                   float* seq, size_t seq_stride);

// Relu / Tanh / Sigmoid / Softmax layers: y = act(x), whole padded rows copied.
void activation(Act act, const float* x, size_t rows, size_t cols, size_t stride, float* y);

// Add: y = x0 + x1 + ... over `n` floats (whole padded rows).
void add(const float* const* xs, size_t count, size_t n, float* y);

// Concat along columns; the padding after the last column is zeroed.
void concat(const float* const* xs, const size_t* cols, const size_t* strides, size_t count,
            size_t rows, float* y, size_t y_stride);

// Conv1D over time via im2col in `temp` (out_rows x kernel_size * channels floats).
void conv1d(const float* x, size_t x_stride, size_t in_rows, size_t channels, size_t kernel_size,
            bool padding_same, const float* kernel, size_t units, const float* bias, Act act,
            float* temp, float* y, size_t out_rows, size_t y_stride);
void conv1d(const float* x, size_t x_stride, size_t in_rows, size_t channels, size_t kernel_size,
            bool padding_same, const Half* kernel, size_t units, const float* bias, Act act,
            float* temp, float* y, size_t out_rows, size_t y_stride);

// Luong dot attention: context[r] = softmax(query[r] . memory^T) . memory. `scores` holds
// rows x scores_stride floats (scores_stride >= steps, padded).
void attention(const float* query, size_t q_stride, size_t rows, size_t width,
               const float* memory, size_t m_stride, size_t steps, float* scores,
               size_t scores_stride, float* context, size_t c_stride);

// log-softmax of n values in place (max-subtracted): logits become log-probabilities.
void log_softmax(float* x, size_t n);

}  // namespace tunecast::layers
