// The candidates of bench/kernel_candidates.cpp (issue 22: "measure the candidates in the bench,
// side by side"): Eigen 3.4 compiled once per SIMD level (kernel_candidates_eigen.cpp, one object
// per level, each in its own namespaces) and a Highway product with Highway's own run-time dispatch
// (kernel_candidates_hwy.cpp, one object holding every target).
//
// Every product here is Y[rows][cols] = X[rows][depth] . W[depth][cols], no bias, fp32, rows of X
// and Y `x_stride` / `y_stride` floats apart.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tunecast::bench::candidates {

// One SIMD level's Eigen: `w` plain row-major [depth][cols] (Map<RowMajor>, the blob's order
// before panel packing), or `wt` its transpose [cols][depth] (each output a dot product).
struct EigenLevel {
  const char* level;    // "sse2", "avx2", "avx512": the flags the object was compiled with
  const char* version;  // EIGEN_WORLD_VERSION.EIGEN_MAJOR_VERSION.EIGEN_MINOR_VERSION
  const char* simd;     // Eigen's SimdInstructionSetsInUse()
  void (*product)(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
                  size_t cols, float* y, size_t y_stride);
  void (*product_transposed)(const float* x, size_t x_stride, size_t rows, size_t depth,
                             const float* wt, size_t cols, float* y, size_t y_stride);
  // product() for rows > 1 without the heap: Eigen's internal GEMM with packing buffers in
  // `scratch` (scratch_floats(rows, depth, cols) floats, 64-byte aligned).
  size_t (*scratch_floats)(size_t rows, size_t depth, size_t cols);
  void (*product_caller_blocking)(const float* x, size_t x_stride, size_t rows, size_t depth,
                                  const float* w, size_t cols, float* y, size_t y_stride,
                                  float* scratch);
  // Eigen's run-time heap guard (EIGEN_RUNTIME_NO_MALLOC): set_is_malloc_allowed in this object.
  void (*set_malloc_allowed)(bool allowed);
  // Eigen's GEMM blocking for a product of this shape (kc depth, mc rows, nc cols per block).
  void (*blocking)(size_t rows, size_t depth, size_t cols, long* kc, long* mc, long* nc);
};

const EigenLevel& eigen_sse2();
const EigenLevel& eigen_avx2();
const EigenLevel& eigen_avx512();

// Highway: `w` panel-packed like the runtime's weights (kernels::kPanelWidth-float panels).
// hwy_product goes through HWY_DYNAMIC_DISPATCH (the target Highway chose, see hwy_force_target);
// hwy_targets lists the targets compiled into the object that this CPU runs (best first).
void hwy_product(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
                 size_t cols, float* y, size_t y_stride);
const char* hwy_version();  // HWY_MAJOR.HWY_MINOR.HWY_PATCH
int hwy_targets(int64_t* targets, int max_targets);
const char* hwy_target_name(int64_t target);
// Restricts Highway's dispatch to `target` (hwy::SetSupportedTargetsForTest); 0 restores it.
void hwy_force_target(int64_t target);
// The target HWY_DYNAMIC_DISPATCH runs now.
int64_t hwy_dispatched_target();

}  // namespace tunecast::bench::candidates
