// Hook for predictors emitted as C++ (`tunecast emit-cpp`, being written). The benchmark times
// every entry of this table next to the blob runtime whose Model::root()->name() matches `name`.
//
// To plug emitted code in: configure with
//   -DTUNECAST_BENCH_GENERATED_SOURCES="out/ktn.cpp;out/ktn_bench_entry.cpp"
// where the entry file defines generated_predictors() returning adapters around the emitted
// functions (bench/generated_none.cpp, the empty table, is then left out of the build).
#pragma once

#include <cstddef>

#include "tunecast/predict.h"

namespace tunecast::bench {

struct GeneratedPredictor {
  const char* name;                        // the model's name, as in the blob
  size_t (*scratch_bytes)(int max_beam);
  Status (*predict)(const Problem& problem, const PredictOptions& options, void* scratch,
                    size_t scratch_size, Candidate* out, int capacity, PredictInfo* info);
};

// The emitted predictors linked into this benchmark; *count gets how many (0 when none).
const GeneratedPredictor* generated_predictors(int* count);

}  // namespace tunecast::bench
