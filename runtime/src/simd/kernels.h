// The arithmetic of every layer, as small pure functions over caller-owned buffers, compiled once
// per SIMD level (simd.h): each level's translation unit includes this header with its own target
// flags, and everything here lands in the inline namespace named after that level, so two levels
// never share an inline function's body. Callers reach the functions through layers.h (public),
// which dispatches to the level chosen at run time; the blob runtime and generated predictors
// therefore run the very same machine code.
//
// Bits: the runtime is compiled with -ffp-contract=off and every fused multiply-add is written
// here (madd/fmadd), so no compiler or -march decides the rounding. The FMA levels (avx2, avx512)
// run the same operations in the same order per output element and give identical bits; the sse2
// level has no FMA and rounds each product before adding it (docs/benchmarks.md, "Same results").
//
// Matrices used in products are packed in column panels of kPanelWidth floats (kernel_types.h).
// A product keeps several panels and rows in registers and streams the weights exactly once per
// block of rows.
//
// Product weights are `float` or `Half`: the products are templates over the weight type, a Half
// weight is widened to float when loaded (exactly), and the sums run in the same order either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tunecast/kernel_types.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

// The level this translation unit is compiled for, from the target flags (runtime/CMakeLists.txt
// compiles runtime/src/simd/level.cpp once per level).
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__FMA__) && defined(__F16C__)
#define TUNECAST_SIMD_NS avx512
#define TUNECAST_SIMD_FMA 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define TUNECAST_SIMD_NS avx2
#define TUNECAST_SIMD_FMA 1
#else
#define TUNECAST_SIMD_NS sse2
#define TUNECAST_SIMD_FMA 0
#endif

