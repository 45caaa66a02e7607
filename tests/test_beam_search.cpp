// Constrained beam search: exact answers on a tiny hand-built model, MIOpen's greedy procedure
// reproduced on the gfx908 KTN, every candidate valid, and clean failures.
#include <doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <queue>
#include <string>
#include <vector>

#include "test_data.h"
#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/kernel_types.h"
#include "tunecast/layers.h"
#include "tunecast/predict.h"

namespace {

using tunecast::Candidate;
using tunecast::PredictInfo;
using tunecast::PredictOptions;
using tunecast::Status;
using tunecast::StatusCode;
namespace ir = tunecast::ir;

// tiny_seq2seq (tests/tiny_models.h): next-token scores depend only on the previous token.
constexpr int kTokens = 4;
constexpr int kPositions = 3;
const auto& kTransitions = tunecast_test::kTinyTransitions;

ir::Model transition_model(tunecast::schema::EndPolicy policy) { return tunecast_test::tiny_seq2seq(policy); }

// Log-probabilities exactly as the runtime computes them.
std::array<std::array<float, kTokens>, kTokens> transition_log_probs() {
  std::array<std::array<float, kTokens>, kTokens> lp;
  for (int i = 0; i < kTokens; ++i) {
    std::copy(kTransitions[i], kTransitions[i] + kTokens, lp[i].begin());
    tunecast::layers::log_softmax(lp[i].data(), kTokens);
  }
  return lp;
}

struct Sequence {
  float score;
  std::array<int, kPositions> tokens;
};

// Every 3-token sequence over tokens 1..3, best first (no two sequences tie: their scores differ
// by at least 0.015).
std::vector<Sequence> all_sequences() {
  const auto lp = transition_log_probs();
  std::vector<Sequence> all;
  for (int a = 1; a < kTokens; ++a) {
    for (int b = 1; b < kTokens; ++b) {
      for (int c = 1; c < kTokens; ++c) {
        const float score = ((0.0f + lp[0][a]) + lp[a][b]) + lp[b][c];
        all.push_back({score, {a, b, c}});
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const Sequence& x, const Sequence& y) { return x.score > y.score; });
  return all;
}

Status run(const tunecast::Model& model, int beam, std::vector<Candidate>* out, PredictInfo* info,
           const tunecast::Validator& validator = {}) {
  PredictOptions options;
  options.beam_width = beam;
  options.validator = validator;
  std::vector<unsigned char> scratch(model.scratch_bytes(beam));
  out->assign(static_cast<size_t>(beam), Candidate());
  const float feature = 1.0f;
  tunecast::Problem problem;
  return tunecast::predict_from_features(model, &feature, 1, &problem, options, scratch.data(),
                                         scratch.size(), out->data(), beam, info);
}

}  // namespace

TEST_CASE("beam search: exact answers on a model with known probabilities") {
  tunecast_test::CompiledModel compiled;
  tunecast_test::compile_model(transition_model(tunecast::schema::EndPolicy::EndTokenAfterLast), &compiled);
  const std::vector<Sequence> expected = all_sequences();
  std::vector<Candidate> got;
  PredictInfo info;

  SUBCASE("a beam as wide as the search space returns every sequence in score order") {
    REQUIRE(run(compiled.model, 27, &got, &info).is_ok());
    REQUIRE(info.candidates == 27);
    for (int i = 0; i < 27; ++i) {
      CAPTURE(i);
      CHECK(got[i].score == expected[i].score);
      for (int p = 0; p < kPositions; ++p) {
        CHECK(got[i].tokens[p] == expected[i].tokens[p]);
        CHECK(got[i].values[p] == 10 * expected[i].tokens[p]);
      }
    }
  }
  SUBCASE("greedy takes the locally best token and misses the best sequence; beam 3 finds it") {
    REQUIRE(run(compiled.model, 1, &got, &info).is_ok());
    REQUIRE(info.candidates == 1);
    CHECK(got[0].tokens[0] == 1);  // argmax from the start
    CHECK(got[0].tokens[1] == 1);
    CHECK(got[0].tokens[2] == 1);
    CHECK(expected[0].tokens[0] == 2);  // the best sequence starts with the second choice
    CHECK(got[0].score < expected[0].score);
    REQUIRE(run(compiled.model, 3, &got, &info).is_ok());
    CHECK(got[0].score == expected[0].score);
    CHECK(got[0].tokens[0] == 2);
    CHECK(got[0].tokens[1] == 1);
  }
  SUBCASE("a validator removes candidates, and a reject-all validator fails cleanly") {
    auto no_twenty = [](const tunecast::Problem*, int, const int64_t* values) {
      return values[0] != 20;
    };
    REQUIRE(run(compiled.model, 27, &got, &info, tunecast::Validator::from(no_twenty)).is_ok());
    CHECK(info.candidates == 18);
    CHECK(info.rejected_by_validator > 0);
    for (int i = 0; i < info.candidates; ++i) CHECK(got[i].values[0] != 20);
    auto reject_all = [](const tunecast::Problem*, int, const int64_t*) { return false; };
    const Status status = run(compiled.model, 5, &got, &info, tunecast::Validator::from(reject_all));
    CHECK(status.code() == StatusCode::kNoValidCandidate);
    CHECK(info.failed_position == 0);
    CHECK(std::string(status.message()).find("no valid candidate") != std::string::npos);
  }
  SUBCASE("beam_pruned: false only when the search was exhaustive") {
    for (int beam = 1; beam <= 27; ++beam) {
      REQUIRE(run(compiled.model, beam, &got, &info).is_ok());
      CHECK(info.beam_pruned == (beam < 27));  // 3, 9, 27 live hypotheses at positions 0, 1, 2
    }
    // Only sequences that start with token 3 are valid, checked at the last position: prefixes
    // the beam keeps die there, and a beam that dropped others says so.
    auto starts_with_30 = [](const tunecast::Problem*, int position, const int64_t* values) {
      return position < 2 || values[0] == 30;
    };
    const auto validator = tunecast::Validator::from(starts_with_30);
    bool short_and_pruned = false;
    for (int beam = 1; beam <= 27; ++beam) {
      CAPTURE(beam);
      const Status status = run(compiled.model, beam, &got, &info, validator);
      if (!status.is_ok()) {
        CHECK(status.code() == StatusCode::kNoValidCandidate);
        CHECK(info.beam_pruned);
        continue;
      }
      if (info.candidates < std::min(beam, 9)) CHECK(info.beam_pruned);
      short_and_pruned = short_and_pruned || (info.candidates < beam && info.beam_pruned);
      if (beam == 27) {
        CHECK(info.candidates == 9);  // every valid sequence, and nothing was dropped
        CHECK_FALSE(info.beam_pruned);
      }
    }
    CHECK(short_and_pruned);
  }
  SUBCASE("bad beam widths and small buffers are errors, not crashes") {
    std::vector<Candidate> out(4);
    std::vector<unsigned char> scratch(compiled.model.scratch_bytes(4));
    const float feature = 1.0f;
    for (int beam : {0, -1, tunecast::kMaxBeamWidth + 1}) {
      PredictOptions options;
      options.beam_width = beam;
      const Status status = tunecast::predict_from_features(
          compiled.model, &feature, 1, nullptr, options, scratch.data(), scratch.size(), out.data(),
          4, &info);
      CHECK(status.code() == StatusCode::kInvalidArgument);
    }
    PredictOptions options;
    options.beam_width = 4;
    Status status = tunecast::predict_from_features(compiled.model, &feature, 1, nullptr, options,
                                                    scratch.data(), scratch.size() / 2, out.data(),
                                                    4, &info);
    CHECK(status.code() == StatusCode::kBufferTooSmall);
    status = tunecast::predict_from_features(compiled.model, &feature, 2, nullptr, options,
                                             scratch.data(), scratch.size(), out.data(), 4, &info);
    CHECK(status.code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("beam search: under MIOpen's end policy an end token that wins ends the prediction") {
  ir::Model m = transition_model(tunecast::schema::EndPolicy::FixedLength);
  // After token 3 the end token dominates.
  m.graphs[1].layers[0].kernel.data[3 * kTokens + 0] = 50.0f;
  m.graphs[1].layers[0].kernel.data[0 * kTokens + 3] = 10.0f;  // and 3 is the first choice
  tunecast_test::CompiledModel compiled;
  tunecast_test::compile_model(m, &compiled);
  std::vector<Candidate> got;
  PredictInfo info;
  const Status status = run(compiled.model, 1, &got, &info);
  CHECK(status.code() == StatusCode::kNoValidCandidate);
  CHECK(info.failed_position == 1);
  // A wider beam keeps the hypotheses that did not start with 3.
  REQUIRE(run(compiled.model, 4, &got, &info).is_ok());
  for (int i = 0; i < info.candidates; ++i) CHECK(got[i].tokens[0] != 3);
}

namespace {

// MIOpen's ModelSetParams (ai_heuristics.cpp), written out with the runtime's graph calls:
// encode once; at each position push every token's raw score into a priority queue of
// (score, index) pairs, pop until a token passes the validator, fail on an end token.
bool miopen_greedy(const tunecast::Model& model, const tunecast::Problem& problem,
                   std::vector<int64_t>* values) {
  std::vector<float> features(64);
  REQUIRE(tunecast::encode_problem(model, problem, features.data(), features.size(), nullptr).is_ok());
  std::vector<unsigned char> scratch(model.scratch_bytes(1));
  std::vector<std::vector<float>> context(4, std::vector<float>(128));
  {
    const float* in[] = {features.data()};
    float* out[] = {context[0].data(), context[1].data(), context[2].data(), context[3].data()};
    REQUIRE(tunecast::run_graph(model, 0, 1, in, 1, out, 4, scratch.data(), scratch.size()).is_ok());
  }
  float token = 0.0f;
  values->clear();
  for (int i = 0; i < model.parameter_count(); ++i) {
    std::vector<float> scores(static_cast<size_t>(model.token_count()));
    std::vector<std::vector<float>> next(4, std::vector<float>(128));
    const float* in[] = {&token, context[0].data(), context[1].data(), context[2].data(), context[3].data()};
    float* out[] = {scores.data(), next[0].data(), next[1].data(), next[2].data(), next[3].data()};
    REQUIRE(tunecast::run_graph(model, 1, 1, in, 5, out, 5, scratch.data(), scratch.size()).is_ok());
    std::priority_queue<std::pair<float, int>> queue;
    for (int t = 0; t < model.token_count(); ++t) queue.push({scores[t], t});
    int chosen = -1;
    while (!queue.empty()) {
      const int t = queue.top().second;
      queue.pop();
      if (model.is_end_token(t)) return false;
      values->push_back(model.token_value(t));
      std::vector<int64_t> prefix(tunecast::kMaxParameters, 0);
      std::copy(values->begin(), values->end(), prefix.begin());
      // MIOpen's validator: every rule checkable with positions 0..i holds.
      const bool valid = tunecast::check_candidate(model, problem, prefix.data(), i + 1, nullptr);
      if (valid) {
        chosen = t;
        break;
      }
      values->pop_back();
    }
    if (chosen < 0) return false;
    token = static_cast<float>(chosen);
    context = next;
  }
  return true;
}

struct KtnFixture {
  tunecast_test::CompiledModel compiled;
  std::vector<tunecast::PerfDbRow> rows;
  bool ready = false;

  KtnFixture() {
    if (!tunecast_test::have_shared_data()) return;
    ir::Model m;
    Status status = tunecast::keras::import_ktn(
        tunecast_test::data_path("miopen/models/gfx908_ConvAsm1x1U"), &m);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    status = tunecast::codegen::attach_rules(
        &m, tunecast_test::source_path("weights/rules/ConvAsm1x1U.tcr"),
        tunecast_test::source_path("weights/encodings/gfx908_ConvAsm1x1U.tce"));
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    tunecast_test::compile_model(m, &compiled);
    // Problems: stride-1 ConvAsm1x1U rows of the gfx906 DB (the model serves stride 1).
    std::vector<tunecast::PerfDbRow> all;
    status = tunecast::read_perf_db(tunecast_test::data_path("miopen/perfdb/gfx906_60.db"),
                                    "ConvAsm1x1U", tunecast::PerfDbFilter(), &all);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    for (size_t i = 0; i < all.size() && rows.size() < 150; i += 37) {
      if (all[i].problem.get(tunecast::ProblemField::kStrideH) == 1) rows.push_back(all[i]);
    }
    ready = true;
  }
};

}  // namespace

TEST_CASE("beam search on MIOpen's gfx908 ConvAsm1x1U KTN") {
  KtnFixture fx;
  if (!fx.ready) {
    MESSAGE("skipped: shared data not found at " << tunecast_test::data_dir());
    return;
  }
  const tunecast::Model& model = fx.compiled.model;
  REQUIRE(fx.rows.size() >= 100);

  SUBCASE("greedy (k = 1) with constraints equals MIOpen's procedure") {
    int agreed = 0;
    int failed_both = 0;
    for (const auto& row : fx.rows) {
      std::vector<int64_t> reference;
      const bool reference_ok = miopen_greedy(model, row.problem, &reference);
      std::vector<Candidate> out(1);
      PredictInfo info;
      PredictOptions options;
      std::vector<unsigned char> scratch(model.scratch_bytes(1));
      const Status status = tunecast::predict(model, row.problem, options, scratch.data(),
                                              scratch.size(), out.data(), 1, &info);
      CAPTURE(row.params_text);
      REQUIRE(status.is_ok() == reference_ok);
      if (!reference_ok) {
        ++failed_both;
        continue;
      }
      CHECK(std::vector<int64_t>(out[0].values, out[0].values + 8) == reference);
      ++agreed;
    }
    MESSAGE(agreed << " problems agree with MIOpen's procedure, " << failed_both << " fail in both");
    CHECK(agreed > 0);
  }

  SUBCASE("every candidate satisfies every constraint, at k = 10 and 100") {
    int64_t removed = 0;
    for (int beam : {10, 100}) {
      std::vector<Candidate> out(static_cast<size_t>(beam));
      std::vector<unsigned char> scratch(model.scratch_bytes(beam));
      for (size_t i = 0; i < fx.rows.size(); i += 3) {
        const auto& row = fx.rows[i];
        PredictInfo info;
        PredictOptions options;
        options.beam_width = beam;
        const Status status = tunecast::predict(model, row.problem, options, scratch.data(),
                                                scratch.size(), out.data(), beam, &info);
        REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
        CHECK(info.candidates >= 1);
        removed += info.rejected_by_constraints;
        for (int c = 0; c < info.candidates; ++c) {
          int failed = -1;
          CHECK_MESSAGE(tunecast::check_candidate(model, row.problem, out[c].values, 8, &failed),
                        "constraint " << failed);
          if (c > 0) CHECK(out[c].score <= out[c - 1].score);
        }
      }
    }
    MESSAGE("constraints removed " << removed << " expansions over the sample");
    CHECK(removed > 0);  // the rules do prune this model's choices
  }

  SUBCASE("a decoder step over 100 beams gives every row the bits a step over one row gives") {
    // Wide steps run in blocks of layers::kLstmStepRows rows and keep one copy of each LSTM's
    // sequence output and h: neither may change a row's numbers.
    const int dec = static_cast<int>(model.root()->seq2seq()->decoder());
    const tunecast::GraphInfo& g = model.graph(dec);
    const int inputs = static_cast<int>(g.graph->inputs()->size());
    const int outputs = static_cast<int>(g.graph->outputs()->size());
    constexpr int kRows = 100;
    std::vector<std::vector<float>> in(inputs), out(outputs), one_out(outputs);
    uint32_t seed = 12345;
    for (int i = 0; i < inputs; ++i) {
      const size_t cols = g.value_cols[g.graph->inputs()->Get(i)];
      in[i].resize(kRows * cols);
      for (size_t j = 0; j < in[i].size(); ++j) {
        seed = seed * 1664525u + 1013904223u;
        // token input: a token index; states: values in [-1, 1)
        in[i][j] = i == static_cast<int>(model.root()->seq2seq()->token_input())
                       ? static_cast<float>(seed >> 8 & 31)
                       : static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
      }
    }
    std::vector<const float*> in_ptrs(inputs), one_in(inputs);
    std::vector<float*> out_ptrs(outputs), one_ptrs(outputs);
    for (int i = 0; i < inputs; ++i) in_ptrs[i] = in[i].data();
    for (int o = 0; o < outputs; ++o) {
      const size_t cols = g.value_cols[g.graph->outputs()->Get(o)];
      out[o].resize(kRows * cols);
      one_out[o].resize(cols);
      out_ptrs[o] = out[o].data();
      one_ptrs[o] = one_out[o].data();
    }
    std::vector<unsigned char> scratch(model.scratch_bytes(kRows));
    REQUIRE(tunecast::run_graph(model, dec, kRows, in_ptrs.data(), inputs, out_ptrs.data(), outputs,
                                scratch.data(), scratch.size())
                .is_ok());
    for (int r = 0; r < kRows; ++r) {
      for (int i = 0; i < inputs; ++i) {
        one_in[i] = in[i].data() + r * g.value_cols[g.graph->inputs()->Get(i)];
      }
      REQUIRE(tunecast::run_graph(model, dec, 1, one_in.data(), inputs, one_ptrs.data(), outputs,
                                  scratch.data(), scratch.size())
                  .is_ok());
      for (int o = 0; o < outputs; ++o) {
        const size_t cols = one_out[o].size();
        CAPTURE(r);
        CAPTURE(o);
        CHECK(std::memcmp(one_out[o].data(), out[o].data() + r * cols, cols * sizeof(float)) == 0);
      }
    }
  }

  SUBCASE("a constraint that rejects everything gives 'no valid candidate'") {
    ir::Model m;
    REQUIRE(tunecast::keras::import_ktn(tunecast_test::data_path("miopen/models/gfx908_ConvAsm1x1U"), &m).is_ok());
    tunecast::rules::CompiledRules rules;
    const Status compiled_status = tunecast::rules::compile(
        "params read_size, k_mult, chunks_per_wave, chunk_size, n_mult, c_mult, waves_c_in_group, waves_k_in_group\n"
        "require k_mult < 0\n",
        "reject_all.tcr", &rules);
    REQUIRE_MESSAGE(compiled_status.is_ok(), std::string(compiled_status.message()));
    m.constraints = rules.constraints;
    tunecast_test::CompiledModel reject;
    tunecast_test::compile_model(m, &reject);
    std::vector<float> features(64, 0.0f);
    REQUIRE(tunecast::encode_problem(model, fx.rows[0].problem, features.data(), 64, nullptr).is_ok());
    for (int beam : {1, 16}) {
      std::vector<Candidate> out(static_cast<size_t>(beam));
      std::vector<unsigned char> scratch(reject.model.scratch_bytes(beam));
      PredictInfo info;
      PredictOptions options;
      options.beam_width = beam;
      const Status status = tunecast::predict_from_features(
          reject.model, features.data(), 64, &fx.rows[0].problem, options, scratch.data(),
          scratch.size(), out.data(), beam, &info);
      CHECK(status.code() == StatusCode::kNoValidCandidate);
      CHECK(info.failed_position == 1);
    }
  }
}
