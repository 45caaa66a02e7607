// The arithmetic of every layer, as small pure functions over caller-owned buffers. The blob
// runtime calls them with sizes read from the artifact; generated predictors call the same
// functions with compile-time constant sizes, so both produce identical bits.
//
// Matrices used in products are packed in column panels of kPanelWidth floats: a [rows][cols]
// matrix becomes ceil(cols / kPanelWidth) panels, each [rows][kPanelWidth] contiguous (the last
// zero-padded). One panel is two 8-float vectors; a product keeps several panels and rows in
// registers and streams the weights exactly once per block of rows.
//
// Product weights are `float` or `Half` (IEEE binary16 bit patterns, blobs compiled with
// `--weights fp16`): the products are templates over the weight type, a Half weight is widened to
// float when loaded (exactly), and the sums run in the same order either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tunecast::kernels {

constexpr int kPanelWidth = 16;

// Floats in a packed matrix.
constexpr size_t packed_size(size_t rows, size_t cols) {
  return rows * ((cols + kPanelWidth - 1) / kPanelWidth) * kPanelWidth;
}

#if defined(__GNUC__) || defined(__clang__)
#define TUNECAST_INLINE inline __attribute__((always_inline))
// Whole-array loops: one shared copy each rather than one per caller (the runtime's code size
// goal); a call costs nothing next to the loop.
#define TUNECAST_OUT_OF_LINE __attribute__((noinline))
#define TUNECAST_RESTRICT __restrict__
typedef float Vec8 __attribute__((vector_size(32), aligned(4)));
typedef float Vec16 __attribute__((vector_size(64), aligned(4)));
typedef float Vec8Alias __attribute__((vector_size(32), aligned(4), may_alias));
typedef float Vec16Alias __attribute__((vector_size(64), aligned(4), may_alias));
#else
#error "tunecast kernels need GCC or Clang vector extensions"
#endif

// Vectors move through may_alias, 4-byte-aligned vector types (unaligned-safe plain vector
// loads; memcpy into the accumulator arrays made GCC keep them in memory on AVX2 targets) and
// are never passed or returned by value, which keeps GCC's -Wpsabi quiet on pre-AVX targets.
//
// With AVX-512 a panel is one 16-float register and 32 registers allow 8 rows x 2 panels of
// accumulators; otherwise a panel is two 8-float vectors and blocks are 4 rows x 1 panel. The
// vector width and block shape change no bit: each lane still sums bias, then k = 0, 1, ...
#if defined(__AVX512F__)
typedef Vec16 PanelVec;
typedef Vec16Alias PanelVecAlias;
constexpr int kBatchRows = 8;    // rows per block for batches
constexpr int kBatchPanels = 2;  // panels per block for batches
constexpr int kFewRows = 2;      // rows per block below kBatchRows
constexpr int kRowPanels = 4;    // panels per block below kBatchRows (weights stream from L2)
#else
typedef Vec8 PanelVec;
typedef Vec8Alias PanelVecAlias;
constexpr int kBatchRows = 4;
constexpr int kBatchPanels = 1;
#if defined(__AVX__)
constexpr int kFewRows = 2;
#else
constexpr int kFewRows = 1;  // SSE: 8-float vectors are pairs of registers; two rows spill
#endif
constexpr int kRowPanels = 4;
#endif
constexpr int kVecsPerPanel = kPanelWidth / static_cast<int>(sizeof(PanelVec) / sizeof(float));
constexpr int kVecWidth = kPanelWidth / kVecsPerPanel;

// --- weight types ------------------------------------------------------------------------------
// A binary16 weight: half the bytes streamed per multiply-add where one-row products are bound by
// cache bandwidth (greedy decoding).
using Half = uint16_t;