namespace tunecast::kernels {
inline namespace TUNECAST_SIMD_NS {

#if defined(__GNUC__) || defined(__clang__)
#define TUNECAST_INLINE inline __attribute__((always_inline))
// Whole-array loops: one shared copy each rather than one per caller (the runtime's code size
// goal); a call costs nothing next to the loop.
#define TUNECAST_OUT_OF_LINE __attribute__((noinline))
#define TUNECAST_RESTRICT __restrict__
// Loops over a block's rows and panels unroll completely, so its accumulators live in registers.
#define TUNECAST_UNROLL _Pragma("GCC unroll 16")
typedef float Vec4 __attribute__((vector_size(16), aligned(4)));
typedef float Vec8 __attribute__((vector_size(32), aligned(4)));
typedef float Vec16 __attribute__((vector_size(64), aligned(4)));
typedef float Vec4Alias __attribute__((vector_size(16), aligned(4), may_alias));
typedef float Vec8Alias __attribute__((vector_size(32), aligned(4), may_alias));
typedef float Vec16Alias __attribute__((vector_size(64), aligned(4), may_alias));
#else
#error "tunecast kernels need GCC or Clang vector extensions"
#endif

// Vectors move through may_alias, 4-byte-aligned vector types (unaligned-safe plain vector
// loads; memcpy into the accumulator arrays made GCC keep them in memory on AVX2 targets).
//
// A vector is the level's register: 16 floats (avx512, 32 registers: blocks of 8 rows x 2
// panels), 8 (avx2, 16 registers: 4 rows x 1 panel) or 4 (sse2, 16 registers: 2 rows x 1 panel).
// The vector width and block shape change no bit: each lane still sums bias, then k = 0, 1, ...
#if defined(__AVX512F__) && TUNECAST_SIMD_FMA
typedef Vec16 PanelVec;
typedef Vec16Alias PanelVecAlias;
constexpr int kBatchRows = 8;    // rows per block for batches
constexpr int kBatchPanels = 2;  // panels per block for batches
constexpr int kFewRows = 2;      // rows per block below kBatchRows
constexpr int kRowPanels = 4;    // panels per block below kBatchRows (weights stream from L2)
#elif TUNECAST_SIMD_FMA
typedef Vec8 PanelVec;
typedef Vec8Alias PanelVecAlias;
constexpr int kBatchRows = 4;
constexpr int kBatchPanels = 1;
constexpr int kFewRows = 2;
constexpr int kRowPanels = 4;
#else
typedef Vec4 PanelVec;
typedef Vec4Alias PanelVecAlias;
constexpr int kBatchRows = 2;
constexpr int kBatchPanels = 1;
constexpr int kFewRows = 1;
constexpr int kRowPanels = 2;
#endif
constexpr int kVecsPerPanel = kPanelWidth / static_cast<int>(sizeof(PanelVec) / sizeof(float));
constexpr int kVecWidth = kPanelWidth / kVecsPerPanel;
typedef int32_t LaneInts __attribute__((vector_size(sizeof(PanelVec))));

// A broadcast, not `PanelVec{} + value`: that add is real arithmetic under strict IEEE rules
// (-0 + 0 is +0), so the compiler kept an add per row and depth step in the products.
TUNECAST_INLINE void splat(float value, PanelVec* out) {
#if defined(__AVX512F__) && TUNECAST_SIMD_FMA
  *out = (PanelVec)_mm512_set1_ps(value);
#elif TUNECAST_SIMD_FMA
  *out = (PanelVec)_mm256_set1_ps(value);
#elif defined(__SSE2__)
  *out = (PanelVec)_mm_set1_ps(value);
#else
  for (int i = 0; i < kVecWidth; ++i) (*out)[i] = value;
#endif
}

// a * b + c: one rounding on the FMA levels, two (product, then sum) on sse2. Written out because
// the runtime forbids the compiler to contract on its own (-ffp-contract=off).
TUNECAST_INLINE PanelVec fmadd(PanelVec a, PanelVec b, PanelVec c) {
#if defined(__AVX512F__) && TUNECAST_SIMD_FMA
  return (PanelVec)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif TUNECAST_SIMD_FMA
  return (PanelVec)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  return a * b + c;
#endif
}
TUNECAST_INLINE PanelVec fmadd(PanelVec a, float b, PanelVec c) {
  PanelVec bv;
  splat(b, &bv);
  return fmadd(a, bv, c);
}
TUNECAST_INLINE PanelVec fmadd(PanelVec a, float b, float c) {
  PanelVec cv;
  splat(c, &cv);
  return fmadd(a, b, cv);
}
TUNECAST_INLINE float fmadd(float a, float b, float c) {
#if TUNECAST_SIMD_FMA
  return __builtin_fmaf(a, b, c);  // one instruction with -mfma
#else
  return a * b + c;
#endif
}

// --- weight types ------------------------------------------------------------------------------
using ::tunecast::kernels::Half;

TUNECAST_INLINE float weight_value(float w) { return w; }
TUNECAST_INLINE float weight_value(Half w) { return half_to_float(w); }

// One vector of kVecWidth consecutive weights, widened to float.
TUNECAST_INLINE void load_weights(const float* w, PanelVec* out) {
  *out = *reinterpret_cast<const PanelVecAlias*>(w);
}
TUNECAST_INLINE void load_weights(const Half* w, PanelVec* out) {
#if defined(__AVX512F__) && TUNECAST_SIMD_FMA
  // The maskz form with every lane set: _mm512_cvtph_ps trips GCC 12's -Wmaybe-uninitialized.
  const __m512 v =
      _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  std::memcpy(out, &v, sizeof v);
#elif TUNECAST_SIMD_FMA
  const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  std::memcpy(out, &v, sizeof v);
#elif defined(__SSE2__)
  // half_to_float on four lanes in integer SSE2 (no F16C): the same exact bits.
  const __m128i raw = _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w)),
                                         _mm_setzero_si128());
  LaneInts h;
  std::memcpy(&h, &raw, sizeof h);
  const LaneInts sign = (h & 0x8000) << 16;
  const LaneInts exponent = (h >> 10) & 0x1f;
  const LaneInts mantissa = h & 0x3ff;
  const LaneInts normal = sign | ((exponent + 112) << 23) | (mantissa << 13);
  const LaneInts special = sign | 0x7f800000 | (mantissa << 13);
  const PanelVec tiny = __builtin_convertvector(mantissa, PanelVec) * 5.9604644775390625e-8f;
  const LaneInts subnormal = (LaneInts)tiny | sign;
  const LaneInts bits = exponent == 0 ? subnormal : (exponent == 31 ? special : normal);
  *out = (PanelVec)bits;
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
  TUNECAST_UNROLL
  for (int r = 0; r < R; ++r) {
    TUNECAST_UNROLL
    for (int p = 0; p < P; ++p) {
      TUNECAST_UNROLL
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
    TUNECAST_UNROLL
    for (int p = 0; p < P; ++p) {
      TUNECAST_UNROLL
      for (int h = 0; h < H; ++h) {
        load_weights(w + p * panel_stride + k * kPanelWidth + h * kVecWidth, &wv[p][h]);
      }
    }
    TUNECAST_UNROLL
    for (int r = 0; r < R; ++r) {
      PanelVec xv;
      splat(x[r * x_stride + k], &xv);
      TUNECAST_UNROLL
      for (int p = 0; p < P; ++p) {
        TUNECAST_UNROLL
        for (int h = 0; h < H; ++h) acc[r][p][h] = fmadd(xv, wv[p][h], acc[r][p][h]);
      }
    }
  }
  TUNECAST_UNROLL
  for (int r = 0; r < R; ++r) {
    TUNECAST_UNROLL
    for (int p = 0; p < P; ++p) {
      TUNECAST_UNROLL
      for (int h = 0; h < H; ++h) {
        *reinterpret_cast<PanelVecAlias*>(y + r * y_stride + p * kPanelWidth + h * kVecWidth) =
            acc[r][p][h];
      }
    }
  }
}

