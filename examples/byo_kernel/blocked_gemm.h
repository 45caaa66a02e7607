// A tunable CPU kernel: C = A * B for row-major float matrices (A is m x k, B is k x n, C is m x n),
// blocked into tile_m x tile_n tiles of C and tile_k slices of k, with the k loop unrolled by 1, 2
// or 4. The four tuning parameters are run-time values; docs/byo_kernel.md tunes them with tunecast.
#pragma once

#include <cstddef>

namespace byo {

struct GemmConfig {
  int tile_m = 16;
  int tile_n = 64;
  int tile_k = 64;
  int unroll = 1;
};

enum class GemmStatus {
  kOk,
  kBadConfig,        // a tile that is not positive, an unroll other than 1, 2, 4, or a C tile
                     // larger than the accumulator (tile_m * tile_n > kAccumulatorFloats)
  kScratchTooSmall,  // the packed B panel (tile_k * tile_n floats) does not fit kPanelFloats
};

// Fixed buffers, as a real kernel's registers or shared memory would be. The definition
// (gemm.tcr) states the accumulator's limit as a rule; the panel's limit is left out on purpose,
// so that configs the rules accept fail at run time (docs/byo_kernel.md, "Failures").
constexpr int kAccumulatorFloats = 4096;
constexpr int kPanelFloats = 8192;

const char* status_name(GemmStatus status);

// C = A * B. Returns kOk, or why the config cannot run (C is then left unspecified).
GemmStatus blocked_gemm(int m, int n, int k, const float* a, const float* b, float* c, const GemmConfig& config);

// The reference: the plain triple loop.
void naive_gemm(int m, int n, int k, const float* a, const float* b, float* c);

// Largest |x - reference| over the tolerance allowed for a k-term float dot product; <= 1 is correct.
double max_error_ratio(int m, int n, int k, const float* c, const float* reference);

}  // namespace byo
