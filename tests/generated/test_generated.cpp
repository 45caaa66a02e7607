// Generated predictors (tunecast emit-cpp) against the blob runtime on the same model: every
// candidate, score bit and info field identical over a grid of problems (edge cases included:
// zero strides divide by zero inside constraints, huge sizes overflow), for greedy and beam
// search, at every SIMD level this CPU runs, forced one at a time; and neither path touches the
// heap while predicting.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "parity_models.h"
#include "tunecast/predict.h"
#include "tunecast/simd.h"

namespace {

using tunecast::Candidate;
using tunecast::PredictInfo;
using tunecast::PredictOptions;
using tunecast::Problem;
using tunecast::Status;

// Every SIMD level this CPU runs (tunecast/simd.h), each forced in turn by the tests below.
std::vector<tunecast::SimdLevel> levels() {
  std::vector<tunecast::SimdLevel> out;
  for (auto level : {tunecast::SimdLevel::kSse2, tunecast::SimdLevel::kAvx2, tunecast::SimdLevel::kAvx512}) {
    if (tunecast::simd_level_supported(level)) out.push_back(level);
  }
  return out;
}

Problem make_problem(const std::string& text) {
  Problem p;
  const Status s = tunecast::parse_problem(text, &p);
  REQUIRE_MESSAGE(s.is_ok(), text << ": " << s.message());
  return p;
}

// A grid over the fields MIOpen's 1x1 solvers read (the shipped predictors also read the arch),
// then cases that make constraints fail by division by zero or overflow.
std::vector<Problem> problems() {
  std::vector<Problem> out;
  int index = 0;
  for (const char* dir : {"F", "B", "W"}) {
    for (const char* dtype : {"FP32", "FP16"}) {
      for (int n : {1, 16, 128}) {
        for (int c : {3, 64, 512}) {
          for (int k : {32, 256, 1024}) {
            for (int hw : {7, 28, 112}) {
              for (int stride : {1, 2}) {
                out.push_back(make_problem(
                    "dir=" + std::string(dir) + ",dtype=" + dtype + ",n=" + std::to_string(n) +
                    ",c=" + std::to_string(c) + ",k=" + std::to_string(k) + ",h=" + std::to_string(hw) +
                    ",w=" + std::to_string(hw) + ",y=1,x=1,u=" + std::to_string(stride) +
                    ",v=" + std::to_string(stride) + (index++ % 2 ? ",arch=gfx906" : ",arch=gfx900")));
              }
            }
          }
        }
      }
    }
  }
  // 3x3 weight-gradient problems (ConvAsmBwdWrW3x3 applies to the stride-1 ones).
  for (const char* dtype : {"FP32", "FP16"}) {
    for (int n : {2, 16}) {
      for (int c : {64, 256}) {
        for (int hw : {14, 56}) {
          for (int stride : {1, 2}) {
            out.push_back(make_problem("dir=W,dtype=" + std::string(dtype) + ",n=" + std::to_string(n) +
                                       ",c=" + std::to_string(c) + ",k=128,h=" + std::to_string(hw) +
                                       ",w=" + std::to_string(hw) + ",y=3,x=3,pad_h=1,pad_w=1,u=" +
                                       std::to_string(stride) + ",v=" + std::to_string(stride) +
                                       (index++ % 2 ? ",arch=gfx906" : ",arch=gfx900")));
          }
        }
      }
    }
  }
  // NHWC forward problems (TritonGemm1x1, tools/gpu_timing, applies to NHWC only).
  for (const char* dtype : {"FP32", "FP16"}) {
    for (int c : {64, 608}) {
      for (int hw : {7, 27}) {
        out.push_back(make_problem("dir=F,dtype=" + std::string(dtype) + ",layout=NHWC,n=32,c=" + std::to_string(c) +
                                   ",k=96,h=" + std::to_string(hw) + ",w=" + std::to_string(hw) + ",y=1,x=1"));
      }
    }
  }
  for (const char* edge : {
           "dir=F,dtype=FP32,n=4611686018427387904,c=64,k=64,h=28,w=28,y=1,x=1",
           "dir=B,dtype=FP32,n=8,c=64,k=64,h=4294967296,w=4294967296,y=1,x=1,u=2,v=2",
           "dir=B,dtype=FP16,n=9223372036854775807,c=9223372036854775807,k=64,h=28,w=28,y=1,x=1",
       }) {
    out.push_back(make_problem(edge));
  }
  // Zero strides and sizes: parse_problem refuses them, a C++ caller can still set them, and both
  // predictors must fail (or not) alike.
  using tunecast::ProblemField;
  const struct {
    const char* text;
    std::vector<ProblemField> zeroed;
  } kZeroed[] = {
      {"dir=F,dtype=FP32,n=16,c=64,k=64,h=28,w=28,y=1,x=1", {ProblemField::kStrideH, ProblemField::kStrideW}},
      {"dir=B,dtype=FP16,n=16,c=64,k=64,h=28,w=28,y=1,x=1", {ProblemField::kStrideH}},
      {"dir=F,dtype=FP16,n=1,c=1,k=1,h=1,w=1,y=1,x=1",
       {ProblemField::kN, ProblemField::kC, ProblemField::kK, ProblemField::kH, ProblemField::kW}},
  };
  for (const auto& edge : kZeroed) {
    Problem p = make_problem(edge.text);
    for (ProblemField field : edge.zeroed) p.set(field, 0);
    out.push_back(p);
  }
  return out;
}

void check_same(const char* what, const Status& a, const PredictInfo& ia, const Candidate* ca,
                const Status& b, const PredictInfo& ib, const Candidate* cb) {
  INFO(what);
  CHECK(a.code() == b.code());
  CHECK(std::string(a.message()) == std::string(b.message()));
  CHECK(ia.candidates == ib.candidates);
  CHECK(ia.duplicates_merged == ib.duplicates_merged);
  CHECK(ia.out_of_range_fields == ib.out_of_range_fields);
  CHECK(ia.rejected_by_constraints == ib.rejected_by_constraints);
  CHECK(ia.beam_pruned == ib.beam_pruned);
  CHECK(ia.rejected_by_validator == ib.rejected_by_validator);
  CHECK(ia.failed_position == ib.failed_position);
  CHECK(ia.not_applicable == ib.not_applicable);
  for (int i = 0; i < ia.candidates && i < ib.candidates; ++i) {
    CHECK(std::memcmp(&ca[i].score, &cb[i].score, sizeof(float)) == 0);
    CHECK(ca[i].length == cb[i].length);
    CHECK(std::memcmp(ca[i].values, cb[i].values, sizeof ca[i].values) == 0);
    CHECK(std::memcmp(ca[i].tokens, cb[i].tokens, sizeof ca[i].tokens) == 0);
  }
}

template <typename Generated>
struct Fixture {
  tunecast::Model model;
  std::vector<unsigned char> blob_scratch;
  std::unique_ptr<typename Generated::Scratch> scratch{new typename Generated::Scratch()};