// Rows [r0, r1) x panels [p0, p1) in blocks of R rows and exactly P panels (p1 - p0 a multiple
// of P); with `row_remainder`, the rows left after the last whole block go one at a time.
template <int R, int P, bool row_remainder = false, typename W>
TUNECAST_INLINE void matmul_blocks(const float* x, size_t x_stride, size_t r0, size_t r1,
                                   size_t depth, const W* w, size_t p0, size_t p1,
                                   const float* bias, float* y, size_t y_stride, bool accumulate) {
  const size_t panel_stride = depth * kPanelWidth;
  // Panels outermost: a block of panels stays in L1 while every row block reads it, the
  // remainder rows included.
  for (size_t p = p0; p < p1; p += P) {
    const W* wp = w + p * panel_stride;
    const float* bp = bias ? bias + p * kPanelWidth : nullptr;
    size_t r = r0;
    for (; r + R <= r1; r += R) {
      matmul_block<R, P, W>(x + r * x_stride, x_stride, depth, wp, panel_stride, bp,
                            y + r * y_stride + p * kPanelWidth, y_stride, accumulate);
    }
    if (row_remainder) {
      for (; r < r1; ++r) {
        matmul_block<1, P, W>(x + r * x_stride, x_stride, depth, wp, panel_stride, bp,
                              y + r * y_stride + p * kPanelWidth, y_stride, accumulate);
      }
    }
  }
}

// Any rows [r0, r1) x panels [p0, p1): blocks of kFewRows rows x kRowPanels panels (greedy, the
// first beam-search steps: rows share wide panel blocks streamed from L2), remainders narrower.
// Also takes a batch's odd last panel, so a build holds 6 block shapes rather than 8 (code size).
template <typename W>
TUNECAST_OUT_OF_LINE void matmul_few_rows(const float* x, size_t x_stride, size_t r0, size_t r1,
                                          size_t depth, const W* w, size_t p0, size_t p1,
                                          const float* bias, float* y, size_t y_stride,
                                          bool accumulate) {
  const size_t r_full = r0 + (r1 - r0) / kFewRows * kFewRows;
  const size_t p_full = p0 + (p1 - p0) / kRowPanels * kRowPanels;
  matmul_blocks<kFewRows, kRowPanels>(x, x_stride, r0, r_full, depth, w, p0, p_full, bias, y,
                                      y_stride, accumulate);
  matmul_blocks<kFewRows, 1>(x, x_stride, r0, r_full, depth, w, p_full, p1, bias, y, y_stride,
                             accumulate);
  if (kFewRows > 1) {
    matmul_blocks<1, kRowPanels>(x, x_stride, r_full, r1, depth, w, p0, p_full, bias, y, y_stride,
                                 accumulate);
    matmul_blocks<1, 1>(x, x_stride, r_full, r1, depth, w, p_full, p1, bias, y, y_stride,
                        accumulate);
  }
}

