#include "tunecast/codegen/prediction_check.h"

#include <algorithm>
#include <cstdint>

#include "tunecast/predict.h"

namespace tunecast::codegen {
namespace {

size_t encoder_input_size(const Model& model) {
  const GraphInfo& encoder = model.graph(static_cast<int>(model.root()->seq2seq()->encoder()));
  const uint32_t input = encoder.graph->inputs()->Get(0);
  return size_t{encoder.value_rows[input]} * encoder.value_cols[input];
}

struct Prediction {
  StatusCode code = StatusCode::kOk;
  std::vector<std::vector<uint16_t>> sequences;
};

Prediction run(const Model& model, const CheckSample& sample, int beam,
               std::vector<unsigned char>* scratch, std::vector<Candidate>* out) {
  PredictOptions options;
  options.beam_width = beam;
  options.use_model_constraints = sample.problem.has_value();
  PredictInfo info;
  const Status status =
      sample.problem ? predict(model, *sample.problem, options, scratch->data(), scratch->size(),
                               out->data(), beam, &info)
                     : predict_from_features(model, sample.features.data(), sample.features.size(),
                                             nullptr, options, scratch->data(), scratch->size(),
                                             out->data(), beam, &info);
  Prediction p;
  p.code = status.code();
  for (int c = 0; c < info.candidates; ++c) {
    const Candidate& cand = (*out)[c];
    p.sequences.emplace_back(cand.tokens, cand.tokens + cand.length);
  }
  return p;
}

}  // namespace

Status compare_predictions(const Model& reference, const Model& candidate,
                           const std::vector<CheckSample>& samples, PredictionComparison* out,
                           const std::vector<int>& beam_widths) {
  *out = PredictionComparison();
  if (!reference.is_seq2seq() || !candidate.is_seq2seq() ||
      encoder_input_size(reference) != encoder_input_size(candidate)) {
    return Status::error(StatusCode::kUnsupported,
                         "prediction check: both models must be sequence-to-sequence models with "
                         "the same encoder input");
  }
  const int max_beam = *std::max_element(beam_widths.begin(), beam_widths.end());
  std::vector<unsigned char> scratch_a(reference.scratch_bytes(max_beam));
  std::vector<unsigned char> scratch_b(candidate.scratch_bytes(max_beam));
  std::vector<Candidate> cands(static_cast<size_t>(max_beam));
  for (const CheckSample& sample : samples) {
    if (!sample.problem && sample.features.size() != encoder_input_size(reference)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "prediction check: %s has %zu features, the encoder reads %zu",
                           sample.name.c_str(), sample.features.size(), encoder_input_size(reference));
    }
    ++out->checked;
    for (const int beam : beam_widths) {
      const Prediction a = run(reference, sample, beam, &scratch_a, &cands);
      const Prediction b = run(candidate, sample, beam, &scratch_b, &cands);
      if (a.code == b.code && a.sequences == b.sequences) continue;
      if (out->first_index < 0) {
        out->first_index = out->checked - 1;
        size_t same = 0;
        while (same < a.sequences.size() && same < b.sequences.size() &&
               a.sequences[same] == b.sequences[same]) {
          ++same;
        }
        out->first = sample.name + ": beam " + std::to_string(beam) + " candidate " +
                     std::to_string(same + 1) + " differs (" + std::to_string(a.sequences.size()) +
                     " vs " + std::to_string(b.sequences.size()) + " candidates)";
      }
      ++out->differing;
      break;
    }
  }
  return Status::ok();
}

std::vector<CheckSample> synthetic_samples(const Model& model, int count) {
  std::vector<CheckSample> samples;
  if (!model.is_seq2seq()) return samples;
  const size_t size = encoder_input_size(model);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < count; ++i) {
    CheckSample s;
    s.name = "synthetic input " + std::to_string(i);
    s.features.resize(size);
    for (float& f : s.features) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      f = static_cast<float>(static_cast<double>(state >> 40) / (1u << 23) - 1.0);
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

}  // namespace tunecast::codegen
