// This core's arithmetic floors, measured with the widest vectors of the SIMD level this file is
// compiled for (bench/CMakeLists.txt builds it once per level, each into its own namespace): the
// bench reports each figure against the best level the CPU runs, whatever level the runtime uses.
// Contraction is on here (the probes want the FMA unit); the runtime itself never contracts.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "floors.h"

#if defined(__AVX512F__)
#define TUNECAST_FLOOR_LANES 16
#define TUNECAST_FLOOR_FN measure_floor_avx512
#elif defined(__AVX2__)
#define TUNECAST_FLOOR_LANES 8
#define TUNECAST_FLOOR_FN measure_floor_avx2
#else
#define TUNECAST_FLOOR_LANES 4
#define TUNECAST_FLOOR_FN measure_floor_sse2
#endif

namespace tunecast::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <int Lanes, int Chains>
double fma_rate_with(long iterations) {
  typedef float V __attribute__((vector_size(Lanes * 4)));
  V acc[Chains];
  for (int i = 0; i < Chains; ++i) acc[i] = V{} + 0.001f * static_cast<float>(i);
  V m = V{} + 0.999999f;
  V a = V{} + 1e-7f;
  asm volatile("" : "+x"(m), "+x"(a));  // opaque: no constant folding of the chains
  const auto t0 = Clock::now();
  for (long it = 0; it < iterations; ++it) {
    for (int i = 0; i < Chains; ++i) acc[i] = acc[i] * m + a;
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  for (int i = 0; i < Chains; ++i) asm volatile("" : : "x"(acc[i]));
  return static_cast<double>(iterations) * Chains * Lanes / ns;
}


// Timing scaffold of the one-row probes: the best multiply-adds/ns over `passes` calls of
// `pass`, each doing `macs` multiply-adds.
template <typename F>
double best_rate(int passes, double macs, F pass) {
  double best = 0;
  for (int i = 0; i < passes; ++i) {
    const auto t0 = Clock::now();
    pass();
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    best = std::max(best, macs / ns);
  }
  return best;
}

// `count` 4-byte words of `storage` from a 64-byte boundary. (A vector type used as a template
// argument loses its vector attribute, so the probes carve their matrices from plain words.)
uint32_t* aligned_words(std::vector<uint32_t>* storage, size_t count) {
  storage->assign(count + 16, 0);
  const uintptr_t misalignment = reinterpret_cast<uintptr_t>(storage->data()) / 4 % 16;
  return storage->data() + (16 - misalignment) % 16;
}

constexpr size_t kProbeDepth = 128, kProbeCols = 512, kProbeReps = 64;

// A one-row product's ceiling: y += x[k] * W[k][..] over a 256 KB matrix (one 128 x 512 LSTM
// matrix: too big for L1, held in L2), every weight used once per pass, 4 independent panel
// accumulators as in the runtime's kernel. Greedy decoding is made of such products, so this rate
// (not the FMA peak) bounds it. Returns fp32 multiply-adds per nanosecond.
// With depth 4096 (8 MiB, beyond any core's L2) the same loop streams from L3: the bound of models
// whose weights do not fit L2 (the shipped predictors: 3.6-4.2 MB).
template <int Lanes>
double one_row_rate_with(int passes, size_t depth = kProbeDepth, size_t reps = kProbeReps) {
  typedef float V __attribute__((vector_size(Lanes * 4)));
  constexpr size_t kBlock = 4;  // column vectors per block
  std::vector<uint32_t> storage;
  V* const w = reinterpret_cast<V*>(aligned_words(&storage, depth * kProbeCols));
  for (size_t i = 0; i < depth * kProbeCols / Lanes; ++i) w[i] = V{} + 1e-3f * static_cast<float>(i % 7);
  const std::vector<float> x(depth, 0.5f);
  return best_rate(passes, double(reps) * depth * kProbeCols, [&] {
    for (size_t rep = 0; rep < reps; ++rep) {
      for (size_t p = 0; p < kProbeCols / Lanes; p += kBlock) {  // blocks of panels, depth inner
        V acc[kBlock] = {};
        const V* wp = w + p * depth;
        for (size_t k = 0; k < depth; ++k) {
          for (size_t b = 0; b < kBlock; ++b) acc[b] += x[k] * wp[b * depth + k];
        }
        for (size_t b = 0; b < kBlock; ++b) asm volatile("" : : "x"(acc[b]));
      }
    }
  });
}

// The same product with bf16 weights, two columns per 32-bit word widened by a shift and a mask
// (no conversion instruction): what 16-bit storage could stream. Not used by the runtime: bf16
// weights change predictions (docs/benchmarks.md); printed for the record.
template <int Lanes>
double one_row_bf16_rate_with(int passes) {
  typedef float V __attribute__((vector_size(Lanes * 4)));
  typedef int32_t VI __attribute__((vector_size(Lanes * 4)));
  constexpr size_t kBlock = 2;  // word vectors per block: 4 column vectors
  std::vector<uint32_t> storage;
  VI* const w = reinterpret_cast<VI*>(aligned_words(&storage, kProbeDepth * kProbeCols / 2));
  for (size_t i = 0; i < kProbeDepth * kProbeCols / 2 / Lanes; ++i) w[i] = VI{} + 0x3c003c00;
  const std::vector<float> x(kProbeDepth, 0.5f);
  return best_rate(passes, double(kProbeReps) * kProbeDepth * kProbeCols, [&] {
    for (size_t rep = 0; rep < kProbeReps; ++rep) {
      for (size_t p = 0; p < kProbeCols / 2 / Lanes; p += kBlock) {
        V acc[2 * kBlock] = {};
        const VI* wp = w + p * kProbeDepth;
        for (size_t k = 0; k < kProbeDepth; ++k) {
          for (size_t b = 0; b < kBlock; ++b) {
            const VI v = wp[b * kProbeDepth + k];
            acc[2 * b] += x[k] * (V)(v << 16);
            acc[2 * b + 1] += x[k] * (V)(v & static_cast<int32_t>(0xffff0000u));
          }
        }
        for (size_t b = 0; b < 2 * kBlock; ++b) asm volatile("" : : "x"(acc[b]));
      }
    }
  });
}

}  // namespace

FmaRate TUNECAST_FLOOR_FN(bool smoke) {
  constexpr int kLanes = TUNECAST_FLOOR_LANES;
  const long iterations = smoke ? 200000 : 4000000;
  FmaRate best;
  for (int rep = 0; rep < (smoke ? 1 : 5); ++rep) {
    const double r = fma_rate_with<kLanes, 12>(iterations);
    if (r > best.per_ns) best = {r, kLanes};
  }
  best.one_row_per_ns = one_row_rate_with<kLanes>(smoke ? 2 : 20);
  best.one_row_l3_per_ns = one_row_rate_with<kLanes>(smoke ? 1 : 8, 4096, 1);
  best.one_row_bf16_per_ns = one_row_bf16_rate_with<kLanes>(smoke ? 2 : 20);
  return best;
}

}  // namespace tunecast::bench