// Exact binary16 -> binary32 (F16C when the target has it; the portable path gives the same bits).
TUNECAST_INLINE float half_to_float(Half h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

TUNECAST_INLINE float weight_value(float w) { return w; }
TUNECAST_INLINE float weight_value(Half w) { return half_to_float(w); }

// One vector of kVecWidth consecutive weights, widened to float.
TUNECAST_INLINE void load_weights(const float* w, PanelVec* out) {
  *out = *reinterpret_cast<const PanelVecAlias*>(w);
}
TUNECAST_INLINE void load_weights(const Half* w, PanelVec* out) {
#if defined(__AVX512F__)
  // The maskz form with every lane set: _mm512_cvtph_ps trips GCC 12's -Wmaybe-uninitialized.
  const __m512 v =
      _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  std::memcpy(out, &v, sizeof v);
#elif defined(__F16C__)
  const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  std::memcpy(out, &v, sizeof v);
#else
  for (int i = 0; i < kVecWidth; ++i) (*out)[i] = half_to_float(w[i]);
#endif
}

// Y[r][0..cols) = (accumulate ? Y : bias or 0) + X[r][0..depth) . W, for R rows and P panels.
// Every output element is summed in the same order (bias, then k = 0, 1, ...) whatever R and P.
template <int R, int P, typename W>
TUNECAST_INLINE void matmul_block(const float* TUNECAST_RESTRICT x, size_t x_stride, size_t depth,
                                  const W* TUNECAST_RESTRICT w, size_t panel_stride,
                                  const float* bias, float* TUNECAST_RESTRICT y, size_t y_stride,
                                  bool accumulate) {
  constexpr int H = kVecsPerPanel;
  PanelVec acc[R][P][H];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      for (int h = 0; h < H; ++h) {
        const size_t col = p * kPanelWidth + h * kVecWidth;
        if (accumulate) {
          acc[r][p][h] = *reinterpret_cast<const PanelVecAlias*>(y + r * y_stride + col);
        } else if (bias != nullptr) {
          acc[r][p][h] = *reinterpret_cast<const PanelVecAlias*>(bias + col);
        } else {
          acc[r][p][h] = PanelVec{};
        }
      }
    }
  }
  for (size_t k = 0; k < depth; ++k) {
    PanelVec wv[P][H];
    for (int p = 0; p < P; ++p) {
      for (int h = 0; h < H; ++h) {
        load_weights(w + p * panel_stride + k * kPanelWidth + h * kVecWidth, &wv[p][h]);
      }
    }
    for (int r = 0; r < R; ++r) {
      const float xk = x[r * x_stride + k];
      for (int p = 0; p < P; ++p) {
        for (int h = 0; h < H; ++h) acc[r][p][h] += xk * wv[p][h];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      for (int h = 0; h < H; ++h) {
        *reinterpret_cast<PanelVecAlias*>(y + r * y_stride + p * kPanelWidth + h * kVecWidth) =
            acc[r][p][h];
      }
    }
  }
}

// Rows [r0, r1) x panels [p0, p1) with blocks of R rows and P panels (remainders narrower).
template <int R, int P, typename W>
TUNECAST_INLINE void matmul_rows(const float* x, size_t x_stride, size_t r0, size_t r1,
                                 size_t depth, const W* w, size_t p0, size_t p1,
                                 const float* bias, float* y, size_t y_stride, bool accumulate) {
  const size_t panel_stride = depth * kPanelWidth;
  auto block = [&](auto rows_c, auto panels_c, size_t r, size_t p) {
    constexpr int kR = decltype(rows_c)::value;
    constexpr int kP = decltype(panels_c)::value;
    matmul_block<kR, kP, W>(x + r * x_stride, x_stride, depth, w + p * panel_stride, panel_stride,
                         bias ? bias + p * kPanelWidth : nullptr, y + r * y_stride + p * kPanelWidth,
                         y_stride, accumulate);
  };
  using RC = std::integral_constant<int, R>;
  using PC = std::integral_constant<int, P>;
  using One = std::integral_constant<int, 1>;
  // Panels outermost: a block of panels stays in L1 while every row block reads it.
  size_t p = p0;
  for (; p + P <= p1; p += P) {
    size_t r = r0;
    for (; r + R <= r1; r += R) block(RC{}, PC{}, r, p);
    for (; r < r1; ++r) block(One{}, PC{}, r, p);
  }
  for (; p < p1; ++p) {
    size_t r = r0;
    for (; r + R <= r1; r += R) block(RC{}, One{}, r, p);
    for (; r < r1; ++r) block(One{}, One{}, r, p);
  }
}

// Y[rows][padded cols] (+)= X[rows][depth] . W_packed[depth][cols] (+ bias).
// `y` rows are `y_stride` floats apart and must have room for the padded width
// (ceil(cols / kPanelWidth) * kPanelWidth); `bias` must be padded likewise (or null).
template <typename W>
TUNECAST_OUT_OF_LINE void matmul(const float* x, size_t x_stride, size_t rows, size_t depth, const W* w,
                   size_t cols, const float* bias, float* y, size_t y_stride, bool accumulate) {
  const size_t panels = (cols + kPanelWidth - 1) / kPanelWidth;
  if (rows >= static_cast<size_t>(kBatchRows)) {
    matmul_rows<kBatchRows, kBatchPanels>(x, x_stride, 0, rows, depth, w, 0, panels, bias, y,
                                          y_stride, accumulate);
  } else {
    // Few rows (greedy, the first beam-search steps): pairs of rows over wide panel blocks.
    matmul_rows<kFewRows, kRowPanels>(x, x_stride, 0, rows, depth, w, 0, panels, bias, y, y_stride,
                               accumulate);
  }
}

// Rows of x that are all zero add nothing: the product skips them (MIOpen's KTN input is a
// diagonal matrix, so its first Dense layer touches one weight row per time step).
template <typename W>
TUNECAST_OUT_OF_LINE void matmul_sparse_rows(const float* x, size_t x_stride, size_t rows, size_t depth,
                               const W* w, size_t cols, const float* bias, float* y,
                               size_t y_stride) {
  const size_t panels = (cols + kPanelWidth - 1) / kPanelWidth;
  const size_t padded = panels * kPanelWidth;
  for (size_t r = 0; r < rows; ++r) {
    float* yr = y + r * y_stride;
    for (size_t j = 0; j < padded; ++j) yr[j] = bias ? bias[j] : 0.0f;
    for (size_t k = 0; k < depth; ++k) {
      const float xk = x[r * x_stride + k];
      if (xk == 0.0f) continue;
      for (size_t p = 0; p < panels; ++p) {
        const W* wk = w + p * depth * kPanelWidth + k * kPanelWidth;
        for (int j = 0; j < kPanelWidth; ++j) yr[p * kPanelWidth + j] += xk * weight_value(wk[j]);
      }
    }
  }
}

