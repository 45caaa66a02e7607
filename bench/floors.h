// This core's arithmetic floors (bench/floors.cpp, one copy per SIMD level).
#pragma once

namespace tunecast::bench {

struct FmaRate {
  double per_ns = 0;               // fp32 multiply-adds per nanosecond at the FMA peak
  int lanes = 0;                   // the vector width that reached it
  double one_row_per_ns = 0;       // a one-row product streaming fp32 weights from L2
  double one_row_l3_per_ns = 0;    // the same over 8 MiB of weights (from L3: beyond any L2)
  double one_row_bf16_per_ns = 0;  // the same with bf16 weights (not used by the runtime)
};

FmaRate measure_floor_sse2(bool smoke);
FmaRate measure_floor_avx2(bool smoke);
FmaRate measure_floor_avx512(bool smoke);

}  // namespace tunecast::bench
