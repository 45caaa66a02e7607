// A vocabulary's decode_order: the decoder emits the parameters in another order than the
// solver's (train.py --param-order), the runtime returns vectors in the solver's order, and each
// rule is checked at the first step at which every parameter it reads is known.
//
// The proof: tiny_seq2seq decodes a, b, m. The same network with its parameters listed as
// (m, a, b) and decode_order {1, 2, 0} decodes the very same steps, so it must give the same
// scores, the same rejections and the same values, each stored at its own position.
#include <doctest.h>

#include <string>
#include <vector>

#include "constraint_vm.h"
#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/predict.h"

namespace {

namespace ir = tunecast::ir;
using tunecast::Candidate;
using tunecast::PredictInfo;
using tunecast::Status;
using tunecast::StatusCode;

constexpr int kBeam = 27;  // every 3-token sequence

// tiny_rules_text with the parameters listed in the solver order (m, a, b).
std::string reordered_rules() {
  std::string text = tunecast_test::tiny_rules_text();
  const std::string from = "params a, b, m";
  REQUIRE(text.compare(0, from.size(), from) == 0);
  return "params m, a, b" + text.substr(from.size());
}

// tiny_seq2seq with its rules, its parameters listed as (m, a, b) and decoded a, b, m.
ir::Model reordered_model() {
  ir::Model m;
  REQUIRE(tunecast_test::tiny_seq2seq_with_rules(&m).is_ok());
  m.vocabulary.parameters = {{"m", {}}, {"a", {}}, {"b", {}}};
  m.vocabulary.decode_order = {1, 2, 0};
  tunecast::rules::CompileOptions options;
  options.decode_order = m.vocabulary.decode_order;
  tunecast::rules::CompiledRules rules;
  const Status status = tunecast::rules::compile(reordered_rules(), "tiny_reordered.tcr", options, &rules);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  m.constraints = rules.constraints;
  return m;
}

Status run(const tunecast::Model& model, const tunecast::Problem& problem, std::vector<Candidate>* out,
           PredictInfo* info) {
  tunecast::PredictOptions options;
  options.beam_width = kBeam;
  std::vector<unsigned char> scratch(model.scratch_bytes(kBeam));
  out->assign(kBeam, Candidate());
  *info = PredictInfo();
  return tunecast::predict(model, problem, options, scratch.data(), scratch.size(), out->data(), kBeam, info);
}

// Loads `m` serialized without the compiler's checks: what the runtime says of such a blob.
Status load_unverified(const ir::Model& m) {
  std::vector<uint8_t> bytes;
  tunecast::codegen::serialize_blob_unverified(m, &bytes);
  tunecast_test::AlignedBlob blob;
  blob.assign(bytes);
  tunecast::Model model;
  return tunecast::Model::load(blob.bytes.get(), blob.size, &model);
}

bool contains(const Status& status, const std::string& part) {
  return std::string(status.message()).find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("decode order: each rule lands at the step that completes what it reads") {
  const ir::Model m = reordered_model();
  REQUIRE(m.constraints.size() == 3);
  // a <= k reads a (step 0); b != a reads b (step 1); m ... reads m (position 0, decoded last).
  CHECK(m.constraints[0].position == 0);
  CHECK(m.constraints[1].position == 1);
  CHECK(m.constraints[2].position == 2);
  // Without the decode order the same text places the m rule first: m is position 0.
  tunecast::rules::CompiledRules plain;
  REQUIRE(tunecast::rules::compile(reordered_rules(), "tiny_reordered.tcr", &plain).is_ok());
  CHECK(plain.constraints[2].position == 2);  // reads a and b too
  CHECK(plain.constraints[0].position == 1);  // a is position 1 there
  CHECK(tunecast::check_ir(m).is_ok());
}

TEST_CASE("decode order: the same search as the solver-ordered model, values at their positions") {
  ir::Model plain_ir;
  REQUIRE(tunecast_test::tiny_seq2seq_with_rules(&plain_ir).is_ok());
  tunecast_test::CompiledModel plain, reordered;
  tunecast_test::compile_model(plain_ir, &plain);
  tunecast_test::compile_model(reordered_model(), &reordered);
  // Version 2 marks the order (a version-1 runtime would decode it wrongly); others stay version 1.
  CHECK(plain.model.root()->format_version() == 1);
  CHECK(reordered.model.root()->format_version() == 2);
  CHECK(reordered.model.decode_position(0) == 1);
  CHECK(reordered.model.decode_position(2) == 0);
  CHECK(std::string(reordered.model.parameter_name(0)) == "m");

  for (const char* text : {"dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7", "dir=B,dtype=FP32,n=16,c=4,k=20,h=7,w=7",
                           "dir=B,dtype=FP32,n=2,c=8,k=5,h=7,w=7"}) {
    CAPTURE(text);
    tunecast::Problem problem;
    REQUIRE(tunecast::parse_problem(text, &problem).is_ok());
    std::vector<Candidate> a, b;
    PredictInfo info_a, info_b;
    const Status status_a = run(plain.model, problem, &a, &info_a);
    const Status status_b = run(reordered.model, problem, &b, &info_b);
    REQUIRE(status_a.code() == status_b.code());
    CHECK(info_a.rejected_by_constraints == info_b.rejected_by_constraints);
    if (!status_a.is_ok()) {
      // Where every hypothesis dies, both name the same parameter (its own position in each).
      CHECK(std::string(plain.model.parameter_name(info_a.failed_position)) ==
            reordered.model.parameter_name(info_b.failed_position));
      continue;
    }
    REQUIRE(info_a.candidates == info_b.candidates);
    CHECK(info_a.candidates > 1);
    for (int i = 0; i < info_a.candidates; ++i) {
      CAPTURE(i);
      CHECK(a[i].score == b[i].score);
      CHECK(b[i].values[1] == a[i].values[0]);  // a
      CHECK(b[i].values[2] == a[i].values[1]);  // b
      CHECK(b[i].values[0] == a[i].values[2]);  // m
      CHECK(b[i].tokens[0] == a[i].tokens[2]);
      int failed = -1;
      CHECK(tunecast::check_candidate(reordered.model, problem, b[i].values, 3, &failed));
    }
  }
}

TEST_CASE("decode order: bad orders are refused by the compiler, the IR check and the loader") {
  SUBCASE("not a permutation") {
    ir::Model m = reordered_model();
    m.vocabulary.decode_order = {1, 1, 0};
    CHECK(contains(tunecast::check_ir(m), "decode_order must list each of the 3 parameter positions once"));
    const Status status = load_unverified(m);
    CHECK(status.code() == StatusCode::kCorruptModel);
    CHECK(contains(status, "vocabulary: decode_order must list each of the 3 parameter positions once"));
  }
  SUBCASE("a rule placed before the step that decodes what it reads") {
    ir::Model m = reordered_model();
    m.constraints[2].position = 1;  // reads m, decoded at step 2
    const Status status = load_unverified(m);
    CHECK(status.code() == StatusCode::kCorruptModel);
    CHECK(contains(status, "reads parameter 0, not yet decoded at this step"));
  }
  SUBCASE("rules of another parameter count") {
    tunecast::rules::CompileOptions options;
    options.decode_order = {1, 0};
    tunecast::rules::CompiledRules rules;
    const Status status = tunecast::rules::compile(reordered_rules(), "tiny_reordered.tcr", options, &rules);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(contains(status, "the model's decode order is not a permutation of the rules' 3 parameters"));
  }
}
