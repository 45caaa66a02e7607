// Whether two builds of one network predict the same: `tunecast compile --weights fp16` compares
// the fp16 blob with the fp32 one before writing it. Host-only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tunecast/model.h"
#include "tunecast/problem.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// One input the two models are run on.
struct CheckSample {
  std::string name;                // for messages: a problem descriptor, "test vector 3"
  std::optional<Problem> problem;  // through the model's encoding, with its constraints
  std::vector<float> features;     // else the encoder input itself, constraints off
};

struct PredictionComparison {
  int checked = 0;        // samples compared
  int differing = 0;      // samples whose predictions differ
  int first_index = -1;   // the first differing sample
  std::string first;      // its name and what differed; empty if none
};

// Runs both models on every sample with each beam width (greedy and beam 10 by default) and
// compares the candidate lists: same count, same token sequences in the same order (scores may
// differ). A sample both models fail on in the same way (no valid candidate) counts as equal.
// Fails only when the models cannot be compared (not seq2seq, different inputs).
Status compare_predictions(const Model& reference, const Model& candidate,
                           const std::vector<CheckSample>& samples, PredictionComparison* out,
                           const std::vector<int>& beam_widths = {1, 10});

// `count` deterministic pseudo-random encoder inputs (values in [-1, 1]) for models checked with
// neither a perf DB nor test vectors.
std::vector<CheckSample> synthetic_samples(const Model& model, int count);

}  // namespace tunecast::codegen
