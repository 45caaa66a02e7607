// Determinism: the same blob and problem give byte-identical results run after run and from two
// threads at once (the generated predictors' agreement with the blob runtime is
// tests/generated/test_generated.cpp).
#include <doctest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_data.h"
#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/predict.h"

namespace {

using namespace tunecast;

// Everything a prediction returns, as bytes (status message included).
std::string predict_bytes(const Model& model, const std::vector<Problem>& problems, int beam) {
  std::vector<unsigned char> scratch(model.scratch_bytes(beam));
  std::string out;
  for (const Problem& problem : problems) {
    std::vector<Candidate> candidates(static_cast<size_t>(beam));
    PredictInfo info;
    PredictOptions options;
    options.beam_width = beam;
    const Status status = predict(model, problem, options, scratch.data(), scratch.size(),
                                  candidates.data(), beam, &info);
    out.append(status.message());
    // Field by field: the struct's padding bytes are indeterminate.
    for (const int64_t field : {int64_t{info.candidates}, int64_t{info.out_of_range_fields},
                                info.rejected_by_constraints, info.rejected_by_validator,
                                int64_t{info.failed_position}}) {
      out.append(reinterpret_cast<const char*>(&field), sizeof field);
    }
    for (int i = 0; i < info.candidates; ++i) {
      out.append(reinterpret_cast<const char*>(&candidates[i].score), sizeof(float));
      out.append(reinterpret_cast<const char*>(candidates[i].values), sizeof candidates[i].values);
      out.append(reinterpret_cast<const char*>(candidates[i].tokens), sizeof candidates[i].tokens);
    }
  }
  return out;
}

void check_deterministic(const Model& model, const std::vector<Problem>& problems) {
  for (int beam : {1, 4}) {
    CAPTURE(beam);
    const std::string first = predict_bytes(model, problems, beam);
    CHECK(predict_bytes(model, problems, beam) == first);
    std::string a, b;
    std::thread ta([&] { a = predict_bytes(model, problems, beam); });
    std::thread tb([&] { b = predict_bytes(model, problems, beam); });
    ta.join();
    tb.join();
    CHECK(a == first);
    CHECK(b == first);
  }
}

std::vector<Problem> grid(const std::vector<std::string>& texts) {
  std::vector<Problem> out;
  for (const std::string& text : texts) {
    Problem p;
    REQUIRE_MESSAGE(parse_problem(text, &p).is_ok(), text);
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("determinism: the tiny model, run twice and in two threads at once") {
  ir::Model m;
  REQUIRE(tunecast_test::tiny_seq2seq_with_rules(&m).is_ok());
  tunecast_test::CompiledModel c;
  tunecast_test::compile_model(m, &c);
  std::vector<std::string> texts;
  for (int n : {1, 16, 1000}) {
    for (int k : {5, 30}) {
      texts.push_back("dir=F,dtype=FP32,n=" + std::to_string(n) + ",c=4,k=" + std::to_string(k) + ",h=7,w=7,y=1,x=1");
      texts.push_back("dir=B,dtype=FP32,n=" + std::to_string(n) + ",c=4,k=" + std::to_string(k) + ",h=7,w=7,y=1,x=1");
    }
  }
  check_deterministic(c.model, grid(texts));
}

TEST_CASE("determinism: MIOpen's gfx908 ConvAsm1x1U KTN, run twice and in two threads at once") {
  const std::string prefix = tunecast_test::data_path("miopen/models/gfx908_ConvAsm1x1U");
  if (!tunecast_test::have_shared_data()) {
    MESSAGE("skipped: no MIOpen models (set TUNECAST_DATA_DIR to shared/data)");
    return;
  }
  ir::Model m;
  REQUIRE(keras::import_ktn(prefix, &m).is_ok());
  REQUIRE(codegen::attach_rules(&m, tunecast_test::source_path("weights/rules/ConvAsm1x1U.tcr"),
                                tunecast_test::source_path("weights/encodings/gfx908_ConvAsm1x1U.tce"))
              .is_ok());
  tunecast_test::CompiledModel c;
  tunecast_test::compile_model(m, &c);
  check_deterministic(c.model, grid({"dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1",
                                     "dir=B,dtype=FP16,n=128,c=512,k=256,h=7,w=7,y=1,x=1,u=2,v=2",
                                     "dir=F,dtype=FP16,n=1,c=3,k=32,h=112,w=112,y=1,x=1"}));
}