// Y[rows][padded cols] (+)= X[rows][depth] . W_packed[depth][cols] (+ bias).
// `y` rows are `y_stride` floats apart and must have room for the padded width
// (ceil(cols / kPanelWidth) * kPanelWidth); `bias` must be padded likewise (or null).
template <typename W>
TUNECAST_OUT_OF_LINE void matmul(const float* x, size_t x_stride, size_t rows, size_t depth, const W* w,
                   size_t cols, const float* bias, float* y, size_t y_stride, bool accumulate) {
  const size_t panels = (cols + kPanelWidth - 1) / kPanelWidth;
  if (rows < static_cast<size_t>(kBatchRows)) {
    matmul_few_rows(x, x_stride, 0, rows, depth, w, 0, panels, bias, y, y_stride, accumulate);
    return;
  }
  const size_t p_full = panels / kBatchPanels * kBatchPanels;
  matmul_blocks<kBatchRows, kBatchPanels, true>(x, x_stride, 0, rows, depth, w, 0, p_full, bias, y,
                                                y_stride, accumulate);
  if (p_full < panels) {
    matmul_few_rows(x, x_stride, 0, rows, depth, w, p_full, panels, bias, y, y_stride, accumulate);
  }
}

// Rows of x that are all zero add nothing: the product skips them (MIOpen's KTN input is a
// diagonal matrix, so its first Dense layer touches one weight row per time step).
template <typename W>
TUNECAST_OUT_OF_LINE void matmul_sparse_rows(const float* x, size_t x_stride, size_t rows, size_t depth,
                               const W* w, size_t cols, const float* bias, float* y,
                               size_t y_stride) {
  const size_t panels = (cols + kPanelWidth - 1) / kPanelWidth;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t p = 0; p < panels; ++p) {
      for (int h = 0; h < kVecsPerPanel; ++h) {
        const size_t col = p * kPanelWidth + h * kVecWidth;
        PanelVec acc = bias ? *reinterpret_cast<const PanelVecAlias*>(bias + col) : PanelVec{};
        for (size_t k = 0; k < depth; ++k) {
          const float xk = x[r * x_stride + k];
          if (xk == 0.0f) continue;
          PanelVec wv, xv;
          load_weights(w + p * depth * kPanelWidth + k * kPanelWidth + h * kVecWidth, &wv);
          splat(xk, &xv);
          acc = fmadd(xv, wv, acc);
        }
        *reinterpret_cast<PanelVecAlias*>(y + r * y_stride + col) = acc;
      }
    }
  }
}

// --- element-wise functions ------------------------------------------------------------------
// Written on whole vectors (kVecWidth lanes; a row's last partial vector goes through zero-filled
// lanes) rather than left to the auto-vectorizer: one copy of each polynomial instead of a vector
// loop, a narrower vector epilogue and a scalar epilogue per call site (the runtime's code size
// goal), and the same speed at -O2 as at -O3. Lanes are independent, so no bit depends on where a
// row starts or ends.
// Lanes [0, n) of x into *v (the rest zero), n <= kVecWidth.
TUNECAST_INLINE void load_lanes(const float* x, size_t n, PanelVec* v) {
  if (n == static_cast<size_t>(kVecWidth)) {
    *v = *reinterpret_cast<const PanelVecAlias*>(x);
    return;
  }
  *v = PanelVec{};
  for (size_t i = 0; i < n; ++i) (*v)[i] = x[i];
}

TUNECAST_INLINE void store_lanes(const PanelVec& v, size_t n, float* x) {
  if (n == static_cast<size_t>(kVecWidth)) {
    *reinterpret_cast<PanelVecAlias*>(x) = v;
    return;
  }
  for (size_t i = 0; i < n; ++i) x[i] = v[i];
}

// Lanes in the vector starting at i of a row of n values.
TUNECAST_INLINE size_t lanes_at(size_t i, size_t n) {
  return n - i < static_cast<size_t>(kVecWidth) ? n - i : static_cast<size_t>(kVecWidth);
}