// --- element-wise functions ------------------------------------------------------------------
// exp with a Cephes-style range reduction and degree-6 polynomial (about 2 ulp on [-87, 88]),
// written without branches or library calls so loops over it vectorize.
TUNECAST_INLINE float exp_approx(float x) {
  x = x < 88.0f ? x : 88.0f;
  x = x > -87.0f ? x : -87.0f;
  const float kLog2e = 1.44269504088896341f;
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to nearest
  float n = (x * kLog2e + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

TUNECAST_INLINE float sigmoid(float x) { return 1.0f / (1.0f + exp_approx(-x)); }
TUNECAST_INLINE float tanh_approx(float x) { return 2.0f / (1.0f + exp_approx(-2.0f * x)) - 1.0f; }
TUNECAST_INLINE float hard_sigmoid(float x) {
  const float y = 0.2f * x + 0.5f;
  return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
}
TUNECAST_INLINE float relu(float x) { return x > 0.0f ? x : 0.0f; }

enum class Act : uint8_t { kLinear = 0, kRelu = 1, kTanh = 2, kSigmoid = 3, kSoftmax = 4, kHardSigmoid = 5 };

TUNECAST_INLINE float activate(Act act, float x) {
  switch (act) {
    case Act::kRelu: return relu(x);
    case Act::kTanh: return tanh_approx(x);
    case Act::kSigmoid: return sigmoid(x);
    case Act::kHardSigmoid: return hard_sigmoid(x);
    default: return x;
  }
}

// Softmax over n values in place (max-subtracted).
inline TUNECAST_OUT_OF_LINE void softmax(float* x, size_t n) {
  float max_value = x[0];
  for (size_t i = 1; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = exp_approx(x[i] - max_value);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

// Applies `act` to rows x cols values (row stride `stride`).
inline TUNECAST_OUT_OF_LINE void activate_rows(Act act, float* x, size_t rows, size_t cols, size_t stride) {
  if (act == Act::kLinear) return;
  for (size_t r = 0; r < rows; ++r) {
    float* row = x + r * stride;
    switch (act) {
      case Act::kRelu:
        for (size_t j = 0; j < cols; ++j) row[j] = relu(row[j]);
        break;
      case Act::kTanh:
        for (size_t j = 0; j < cols; ++j) row[j] = tanh_approx(row[j]);
        break;
      case Act::kSigmoid:
        for (size_t j = 0; j < cols; ++j) row[j] = sigmoid(row[j]);
        break;
      case Act::kHardSigmoid:
        for (size_t j = 0; j < cols; ++j) row[j] = hard_sigmoid(row[j]);
        break;
      case Act::kSoftmax:
        softmax(row, cols);
        break;
      default:
        break;
    }
  }
}

// One LSTM cell update for one row, from pre-activations z = x W + h U + b laid out
// [i | f | g | o] (units each). Writes c and h in place.
inline TUNECAST_OUT_OF_LINE void lstm_cell(const float* TUNECAST_RESTRICT z, size_t units, float* TUNECAST_RESTRICT h,
                      float* TUNECAST_RESTRICT c, Act gate_act, Act cell_act) {
  const float* zi = z;
  const float* zf = z + units;
  const float* zg = z + 2 * units;
  const float* zo = z + 3 * units;
  if (gate_act == Act::kSigmoid && cell_act == Act::kTanh) {
    for (size_t j = 0; j < units; ++j) {
      const float c_new = sigmoid(zf[j]) * c[j] + sigmoid(zi[j]) * tanh_approx(zg[j]);
      c[j] = c_new;
      h[j] = sigmoid(zo[j]) * tanh_approx(c_new);
    }
    return;
  }
  for (size_t j = 0; j < units; ++j) {
    const float c_new =
        activate(gate_act, zf[j]) * c[j] + activate(gate_act, zi[j]) * activate(cell_act, zg[j]);
    c[j] = c_new;
    h[j] = activate(gate_act, zo[j]) * activate(cell_act, c_new);
  }
}

// log-softmax of n values in place; returns nothing, values become log-probabilities.
inline TUNECAST_OUT_OF_LINE void log_softmax(float* x, size_t n) {
  float max_value = x[0];
  for (size_t i = 1; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += exp_approx(x[i] - max_value);
  // log(sum) via exp_approx's inverse is not needed in the hot path; std::log is exact enough and
  // runs once per row.
  const float log_sum = __builtin_logf(sum);
  for (size_t i = 0; i < n; ++i) x[i] = x[i] - max_value - log_sum;
}

}  // namespace tunecast::kernels
