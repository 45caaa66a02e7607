// Prediction: encoder once, then a constrained beam search over the decoder, all inside the
// caller's scratch buffer (Model::scratch_bytes). No heap allocation, no exceptions, safe to call
// from a static initializer and from several threads at once (one scratch buffer per thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tunecast/model.h"
#include "tunecast/problem.h"
#include "tunecast/status.h"

namespace tunecast {

// An integrator's own validity rule, checked after the model's constraints: return true if the
// parameter prefix values[0..position] (values[position] is the candidate) can still be valid for
// `problem`. `problem` is null when predicting from raw features without a problem. A model whose
// vocabulary has a decode_order emits positions in that order (Model::decode_position): the
// values set are then those of the positions decoded so far, not 0..position.
struct Validator {
  bool (*check)(void* context, const Problem* problem, int position, const int64_t* values) = nullptr;
  void* context = nullptr;

  explicit operator bool() const { return check != nullptr; }
  // Wraps any callable `bool(const Problem*, int, const int64_t*)` that outlives the Validator.
  template <typename Callable>
  static Validator from(Callable& callable) {
    Validator v;
    v.context = &callable;
    v.check = [](void* context, const Problem* problem, int position, const int64_t* values) {
      return (*static_cast<Callable*>(context))(problem, position, values);
    };
    return v;
  }
};

struct PredictOptions {
  int beam_width = 1;                  // 1 = constrained greedy (MIOpen's procedure)
  bool use_model_constraints = true;   // the constraints compiled into the artifact
  Validator validator;                 // optional extra rule
};

// One complete parameter vector.
struct Candidate {
  float score = 0.0f;                  // sum of the chosen tokens' log-probabilities
  int32_t length = 0;                  // = Model::parameter_count()
  int64_t values[kMaxParameters] = {};
  uint16_t tokens[kMaxParameters] = {};
};

struct PredictInfo {
  int candidates = 0;                  // written to the output array, best first, all distinct
  // Finished hypotheses dropped because an earlier (better) one has the same parameter values:
  // several tokens may decode to one value, so two token sequences can be one vector.
  int duplicates_merged = 0;
  uint32_t out_of_range_fields = 0;    // bit per ProblemField outside the training range
  int64_t rejected_by_constraints = 0; // expansions the constraints removed
  int64_t rejected_by_validator = 0;   // expansions the Validator removed
  int failed_position = -1;            // position (parameter) where every hypothesis died, when none survived
  // The beam was full and left expansions out (unchecked ones included). When false the search
  // was exhaustive: fewer candidates than the beam width means no other vector passes the
  // constraints. When true, hypotheses the beam kept may have died at later positions in place of
  // ones it dropped, and a wider beam may find more.
  bool beam_pruned = false;
  // Index of the first of the model's applicability conditions (its rules' `applies` statements,
  // MIOpen's IsApplicable) the problem fails, -1 when it meets them all or the model has none.
  // Reported, not enforced: the search runs anyway (perf DBs hold older tunings where today's
  // MIOpen would not run the kernel); the fields they read must be given, like the encoding's.
  // Set by predict() from a problem, not by predict_from_features (check_applicability does it).
  int not_applicable = -1;
  // The problem names an architecture the model does not list as covered (Model::covers_arch):
  // the candidates come from a model trained for other GPUs. Reported, not enforced, like the
  // training ranges (an encoding's range of arch flags the arch field in out_of_range_fields too).
  // Set by predict() from a problem whose arch is given.
  bool arch_not_covered = false;
};

// Beam search from a problem: the artifact's encoding turns the problem into the encoder input.
// Writes up to min(beam_width, capacity) distinct candidates into `out` (a vector that several
// hypotheses decode to appears once, with the best one's score). When no hypothesis survives, the
// status is kNoValidCandidate and info->failed_position says where. A problem built by hand (not
// by parse_problem) should go through apply_problem_defaults first: ranges and applicability read
// every field (layout, pads, dilations...), and an unset one reads 0.
Status predict(const Model& model, const Problem& problem, const PredictOptions& options,
               void* scratch, size_t scratch_size, Candidate* out, int capacity,
               PredictInfo* info);

// Same, from the encoder input itself ([rows * cols] floats, row-major). `problem` may be null:
// the model's constraints are then skipped, whatever options.use_model_constraints says.
Status predict_from_features(const Model& model, const float* features, size_t feature_count,
                             const Problem* problem, const PredictOptions& options, void* scratch,
                             size_t scratch_size, Candidate* out, int capacity, PredictInfo* info);

// Computes the encoder input of `problem` with the artifact's encoding into `features`
// (rows * cols floats). Fails with kInvalidArgument naming a required field that is missing.
Status encode_problem(const Model& model, const Problem& problem, float* features,
                      size_t feature_count, uint32_t* out_of_range_fields);

// Runs one graph on explicit inputs: inputs[i] holds graph input i ([rows or batch, cols]
// row-major, densely packed), outputs[i] receives graph output i likewise. For parity tests and
// plain feed-forward models. Scratch: Model::scratch_bytes(batch).
Status run_graph(const Model& model, int graph_index, int batch, const float* const* inputs,
                 int input_count, float* const* outputs, int output_count, void* scratch,
                 size_t scratch_size);

// Whether `problem` meets every applicability condition of the model (true when it has none);
// *first_failed (if not null) gets the index of the first that fails. A condition whose evaluation
// fails (division by zero, overflow) counts as failed.
bool check_applicability(const Model& model, const Problem& problem, int* first_failed);

// The source text of applicability condition `index` ("" when out of range), for messages.
const char* applicability_text(const Model& model, int index);

// Evaluates the model's constraints on the parameters decoded in the first `length` steps (those
// placed at positions < length, unless the vocabulary has a decode_order), e.g. a complete vector
// from eval or a perf DB (length = parameter_count()). Returns true when every one passes;
// *first_failed (if not null) gets the index of the first that fails.
bool check_candidate(const Model& model, const Problem& problem, const int64_t* values, int length,
                     int* first_failed);

}  // namespace tunecast