  Fixture(const unsigned char* blob, size_t size) {
    const Status s = tunecast::Model::load(blob, size, &model);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    blob_scratch.resize(model.scratch_bytes(Generated::kMaxBeam));
  }
};

template <typename Generated>
void check_parity(const char* name, const unsigned char* blob, size_t size) {
  Fixture<Generated> f(blob, size);
  const std::vector<Problem> list = problems();
  CHECK(Generated::kParameterCount == f.model.parameter_count());
  for (int p = 0; p < Generated::kParameterCount; ++p) {
    CHECK(std::string(Generated::parameter_name(p)) == f.model.parameter_name(p));
  }
  const char* solver = f.model.metadata("solver");
  CHECK(std::string(Generated::metadata("solver") ? Generated::metadata("solver") : "-") ==
        std::string(solver ? solver : "-"));

  const int conditions = f.model.root()->applicability() ? static_cast<int>(f.model.root()->applicability()->size()) : 0;
  for (int i = -1; i <= conditions; ++i) {
    CHECK(std::string(Generated::applicability_text(i)) == tunecast::applicability_text(f.model, i));
  }
  int compared = 0;
  int succeeded = 0;
  int applicable = 0;  // of those that succeeded
  for (const tunecast::SimdLevel level : levels()) {
    REQUIRE(tunecast::set_simd_level(level).is_ok());
    CAPTURE(tunecast::simd_level_name(level));
    for (const int beam : {1, 4, Generated::kMaxBeam}) {
      PredictOptions options;
      options.beam_width = beam;
      // Every level runs this same code path; levels below the best check a fifth of the grid
      // (the suite's time on CPUs with three levels).
      const size_t thin = level == tunecast::best_simd_level() ? 1 : 5;
      const size_t step = (beam == 1 ? 1 : (beam == 4 ? 7 : 31)) * thin;
      for (size_t i = 0; i < list.size(); i += step) {
        CAPTURE(name);
        CAPTURE(beam);
        CAPTURE(i);
        Candidate a[tunecast::kMaxBeamWidth];
        Candidate b[tunecast::kMaxBeamWidth];
        PredictInfo ia, ib;
        const Status sa = tunecast::predict(f.model, list[i], options, f.blob_scratch.data(),
                                            f.blob_scratch.size(), a, beam, &ia);
        const Status sb = Generated::predict(list[i], options, f.scratch.get(), b, beam, &ib);
        check_same("predict", sa, ia, a, sb, ib, b);
        int inapplicable_a = -2, inapplicable_b = -2;
        CHECK(tunecast::check_applicability(f.model, list[i], &inapplicable_a) ==
              Generated::check_applicability(list[i], &inapplicable_b));
        CHECK(inapplicable_a == inapplicable_b);
        if (sa.is_ok()) {
          CHECK(ia.not_applicable == (inapplicable_a == -2 ? -1 : inapplicable_a));
          applicable += ia.not_applicable < 0;
        }
        ++compared;
        succeeded += sa.is_ok();
        // The encoding, constraints on the winners, and prediction from raw features without a problem.
        float fa[Generated::kFeatureRows * Generated::kFeatureCols];
        float fb[Generated::kFeatureRows * Generated::kFeatureCols];
        uint32_t ra = 0, rb = 0;
        const Status ea = tunecast::encode_problem(f.model, list[i], fa, sizeof fa / sizeof fa[0], &ra);
        const Status eb = Generated::encode_problem(list[i], fb, sizeof fb / sizeof fb[0], &rb);
        CHECK(ea.code() == eb.code());
        if (ea.is_ok() && eb.is_ok()) {
          CHECK(std::memcmp(fa, fb, sizeof fa) == 0);
          CHECK(ra == rb);
          const Status pa = tunecast::predict_from_features(f.model, fa, sizeof fa / sizeof fa[0], nullptr, options,
                                                            f.blob_scratch.data(), f.blob_scratch.size(), a, beam, &ia);
          const Status pb = Generated::predict_from_features(fb, sizeof fb / sizeof fb[0], nullptr, options,
                                                             f.scratch.get(), b, beam, &ib);
          check_same("predict_from_features", pa, ia, a, pb, ib, b);
          for (int c = 0; c < ia.candidates; ++c) {
            int failed_a = -2, failed_b = -2;
            for (int length : {Generated::kParameterCount, Generated::kParameterCount / 2}) {
              CHECK(tunecast::check_candidate(f.model, list[i], a[c].values, length, &failed_a) ==
                    Generated::check_candidate(list[i], a[c].values, length, &failed_b));
            }
            CHECK(failed_a == failed_b);
          }
        }
      }
    }
  }
  tunecast::set_simd_level(tunecast::best_simd_level());
  MESSAGE(std::string(name) << ": " << compared << " predictions identical over " << levels().size()
                            << " SIMD level(s) (" << succeeded << " found a candidate, "
                            << applicable << " of them for a problem the kernel applies to)");
  CHECK(succeeded > compared / 2);
  // The grid holds problems each shipped kernel applies to and problems it does not (other
  // directions, filters, strides), so both branches of the generated conditions are compared.
  if (f.model.root()->applicability() && f.model.root()->applicability()->size() > 0) {
    CHECK(applicable > 0);
    CHECK(applicable < succeeded);
  }
}

template <typename Generated>
void check_no_heap(const unsigned char* blob, size_t size) {
  Fixture<Generated> f(blob, size);
  static typename Generated::Scratch scratch;
  const Problem problem = make_problem("dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906");
  Candidate out[tunecast::kMaxBeamWidth];
  PredictInfo info;
  PredictOptions options;
  Generated::predict(problem, options, out, 1, &info);  // the thread_local Scratch comes to life
  for (const tunecast::SimdLevel level : levels()) {
    REQUIRE(tunecast::set_simd_level(level).is_ok());
    CAPTURE(tunecast::simd_level_name(level));
    for (const int beam : {1, Generated::kMaxBeam}) {
      options.beam_width = beam;
      alloc_counter::arm();
      const Status a = Generated::predict(problem, options, &scratch, out, beam, &info);
      const Status b = Generated::predict(problem, options, out, beam, &info);
      const Status c = tunecast::predict(f.model, problem, options, f.blob_scratch.data(),
                                         f.blob_scratch.size(), out, beam, &info);
      const long allocations = alloc_counter::disarm();
      CHECK(a.is_ok());
      CHECK(b.is_ok());
      CHECK(c.is_ok());
      CAPTURE(beam);
      CHECK(allocations == 0);
    }
  }
  tunecast::set_simd_level(tunecast::best_simd_level());
}

// Beam widths outside 1..kMaxBeam (the generated Scratch's size) and 1..kMaxBeamWidth (the blob
// runtime's) are refused with the same readable error, nothing written.
template <typename Generated>
void check_bad_beam(const unsigned char* blob, size_t size) {
  Fixture<Generated> f(blob, size);
  const Problem problem = make_problem("dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906");
  Candidate out[1];
  PredictInfo info;
  PredictOptions options;
  for (const int beam : {0, -1, Generated::kMaxBeam + 1}) {
    CAPTURE(beam);
    options.beam_width = beam;
    const Status s = Generated::predict(problem, options, f.scratch.get(), out, 1, &info);
    CHECK(s.code() == tunecast::StatusCode::kInvalidArgument);
    CHECK(std::string(s.message()) == "beam width " + std::to_string(beam) + " is outside 1.." +
                                          std::to_string(Generated::kMaxBeam));
  }
  for (const int beam : {0, tunecast::kMaxBeamWidth + 1}) {
    options.beam_width = beam;
    const Status s = tunecast::predict(f.model, problem, options, f.blob_scratch.data(),
                                       f.blob_scratch.size(), out, 1, &info);
    CHECK(s.code() == tunecast::StatusCode::kInvalidArgument);
    CHECK(std::string(s.message()) == "beam width " + std::to_string(beam) + " is outside 1.." +
                                          std::to_string(tunecast::kMaxBeamWidth));
  }
}

#define TUNECAST_PARITY_TEST(name)                                                          \
  TEST_CASE("generated predictor " #name " predicts exactly as the blob runtime") {         \
    check_parity<parity::name>(#name, parity::name##_blob_data(), parity::name##_blob_size()); \
  }                                                                                          \
  TEST_CASE("generated predictor " #name " allocates nothing while predicting") {           \
    check_no_heap<parity::name>(parity::name##_blob_data(), parity::name##_blob_size());    \
  }                                                                                          \
  TEST_CASE("generated predictor " #name " refuses beam widths outside 1..kMaxBeam") {       \
    check_bad_beam<parity::name>(parity::name##_blob_data(), parity::name##_blob_size());   \
  }
TUNECAST_PARITY_MODELS(TUNECAST_PARITY_TEST)

TEST_CASE("the allocation counter sees allocations") {
  alloc_counter::arm();
  std::unique_ptr<int> p(new int(3));
  std::vector<char> v(100);
  CHECK(alloc_counter::disarm() >= 2);
}

}  // namespace
