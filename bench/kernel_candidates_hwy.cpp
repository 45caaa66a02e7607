// Highway's candidate for bench/kernel_candidates.cpp: the runtime's panel-packed product written
// with Highway ops, compiled by Highway for each of its targets in this one translation unit
// (foreach_target.h re-includes this file once per target, each time in a namespace N_<TARGET>
// under `#pragma GCC target`), and called through HWY_DYNAMIC_DISPATCH. The file itself is compiled with the sse2 level's flags (-march=x86-64),
// the portable baseline; Highway 1.0.3 then builds its fallback for a CPU with SSE2 only (it has no
// SSE2 target: EMU128, or SCALAR under GCC < 12.3), SSSE3, SSE4, AVX2 and AVX3.
//
// Same arithmetic as runtime/src/simd/kernels.h: every output sums k = 0, 1, ... in one chain of
// multiply-adds from zero (MulAdd: a fused multiply-add on AVX2/AVX3, a product then a sum on
// SSSE3/SSE4/EMU128/SCALAR), with the runtime's block shapes per vector width; so the bits should be the
// runtime's at the matching level.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_candidates_hwy.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include "kernel_candidates.h"

HWY_BEFORE_NAMESPACE();
namespace tunecast::bench::candidates {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kPanel = 16;  // kernels::kPanelWidth
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr int kLanes = static_cast<int>(HWY_LANES(float));
constexpr int kVecsPerPanel = static_cast<int>(kPanel) / kLanes;
// The runtime's block shapes for the same vector width and register count.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kBatchRows = 8, kBatchPanels = 2, kRowPanels = 4;
#elif HWY_TARGET == HWY_AVX2
constexpr int kBatchRows = 4, kBatchPanels = 1, kRowPanels = 4;
#else
constexpr int kBatchRows = 2, kBatchPanels = 1, kRowPanels = 2;
#endif

// Y[r][panels p] = X[r] . W for R rows and P panels, accumulators in registers.
template <int R, int P>
HWY_INLINE void Block(const float* HWY_RESTRICT x, size_t x_stride, size_t depth,
                      const float* HWY_RESTRICT w, size_t panel_stride, float* HWY_RESTRICT y,
                      size_t y_stride) {
  const D d;
  constexpr int H = kVecsPerPanel;
  V acc[R][P][H];
  HWY_UNROLL(16)
  for (int r = 0; r < R; ++r) {
    HWY_UNROLL(16)
    for (int p = 0; p < P; ++p) {
      HWY_UNROLL(16)
      for (int h = 0; h < H; ++h) acc[r][p][h] = hn::Zero(d);
    }
  }
  for (size_t k = 0; k < depth; ++k) {
    V wv[P][H];
    HWY_UNROLL(16)
    for (int p = 0; p < P; ++p) {
      HWY_UNROLL(16)
      for (int h = 0; h < H; ++h) wv[p][h] = hn::LoadU(d, w + p * panel_stride + k * kPanel + h * kLanes);
    }
    HWY_UNROLL(16)
    for (int r = 0; r < R; ++r) {
      const V xv = hn::Set(d, x[r * x_stride + k]);
      HWY_UNROLL(16)
      for (int p = 0; p < P; ++p) {
        HWY_UNROLL(16)
        for (int h = 0; h < H; ++h) acc[r][p][h] = hn::MulAdd(xv, wv[p][h], acc[r][p][h]);
      }
    }
  }
  HWY_UNROLL(16)
  for (int r = 0; r < R; ++r) {
    HWY_UNROLL(16)
    for (int p = 0; p < P; ++p) {
      HWY_UNROLL(16)
      for (int h = 0; h < H; ++h) {
        hn::StoreU(acc[r][p][h], d, y + r * y_stride + p * kPanel + h * kLanes);
      }
    }
  }
}

// Rows [0, rows) x panels [p0, p1) in blocks of R rows and P panels, panels outermost (a panel
// block stays in L1 while every row block reads it); rows left over go one at a time.
template <int R, int P>
HWY_INLINE void Blocks(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
                       size_t p0, size_t p1, float* y, size_t y_stride) {
  const size_t panel_stride = depth * kPanel;
  for (size_t p = p0; p + P <= p1; p += P) {
    const float* wp = w + p * panel_stride;
    size_t r = 0;
    for (; r + R <= rows; r += R) {
      Block<R, P>(x + r * x_stride, x_stride, depth, wp, panel_stride,
                  y + r * y_stride + p * kPanel, y_stride);
    }
    for (; r < rows; ++r) {
      Block<1, P>(x + r * x_stride, x_stride, depth, wp, panel_stride,
                  y + r * y_stride + p * kPanel, y_stride);
    }
  }
}

void Product(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
             size_t cols, float* y, size_t y_stride) {
  const size_t panels = (cols + kPanel - 1) / kPanel;
  const int panels_per_block = rows < static_cast<size_t>(kBatchRows) ? kRowPanels : kBatchPanels;
  const size_t p_full = panels / panels_per_block * panels_per_block;
  if (rows < static_cast<size_t>(kBatchRows)) {
    Blocks<1, kRowPanels>(x, x_stride, rows, depth, w, 0, p_full, y, y_stride);
  } else {
    Blocks<kBatchRows, kBatchPanels>(x, x_stride, rows, depth, w, 0, p_full, y, y_stride);
  }
  Blocks<1, 1>(x, x_stride, rows, depth, w, p_full, panels, y, y_stride);
}

int64_t Target() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace tunecast::bench::candidates
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tunecast::bench::candidates {

HWY_EXPORT(Product);
HWY_EXPORT(Target);

void hwy_product(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
                 size_t cols, float* y, size_t y_stride) {
  HWY_DYNAMIC_DISPATCH(Product)(x, x_stride, rows, depth, w, cols, y, y_stride);
}

int hwy_targets(int64_t* targets, int max_targets) {
  int n = 0;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (n < max_targets) targets[n++] = t;
  }
  return n;
}

#define KC_STR2(a) #a
#define KC_STR(a) KC_STR2(a)
const char* hwy_version() { return KC_STR(HWY_MAJOR) "." KC_STR(HWY_MINOR) "." KC_STR(HWY_PATCH); }

const char* hwy_target_name(int64_t target) { return hwy::TargetName(target); }

void hwy_force_target(int64_t target) { hwy::SetSupportedTargetsForTest(target); }

int64_t hwy_dispatched_target() { return HWY_DYNAMIC_DISPATCH(Target)(); }

}  // namespace tunecast::bench::candidates
#endif  // HWY_ONCE
