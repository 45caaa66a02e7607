// Predictors emitted as C++ (`tunecast emit-cpp`) that the benchmark times next to the blob
// runtime whose Model::root()->name() matches `name`. By default bench/CMakeLists.txt emits the
// KTN and every shipped predictor and lists them in an entry file made from
// generated_entry.cpp.in; -DTUNECAST_BENCH_GENERATED=OFF links none (generated_none.cpp), and
// -DTUNECAST_BENCH_GENERATED_SOURCES="a.cpp;entry.cpp" links your own emitted files plus an
// entry file defining generated_predictors().
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
