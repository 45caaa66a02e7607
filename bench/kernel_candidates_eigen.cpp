// Eigen 3.4's products for bench/kernel_candidates.cpp, compiled once per SIMD level with that
// level's flags (bench/kernel_candidates.cmake). The level comes from the target macros, as in
// runtime/src/simd/kernels.h.
//
// One definition rule: Eigen is header-only, so each level's object would define the same inline
// functions and template instantiations (gemv, gebp kernel, packing: weak symbols named
// Eigen::internal::...) compiled for different instruction sets, and the linker would keep one
// copy for all three levels (an AVX-512 body called by the sse2 level: wrong timings or SIGILL).
// So the token `Eigen` is a macro naming a namespace of this level's own: every Eigen symbol of
// this object is tunecast_kc_eigen_<level>::..., distinct from the other levels' (tunecast_kernel_candidates
// checks with nm that no Eigen symbol is left unrenamed). `#include <Eigen/Core>` is a
// header-name, not expanded; Eigen's own includes are quoted paths.
#include <cstddef>
#include <cstdio>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__FMA__)
#define KC_LEVEL avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define KC_LEVEL avx2
#else
#define KC_LEVEL sse2
#endif
#define KC_CAT2(a, b) a##b
#define KC_CAT(a, b) KC_CAT2(a, b)
#define KC_STR2(a) #a
#define KC_STR(a) KC_STR2(a)

namespace tunecast::bench::candidates {
// Failed eigen_assert calls (kernel_candidates.cpp counts them; nothing aborts).
void eigen_assert_failed(const char* what);
}  // namespace tunecast::bench::candidates

