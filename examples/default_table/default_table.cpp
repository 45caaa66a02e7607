// A library whose static initializer predicts default tuning parameters for a fixed list of
// problems with a generated predictor: no model file, no heap, no parsing at run time.
#include "Predictor.h"
#include "problems.h"

namespace {

example::DefaultEntry g_table[example::kProblemCount];

// The Scratch lives in static storage (not in a thread_local one, whose block glibc would
// allocate on this thread's first use inside dlopen).
example::Predictor::Scratch g_scratch;

struct Initializer {
  Initializer() {
    tunecast::PredictOptions options;
    options.beam_width = example::kBeam;
    for (int i = 0; i < example::kProblemCount; ++i) {
      example::DefaultEntry& entry = g_table[i];
      tunecast::Problem problem;
      tunecast::Status status = tunecast::parse_problem(example::kProblems[i], &problem);
      tunecast::Candidate best[example::kBeam];
      tunecast::PredictInfo info;
      if (status) status = example::Predictor::predict(problem, options, &g_scratch, best, 1, &info);
      entry.status = static_cast<int>(status.code());
      entry.not_applicable = info.not_applicable;  // a library would skip these: MIOpen would not run the kernel
      entry.length = status ? best[0].length : 0;
      for (int p = 0; p < entry.length; ++p) entry.values[p] = best[0].values[p];
    }
  }
} g_initializer;

}  // namespace

extern "C" const example::DefaultEntry* default_table(int* count) {
  *count = example::kProblemCount;
  return g_table;
}
