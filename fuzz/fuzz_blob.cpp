// libFuzzer target: untrusted blob bytes -> Model::load, then (when the blob verifies) one
// prediction per interesting option set and one run_graph per graph. Everything load accepts must
// run without reading out of bounds, overflowing, or hanging.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tunecast/model.h"
#include "tunecast/predict.h"

namespace {

using namespace tunecast;

// Blobs that verify but would need more memory or arithmetic than a fuzz iteration should spend
// (kMaxDim-sized values are legal) are loaded, not run.
constexpr size_t kMaxScratch = size_t{32} << 20;
constexpr uint64_t kMaxMultiplyAdds = uint64_t{32} << 20;  // MIOpen's KTN: ~10 M

Problem fuzz_problem(const uint8_t* data, size_t size) {
  Problem problem;
  // Plausible values, a few taken from the input so out-of-range flags and constraint failures
  // (division by zero...) are reached too.
  const int64_t base[kProblemFieldCount] = {0, 0, 0, 16, 64, 128, 28, 28, 1, 1, 1, 1, 0, 0, 0,
                                            1, 1, 1, 1, 1, 1, 1, 0, 2, 2};
  for (int f = 0; f < kProblemFieldCount; ++f) problem.set(static_cast<ProblemField>(f), base[f]);
  if (size >= 16) {
    problem.set(ProblemField::kN, static_cast<int8_t>(data[size - 1]));
    problem.set(ProblemField::kC, static_cast<int8_t>(data[size - 2]));
    problem.set(ProblemField::kK, static_cast<int64_t>(data[size - 3]) << 40);
  }
  return problem;
}

void run_predictions(const Model& model, const Problem& problem, void* scratch, size_t size) {
  Candidate out[4];
  PredictInfo info;
  for (int beam : {1, 3}) {
    PredictOptions options;
    options.beam_width = beam;
    predict(model, problem, options, scratch, size, out, 4, &info);
    // Without a problem: features straight into the encoder, constraints skipped.
    if (model.is_seq2seq()) {
      const GraphInfo& enc = model.graph(static_cast<int>(model.root()->seq2seq()->encoder()));
      const uint32_t input = enc.graph->inputs()->size() ? enc.graph->inputs()->Get(0) : 0;
      std::vector<float> features(size_t{enc.value_rows[input]} * enc.value_cols[input], 1.0f);
      predict_from_features(model, features.data(), features.size(), nullptr, options, scratch,
                            size, out, 4, &info);
      predict_from_features(model, features.data(), features.size(), &problem, options, scratch,
                            size, out, 4, &info);
    }
  }
  int64_t values[kMaxParameters] = {};
  for (int p = 0; p < model.parameter_count(); ++p) {
    values[p] = model.token_count() ? model.token_value(p % model.token_count()) : 0;
  }
  check_candidate(model, problem, values, model.parameter_count(), nullptr);
}

void run_graphs(const Model& model, void* scratch, size_t size) {
  for (int g = 0; g < model.graph_count(); ++g) {
    const GraphInfo& info = model.graph(g);
    const int batch = info.batched ? 2 : 1;
    const auto& ins = *info.graph->inputs();
    const auto& outs = *info.graph->outputs();
    std::vector<std::vector<float>> inputs(ins.size()), outputs(outs.size());
    std::vector<const float*> in_ptrs;
    std::vector<float*> out_ptrs;
    for (uint32_t i = 0; i < ins.size(); ++i) {
      const uint32_t id = ins[i];
      const size_t rows = info.value_rows[id] ? info.value_rows[id] : batch;
      inputs[i].assign(rows * info.value_cols[id], 0.0f);  // 0 is a valid token index
      in_ptrs.push_back(inputs[i].data());
    }
    for (uint32_t i = 0; i < outs.size(); ++i) {
      const uint32_t id = outs[i];
      const size_t rows = info.value_rows[id] ? info.value_rows[id] : batch;
      outputs[i].assign(rows * info.value_cols[id], 0.0f);
      out_ptrs.push_back(outputs[i].data());
    }
    run_graph(model, g, batch, in_ptrs.data(), static_cast<int>(in_ptrs.size()), out_ptrs.data(),
              static_cast<int>(out_ptrs.size()), scratch, size);
  }
}

}  // namespace

namespace tunecast_fuzz {

// One input; also linked into tunecast_tests (tests/test_regressions.cpp) without the entry point.
int blob_one_input(const uint8_t* data, size_t size) {
  // Blobs are loaded from aligned memory (mmap, embedded arrays); an exact-size allocation lets
  // ASan catch a read one byte past the end.
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(bytes.get(), data, size);
  Model model;
  if (!Model::load(bytes.get(), size, &model)) return 0;
  model.metadata("source");
  const size_t scratch_size = model.scratch_bytes(3);
  if (scratch_size > kMaxScratch) return 0;
  uint64_t work = model.greedy_multiply_adds();  // a beam-3 search does about 3x this
  for (int g = 0; g < model.graph_count(); ++g) {
    work += model.graph(g).multiply_adds_fixed + 3 * model.graph(g).multiply_adds_per_row;
  }
  if (3 * work > kMaxMultiplyAdds) return 0;
  std::unique_ptr<uint8_t[]> scratch(new uint8_t[scratch_size]);
  run_predictions(model, fuzz_problem(data, size), scratch.get(), scratch_size);
  run_graphs(model, scratch.get(), scratch_size);
  return 0;
}

}  // namespace tunecast_fuzz

#ifndef TUNECAST_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tunecast_fuzz::blob_one_input(data, size);
}
#endif