// Eigen's heap guard: with EIGEN_RUNTIME_NO_MALLOC, internal::aligned_malloc checks
// is_malloc_allowed() through eigen_assert, which a Release build (NDEBUG) compiles out; so
// eigen_assert reports to the bench instead (it costs a few compares per product call).
#define EIGEN_RUNTIME_NO_MALLOC
#define eigen_assert(x) \
  ((x) ? static_cast<void>(0) : ::tunecast::bench::candidates::eigen_assert_failed(#x))
#define EIGEN_DONT_PARALLELIZE
// Eigen (the namespace) renamed per level: see the comment at the top.
#define Eigen KC_CAT(tunecast_kc_eigen_, KC_LEVEL)
#include <Eigen/Core>

#include "kernel_candidates.h"

namespace tunecast::bench::candidates {
namespace KC_CAT(KC_LEVEL, _eigen) {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using Stride = Eigen::OuterStride<>;

// Y = X W, W row-major [depth][cols]. One row: Eigen's gemv (y^T = W^T x^T over the column-major
// view of W: columns of W^T scaled by x[k] and added; Eigen 3.4 sums k in blocks of 16 and adds
// each block's sum to y, so not the runtime's single chain). Rows: Eigen's blocked GEMM (packs X
// and W into its own panels on every call; one chain per output while depth <= kc).
void product(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
             size_t cols, float* y, size_t y_stride) {
  const auto n = static_cast<Eigen::Index>(cols), k = static_cast<Eigen::Index>(depth);
  Eigen::Map<const RowMajor> wm(w, k, n);
  if (rows == 1) {
    Eigen::Map<const RowVector> xv(x, k);
    Eigen::Map<RowVector> yv(y, n);
    yv.noalias() = xv * wm;
    return;
  }
  const auto m = static_cast<Eigen::Index>(rows);
  Eigen::Map<const RowMajor, Eigen::Unaligned, Stride> xm(x, m, k,
                                                           Stride(static_cast<Eigen::Index>(x_stride)));
  Eigen::Map<RowMajor, Eigen::Unaligned, Stride> ym(y, m, n, Stride(static_cast<Eigen::Index>(y_stride)));
  ym.noalias() = xm * wm;
}

#ifdef KC_EIGEN_SIZE_PROBE
}  // namespace
// Code-size probe (docs/benchmarks.md, "Kernel candidates"): built with -DKC_EIGEN_SIZE_PROBE,
// the object holds Y = X W through the public product alone (gemv for one row, GEMM for rows).
void size_probe(const float* x, size_t x_stride, size_t rows, size_t depth, const float* w,
                size_t cols, float* y, size_t y_stride) {
  product(x, x_stride, rows, depth, w, cols, y, y_stride);
}
}  // namespace KC_CAT(KC_LEVEL, _eigen)
}  // namespace tunecast::bench::candidates
#else
// The same with W stored transposed, wt [cols][depth]: one row is a row-major gemv (dot products
// of x with rows of wt, each summed in several partial sums and reduced), rows a GEMM.
void product_transposed(const float* x, size_t x_stride, size_t rows, size_t depth,
                        const float* wt, size_t cols, float* y, size_t y_stride) {
  const auto n = static_cast<Eigen::Index>(cols), k = static_cast<Eigen::Index>(depth);
  Eigen::Map<const RowMajor> wtm(wt, n, k);
  if (rows == 1) {
    Eigen::Map<const RowVector> xv(x, k);
    Eigen::Map<RowVector> yv(y, n);
    yv.noalias() = xv * wtm.transpose();
    return;
  }
  const auto m = static_cast<Eigen::Index>(rows);
  Eigen::Map<const RowMajor, Eigen::Unaligned, Stride> xm(x, m, k,
                                                           Stride(static_cast<Eigen::Index>(x_stride)));
  Eigen::Map<RowMajor, Eigen::Unaligned, Stride> ym(y, m, n, Stride(static_cast<Eigen::Index>(y_stride)));
  ym.noalias() = xm * wtm.transpose();
}

// Y = X W (W row-major) without the heap: Eigen's public product allocates GEMM's packing
// buffers on every call (on the heap beyond EIGEN_STACK_ALLOCATION_LIMIT, 128 KB: kc x nc
// floats here), and takes no buffer from the caller. So this calls the internal GEMM that the
// public product calls, with a level3_blocking whose buffers are the caller's `scratch`
// (scratch_floats(), 64-byte aligned). Internal API: not stable across Eigen versions.
class CallerBlocking : public Eigen::internal::level3_blocking<float, float> {
 public:
  // The blocking gemm_blocking_space computes for a row-major result (a transposed product:
  // Eigen's GEMM writes column-major).
  CallerBlocking(Eigen::Index rows, Eigen::Index depth, Eigen::Index cols, float* scratch) {
    m_mc = cols;
    m_nc = rows;
    m_kc = depth;
    Eigen::internal::computeProductBlockingSizes<float, float, 1>(m_kc, m_mc, m_nc, Eigen::Index{1});
    m_blockA = scratch;
    m_blockB = scratch == nullptr ? nullptr : scratch + a_floats();
  }
  Eigen::Index a_floats() const { return (m_mc * m_kc + 15) / 16 * 16; }
  Eigen::Index floats() const { return a_floats() + m_kc * m_nc; }
};

size_t scratch_floats(size_t rows, size_t depth, size_t cols) {
  const CallerBlocking b(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(depth),
                         static_cast<Eigen::Index>(cols), nullptr);
  return static_cast<size_t>(b.floats());
}

void product_caller_blocking(const float* x, size_t x_stride, size_t rows, size_t depth,
                             const float* w, size_t cols, float* y, size_t y_stride, float* scratch) {
  const auto m = static_cast<Eigen::Index>(rows), k = static_cast<Eigen::Index>(depth),
             n = static_cast<Eigen::Index>(cols);
  CallerBlocking blocking(m, k, n, scratch);
  // What the public product does: zero the destination, then GEMM adds alpha X W to it.
  Eigen::Map<RowMajor, Eigen::Unaligned, Stride>(y, m, n, Stride(static_cast<Eigen::Index>(y_stride))).setZero();
  Eigen::internal::general_matrix_matrix_product<Eigen::Index, float, Eigen::RowMajor, false, float,
                                                 Eigen::RowMajor, false, Eigen::RowMajor, 1>::
      run(m, n, k, x, static_cast<Eigen::Index>(x_stride), w, n, y, 1,
          static_cast<Eigen::Index>(y_stride), 1.0f, blocking);
}

void set_malloc_allowed(bool allowed) { Eigen::internal::set_is_malloc_allowed(allowed); }

void blocking(size_t rows, size_t depth, size_t cols, long* kc, long* mc, long* nc) {
  Eigen::Index k = static_cast<Eigen::Index>(depth), m = static_cast<Eigen::Index>(rows),
               n = static_cast<Eigen::Index>(cols);
  Eigen::internal::computeProductBlockingSizes<float, float>(k, m, n, Eigen::Index{1});
  *kc = static_cast<long>(k);
  *mc = static_cast<long>(m);
  *nc = static_cast<long>(n);
}

}  // namespace
}  // namespace KC_CAT(KC_LEVEL, _eigen)

const EigenLevel& KC_CAT(eigen_, KC_LEVEL)() {
  namespace here = KC_CAT(KC_LEVEL, _eigen);
  static const EigenLevel level = {KC_STR(KC_LEVEL),
                                   KC_STR(EIGEN_WORLD_VERSION) "." KC_STR(EIGEN_MAJOR_VERSION) "." KC_STR(EIGEN_MINOR_VERSION),
                                   Eigen::SimdInstructionSetsInUse(),
                                   &here::product, &here::product_transposed,
                                   &here::scratch_floats, &here::product_caller_blocking,
                                   &here::set_malloc_allowed, &here::blocking};
  return level;
}

}  // namespace tunecast::bench::candidates
#endif  // KC_EIGEN_SIZE_PROBE
