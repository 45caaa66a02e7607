// The blocked matrix multiply of blocked_gemm.h.
#include "blocked_gemm.h"

#include <algorithm>
#include <cmath>

namespace byo {

namespace {

// acc[0..nb) += sum over u < U of a[u] * b_rows[u][0..nb): U rows of the packed panel at once.
template <int U>
inline void update_row(float* acc, const float* a, const float* panel, int panel_stride, int nb) {
  if (U == 1) {
    const float a0 = a[0];
    for (int j = 0; j < nb; ++j) acc[j] += a0 * panel[j];
  } else if (U == 2) {
    const float a0 = a[0], a1 = a[1];
    const float* b0 = panel;
    const float* b1 = panel + panel_stride;
    for (int j = 0; j < nb; ++j) acc[j] += a0 * b0[j] + a1 * b1[j];
  } else {
    const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const float* b0 = panel;
    const float* b1 = panel + panel_stride;
    const float* b2 = panel + 2 * panel_stride;
    const float* b3 = panel + 3 * panel_stride;
    for (int j = 0; j < nb; ++j) acc[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
  }
}

template <int U>
void tile_product(float* acc, int mb, int nb, int kb, const float* a, int lda, const float* panel) {
  for (int i = 0; i < mb; ++i) {
    float* acc_row = acc + i * nb;
    const float* a_row = a + static_cast<std::ptrdiff_t>(i) * lda;
    int p = 0;
    for (; p + U <= kb; p += U) update_row<U>(acc_row, a_row + p, panel + p * nb, nb, nb);
    for (; p < kb; ++p) update_row<1>(acc_row, a_row + p, panel + p * nb, nb, nb);
  }
}

}  // namespace

const char* status_name(GemmStatus status) {
  switch (status) {
    case GemmStatus::kOk:
      return "ok";
    case GemmStatus::kBadConfig:
      return "bad config";
    case GemmStatus::kScratchTooSmall:
      return "the B panel does not fit its buffer";
  }
  return "?";
}

GemmStatus blocked_gemm(int m, int n, int k, const float* a, const float* b, float* c, const GemmConfig& config) {
  const int tm = config.tile_m, tn = config.tile_n, tk = config.tile_k, unroll = config.unroll;
  if (tm <= 0 || tn <= 0 || tk <= 0 || (unroll != 1 && unroll != 2 && unroll != 4) ||
      static_cast<long long>(tm) * tn > kAccumulatorFloats)
    return GemmStatus::kBadConfig;
  if (static_cast<long long>(tk) * tn > kPanelFloats) return GemmStatus::kScratchTooSmall;
  alignas(64) float acc[kAccumulatorFloats];
  alignas(64) float panel[kPanelFloats];
  for (int j0 = 0; j0 < n; j0 += tn) {
    const int nb = std::min(tn, n - j0);
    for (int p0 = 0; p0 < k; p0 += tk) {
      const int kb = std::min(tk, k - p0);
      for (int p = 0; p < kb; ++p)  // pack B[p0.., j0..] into kb rows of nb floats
        std::copy_n(b + static_cast<std::ptrdiff_t>(p0 + p) * n + j0, nb, panel + p * nb);
      for (int i0 = 0; i0 < m; i0 += tm) {
        const int mb = std::min(tm, m - i0);
        for (int i = 0; i < mb; ++i) {
          float* row = c + static_cast<std::ptrdiff_t>(i0 + i) * n + j0;
          if (p0 == 0)
            std::fill_n(acc + i * nb, nb, 0.0f);
          else
            std::copy_n(row, nb, acc + i * nb);
        }
        const float* a_tile = a + static_cast<std::ptrdiff_t>(i0) * k + p0;
        if (unroll == 1)
          tile_product<1>(acc, mb, nb, kb, a_tile, k, panel);
        else if (unroll == 2)
          tile_product<2>(acc, mb, nb, kb, a_tile, k, panel);
        else
          tile_product<4>(acc, mb, nb, kb, a_tile, k, panel);
        for (int i = 0; i < mb; ++i) std::copy_n(acc + i * nb, nb, c + static_cast<std::ptrdiff_t>(i0 + i) * n + j0);
      }
    }
  }
  return GemmStatus::kOk;
}

void naive_gemm(int m, int n, int k, const float* a, const float* b, float* c) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p)
        sum +=
            static_cast<double>(a[static_cast<std::ptrdiff_t>(i) * k + p]) * b[static_cast<std::ptrdiff_t>(p) * n + j];
      c[static_cast<std::ptrdiff_t>(i) * n + j] = static_cast<float>(sum);
    }
}

double max_error_ratio(int m, int n, int k, const float* c, const float* reference) {
  // Inputs in [-1, 1]: a float sum of k products is within about k * 1e-5 of the exact one.
  const double tolerance = 1e-5 * (k > 0 ? k : 1);
  double worst = 0;
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(m) * n; ++i) {
    const double ratio = std::fabs(static_cast<double>(c[i]) - reference[i]) / tolerance;
    if (!(ratio <= worst)) worst = ratio == ratio ? ratio : HUGE_VAL;  // NaN: infinitely wrong
  }
  return worst;
}

}  // namespace byo
