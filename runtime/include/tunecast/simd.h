// The SIMD level the layer kernels run at. The runtime library holds the kernels compiled once
// per level and picks, the first time a model is loaded or a layer runs, the best level this CPU
// has, unless the environment variable TUNECAST_SIMD names one (sse2, avx2, avx512 or best).
// The FMA levels (avx2, avx512) give identical bits; sse2 rounds each product separately
// (docs/benchmarks.md, "Same results at every level").
#pragma once

#include "tunecast/status.h"

namespace tunecast {

enum class SimdLevel : int {
  kSse2 = 0,    // x86-64 baseline: 4-float vectors, no FMA
  kAvx2 = 1,    // AVX2 + FMA + F16C: 8-float vectors
  kAvx512 = 2,  // AVX-512 F/BW/DQ/VL: 16-float vectors, 32 registers
};

const char* simd_level_name(SimdLevel level);
// "sse2", "avx2", "avx512" or "best" (the best this CPU has).
Status parse_simd_level(const char* text, SimdLevel* level);
// Whether this CPU and OS run the level (cpuid and the OS's saved vector state).
bool simd_level_supported(SimdLevel level);
SimdLevel best_simd_level();
// The level in use (chosen on first use if nothing chose it yet).
SimdLevel simd_level();
// Uses `level` from now on, for every thread; an error if the CPU lacks it.
Status set_simd_level(SimdLevel level);
// Applies TUNECAST_SIMD if set (Model::load calls this): an error if it names no level or one the
// CPU lacks; unset, the level stays as it is.
Status apply_simd_environment();

}  // namespace tunecast