// max(min(x, hi), lo) lane by lane, NaN becoming hi on every path (min/max return their second
// operand for NaN). One instruction each where the ISA has one: a ternary compiles to a compare
// and a blend.
TUNECAST_INLINE void clamp_vec(float lo, float hi, PanelVec* v) {
#if defined(__AVX512F__) && TUNECAST_SIMD_FMA
  // Full-mask forms: GCC 12's unmasked ones pass an "undefined" vector that -Wmaybe-uninitialized
  // reports at every call site. The mask of all lanes compiles to the plain instruction.
  const __m512 lo_v = _mm512_set1_ps(lo);
  const __m512 y = _mm512_mask_min_ps(lo_v, 0xffff, (__m512)*v, _mm512_set1_ps(hi));
  *v = (PanelVec)_mm512_mask_max_ps(lo_v, 0xffff, y, lo_v);
#elif TUNECAST_SIMD_FMA
  *v = (PanelVec)_mm256_max_ps(_mm256_min_ps((__m256)*v, _mm256_set1_ps(hi)), _mm256_set1_ps(lo));
#elif defined(__SSE2__)
  *v = (PanelVec)_mm_max_ps(_mm_min_ps((__m128)*v, _mm_set1_ps(hi)), _mm_set1_ps(lo));
#else
  PanelVec lo_v, hi_v;
  splat(lo, &lo_v);
  splat(hi, &hi_v);
  *v = *v < hi_v ? *v : hi_v;
  *v = *v > lo_v ? *v : lo_v;
#endif
}

// exp with a Cephes-style range reduction and degree-6 polynomial (about 2 ulp on [-87, 88]).
// Every path gives the same bits: vscalefps is the exact p * 2^n the integer path builds.
TUNECAST_INLINE void exp_vec(PanelVec* v) {
  PanelVec x = *v;
  clamp_vec(-87.0f, 88.0f, &x);
  const float kLog2e = 1.44269504088896341f;
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to nearest
  const PanelVec n = fmadd(x, kLog2e, kRound) - kRound;
  PanelVec r = fmadd(n, -0.693359375f, x);
  r = fmadd(n, 2.12194440e-4f, r);
  PanelVec p = fmadd(r, 1.9875691500e-4f, 1.3981999507e-3f);
  PanelVec c;
  splat(8.3334519073e-3f, &c);
  p = fmadd(p, r, c);
  splat(4.1665795894e-2f, &c);
  p = fmadd(p, r, c);
  splat(1.6666665459e-1f, &c);
  p = fmadd(p, r, c);
  splat(5.0000001201e-1f, &c);
  p = fmadd(p, r, c);
  p = fmadd(p * r, r, r) + 1.0f;
#if defined(__AVX512F__) && TUNECAST_SIMD_FMA
  *v = (PanelVec)_mm512_mask_scalef_ps((__m512)p, 0xffff, (__m512)p, (__m512)n);  // see clamp_vec
#else
  const LaneInts bits = (__builtin_convertvector(n, LaneInts) + 127) << 23;
  *v = p * (PanelVec)bits;  // a vector cast reinterprets the bits
#endif
}

TUNECAST_INLINE void sigmoid_vec(PanelVec* v) {
  PanelVec e = -*v;
  exp_vec(&e);
  *v = 1.0f / (1.0f + e);
}

TUNECAST_INLINE void tanh_vec(PanelVec* v) {
  PanelVec e = -2.0f * *v;
  exp_vec(&e);
  *v = 2.0f / (1.0f + e) - 1.0f;
}

using ::tunecast::kernels::Act;

// Element-wise activations (kSoftmax is a row operation: see activate_rows).
TUNECAST_INLINE void activate_vec(Act act, PanelVec* v) {
  const PanelVec zero = PanelVec{};
  switch (act) {
    case Act::kRelu: *v = *v > zero ? *v : zero; break;
    case Act::kTanh: tanh_vec(v); break;
    case Act::kSigmoid: sigmoid_vec(v); break;
    case Act::kHardSigmoid: {
      PanelVec one;
      splat(1.0f, &one);
      const PanelVec y = fmadd(*v, 0.2f, 0.5f);
      *v = y < zero ? zero : (y > one ? one : y);
      break;
    }
    default: break;
  }
}

// activate_vec on x[0..n), n <= kVecWidth, in place. Out of line: one shared copy of every
// activation (a call per vector costs little next to exp). It takes floats, not a vector: clang
// 14's AddressSanitizer places an over-aligned local whose address escapes at a 32-byte boundary.
inline TUNECAST_OUT_OF_LINE void activate_lanes(Act act, float* x, size_t n) {
  PanelVec v;
  load_lanes(x, n, &v);
  activate_vec(act, &v);
  store_lanes(v, n, x);
}

// Sets *max_value to the largest of x[0..n) and returns the sum of exp(x[i] - max) in index
// order; with `keep`, x[i] becomes exp(x[i] - max).
TUNECAST_INLINE float sum_exp_shifted(float* x, size_t n, bool keep, float* max_value) {
  float top = x[0];
  for (size_t i = 1; i < n; ++i) top = x[i] > top ? x[i] : top;
  float sum = 0.0f;
  for (size_t i = 0; i < n; i += kVecWidth) {
    const size_t m = lanes_at(i, n);
    PanelVec v;
    load_lanes(x + i, m, &v);
    v -= top;
    exp_vec(&v);
    if (keep) store_lanes(v, m, x + i);
    for (size_t j = 0; j < m; ++j) sum += v[j];
  }
  *max_value = top;
  return sum;
}

// Softmax over n values in place (max-subtracted).
inline TUNECAST_OUT_OF_LINE void softmax(float* x, size_t n) {
  float max_value;
  const float inv = 1.0f / sum_exp_shifted(x, n, true, &max_value);
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

// Applies `act` to rows x cols values (row stride `stride`).
inline TUNECAST_OUT_OF_LINE void activate_rows(Act act, float* x, size_t rows, size_t cols, size_t stride) {
  if (act == Act::kLinear) return;
  for (size_t r = 0; r < rows; ++r) {
    float* row = x + r * stride;
    if (act == Act::kSoftmax) {
      softmax(row, cols);
      continue;
    }
    for (size_t j = 0; j < cols; j += kVecWidth) activate_lanes(act, row + j, lanes_at(j, cols));
  }
}

// One LSTM cell update for one row, from pre-activations z = x W + h U + b laid out
// [i | f | g | o] (units each). Writes c and h in place.
inline TUNECAST_OUT_OF_LINE void lstm_cell(const float* TUNECAST_RESTRICT z, size_t units, float* TUNECAST_RESTRICT h,
                      float* TUNECAST_RESTRICT c, Act gate_act, Act cell_act) {
  const bool keras_default = gate_act == Act::kSigmoid && cell_act == Act::kTanh;
  for (size_t j = 0; j < units; j += kVecWidth) {
    const size_t m = lanes_at(j, units);
    PanelVec i, f, g, o, cv;
    float lanes[4][kVecWidth];  // other activations run on plain floats (see activate_lanes)
    if (keras_default) {  // inlined: the common case pays no call per vector
      load_lanes(z + j, m, &i);
      load_lanes(z + units + j, m, &f);
      load_lanes(z + 2 * units + j, m, &g);
      load_lanes(z + 3 * units + j, m, &o);
      sigmoid_vec(&i);
      sigmoid_vec(&f);
      tanh_vec(&g);
      sigmoid_vec(&o);
    } else {
      for (int q = 0; q < 4; ++q) {  // gates i, f, g, o
        std::memcpy(lanes[q], z + q * units + j, m * sizeof(float));
        activate_lanes(q == 2 ? cell_act : gate_act, lanes[q], m);
      }
      load_lanes(lanes[0], m, &i);
      load_lanes(lanes[1], m, &f);
      load_lanes(lanes[2], m, &g);
      load_lanes(lanes[3], m, &o);
    }
    load_lanes(c + j, m, &cv);
    cv = fmadd(f, cv, i * g);
    store_lanes(cv, m, c + j);
    if (keras_default) {
      tanh_vec(&cv);
    } else {
      store_lanes(cv, m, lanes[0]);
      activate_lanes(cell_act, lanes[0], m);
      load_lanes(lanes[0], m, &cv);
    }
    store_lanes(o * cv, m, h + j);
  }
}

// log-softmax of n values in place; values become log-probabilities.
inline TUNECAST_OUT_OF_LINE void log_softmax(float* x, size_t n) {
  float max_value;
  // std::log runs once per row.
  const float log_sum = __builtin_logf(sum_exp_shifted(x, n, false, &max_value));
  for (size_t i = 0; i < n; ++i) x[i] = x[i] - max_value - log_sum;
}

// y[0..n) += x[0..n).
TUNECAST_INLINE void add_to(const float* TUNECAST_RESTRICT x, size_t n, float* TUNECAST_RESTRICT y) {
  for (size_t i = 0; i < n; i += kVecWidth) {
    const size_t m = lanes_at(i, n);
    PanelVec a, b;
    load_lanes(x + i, m, &a);
    load_lanes(y + i, m, &b);
    store_lanes(a + b, m, y + i);
  }
}

}  // inline namespace TUNECAST_SIMD_NS
}  // namespace tunecast::kernels
