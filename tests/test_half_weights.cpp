// fp16 weight storage (compile --weights fp16): the conversion, the verifier's size check, outputs
// close to fp32, and identical predictions on MIOpen's gfx908 ConvAsm1x1U KTN.
#include <doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_data.h"
#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/prediction_check.h"
#include "tunecast/kernel_types.h"
#include "tunecast/layers.h"
#include "tunecast/predict.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace {

using tunecast::Model;
using tunecast::Status;
using tunecast::codegen::BlobOptions;
using tunecast::codegen::WeightStorage;
using tunecast::kernels::Half;
using tunecast::kernels::half_to_float;

// Outputs with fp16 weights against fp32, as worst_difference measures them.
constexpr float kHalfTolerance = 2e-3f;

BlobOptions fp16() {
  BlobOptions options;
  options.weights = WeightStorage::kFp16;
  return options;
}

// Worst |a - b| / max(|b|, 1): relative, floored at 1 so values near zero are judged absolutely.
float worst_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(std::fabs(b[i]), 1.0f));
  }
  return worst;
}

// Every output of one run of `graph`, concatenated.
std::vector<float> run_one(const Model& model, int graph, const std::vector<std::vector<float>>& inputs,
                           const std::vector<size_t>& output_sizes) {
  std::vector<const float*> in;
  for (const auto& v : inputs) in.push_back(v.data());
  std::vector<std::vector<float>> outs;
  std::vector<float*> out_ptrs;
  for (size_t n : output_sizes) outs.emplace_back(n, NAN);
  for (auto& o : outs) out_ptrs.push_back(o.data());
  std::vector<unsigned char> scratch(model.scratch_bytes(1));
  const Status s = tunecast::run_graph(model, graph, 1, in.data(), static_cast<int>(in.size()), out_ptrs.data(),
                                       static_cast<int>(out_ptrs.size()), scratch.data(), scratch.size());
  REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
  std::vector<float> all;
  for (const auto& o : outs) all.insert(all.end(), o.begin(), o.end());
  return all;
}

}  // namespace

TEST_CASE("fp16 weights: conversion is IEEE round-to-nearest-even and exact back") {
  using tunecast::codegen::float_to_half;
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);           // halfway past the largest: inf
  CHECK(float_to_half(5.9604645e-8f) == 0x0001);      // smallest subnormal
  CHECK(float_to_half(2.98023224e-8f) == 0x0000);     // half of it: ties to even (zero)
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3c00); // tie, even mantissa stays
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3c02); // tie, odd mantissa rounds up
  int mismatches = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (nan) continue;
    mismatches += float_to_half(half_to_float(static_cast<Half>(h))) != h;
  }
  CHECK(mismatches == 0);
#if defined(__F16C__)
  // Against the hardware's conversion on a sweep of floats, subnormal halves to overflow.
  uint32_t bits = 0x33000000u;
  int hardware_mismatches = 0;
  for (; bits < 0x47800000u; bits += 0x1e1) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    hardware_mismatches += float_to_half(f) != _cvtss_sh(f, 0);
    hardware_mismatches += float_to_half(-f) != _cvtss_sh(-f, 0);
  }
  CHECK(hardware_mismatches == 0);
#endif
}

TEST_CASE("fp16 weights: a tiny model loads, runs close to fp32, and a bad size is refused") {
  const tunecast::ir::Model ir = tunecast_test::tiny_feed_forward();
  tunecast_test::CompiledModel full, half;
  tunecast_test::compile_model(ir, &full);
  tunecast_test::compile_model(ir, &half, fp16());
  const auto* kernel = half.model.root()->graphs()->Get(0)->layers()->Get(0)->kernel();
  REQUIRE(kernel->half_data() != nullptr);
  CHECK(kernel->data() == nullptr);
  CHECK(reinterpret_cast<uintptr_t>(kernel->half_data()->data()) % 32 == 0);
  CHECK(half.model.root()->graphs()->Get(0)->layers()->Get(0)->bias() != nullptr);  // biases stay fp32

  for (const std::vector<float>& x : {std::vector<float>{1.0f, -2.0f, 0.5f}, std::vector<float>{0.3f, 0.7f, -1.1f}}) {
    const std::vector<float> a = run_one(half.model, 0, {x}, {2});
    const std::vector<float> b = run_one(full.model, 0, {x}, {2});
    CHECK(worst_difference(a, b) <= kHalfTolerance);
  }

  SUBCASE("a half_data vector one value short is refused at load") {
    std::vector<uint8_t> bytes;
    tunecast::codegen::serialize_blob_unverified(ir, &bytes, fp16());
    const auto* root = tunecast::schema::GetModel(bytes.data());
    const auto* halves = root->graphs()->Get(0)->layers()->Get(0)->kernel()->half_data();
    // A FlatBuffers vector starts with its length: shorten it in place (still inside the buffer,
    // so the FlatBuffers verifier passes and tunecast's own size check must catch it).
    const size_t length_at = reinterpret_cast<const uint8_t*>(halves) - bytes.data();
    uint32_t length;
    std::memcpy(&length, bytes.data() + length_at, sizeof length);
    length -= 1;
    std::memcpy(bytes.data() + length_at, &length, sizeof length);
    tunecast_test::AlignedBlob blob;
    blob.assign(bytes);
    Model model;
    const Status s = Model::load(blob.bytes.get(), blob.size, &model);
    CHECK(s.code() == tunecast::StatusCode::kCorruptModel);
    CHECK_MESSAGE(std::string(s.message()).find("fp16 values, shape needs") != std::string::npos, std::string(s.message()));
  }

  SUBCASE("a weight beyond fp16's range is refused by the compiler") {
    tunecast::ir::Model big = ir;
    big.graphs[0].layers[1].kernel.data[0] = 1e6f;
    std::vector<uint8_t> bytes;
    const Status s = tunecast::codegen::write_blob(big, &bytes, fp16());
    CHECK(s.code() == tunecast::StatusCode::kInvalidArgument);
    CHECK_MESSAGE(std::string(s.message()).find("does not fit fp16") != std::string::npos, std::string(s.message()));
  }
}

TEST_CASE("fp16 weights on MIOpen's gfx908 ConvAsm1x1U KTN") {
  if (!tunecast_test::have_shared_data()) {
    MESSAGE("skipped: shared data not found at " << tunecast_test::data_dir());
    return;
  }
  const std::string prefix = tunecast_test::data_path("miopen/models/gfx908_ConvAsm1x1U");
  tunecast::ir::Model ir;
  Status status = tunecast::keras::import_ktn(prefix, &ir);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  status = tunecast::codegen::attach_rules(&ir, tunecast_test::source_path("weights/rules/ConvAsm1x1U.tcr"),
                                           tunecast_test::source_path("weights/encodings/gfx908_ConvAsm1x1U.tce"));
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  tunecast_test::CompiledModel full, half;
  tunecast_test::compile_model(ir, &full);
  tunecast_test::compile_model(ir, &half, fp16());

  SUBCASE("encoder and decoder outputs stay within 2e-3 of fp32 on the Keras test vectors") {
    int checked = 0;
    for (const char* part : {"encoder", "decoder"}) {
      std::vector<tunecast::keras::TestVector> vectors;
      REQUIRE(tunecast::keras::read_test_vectors(prefix + "_" + part + ".ktn.model", &vectors).is_ok());
      const int graph = std::string(part) == "encoder" ? static_cast<int>(full.model.root()->seq2seq()->encoder())
                                                       : static_cast<int>(full.model.root()->seq2seq()->decoder());
      for (const auto& v : vectors) {
        std::vector<size_t> sizes;
        for (const auto& o : v.outputs) sizes.push_back(o.size());
        const std::vector<float> a = run_one(half.model, graph, v.inputs, sizes);
        const std::vector<float> b = run_one(full.model, graph, v.inputs, sizes);
        CAPTURE(part);
        CHECK(worst_difference(a, b) <= kHalfTolerance);
        ++checked;
      }
    }
    CHECK(checked > 0);
  }

  // Measured on all 15577 ConvAsm1x1U rows of gfx906_60.db: fp16 weights change the greedy vector
  // of 17 problems, the beam-10 list of 940 (mostly near-tied candidates swapping places), so the
  // compiler refuses fp16 for this network unless forced (docs/benchmarks.md).
  SUBCASE("predictions: greedy almost always equal, and the compiler refuses what differs") {
    std::vector<tunecast::PerfDbRow> rows;
    const std::string db = tunecast_test::data_path("miopen/perfdb/gfx906_60.db");
    status = tunecast::read_perf_db(db, "ConvAsm1x1U", tunecast::PerfDbFilter(), &rows);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    std::vector<tunecast::codegen::CheckSample> samples;
    for (size_t i = 0; i < rows.size() && samples.size() < 300; i += 37) {
      tunecast::codegen::CheckSample s;
      s.name = "perf DB config " + std::to_string(rows[i].config_id);
      s.problem = rows[i].problem;
      samples.push_back(s);
    }
    tunecast::codegen::PredictionComparison greedy, beam;
    REQUIRE(tunecast::codegen::compare_predictions(full.model, half.model, samples, &greedy, {1}).is_ok());
    REQUIRE(tunecast::codegen::compare_predictions(full.model, half.model, samples, &beam, {10}).is_ok());
    MESSAGE("fp16 vs fp32 on " << greedy.checked << " problems: greedy differs on " << greedy.differing
                               << ", the beam-10 list on " << beam.differing);
    CHECK(greedy.checked == static_cast<int>(samples.size()));
    CHECK(greedy.differing * 100 <= greedy.checked);  // at most 1 %
    CHECK(beam.differing >= greedy.differing);

    const std::string out = "/tmp/tunecast_half_cli_" + std::to_string(::getpid());
    const std::string command = std::string("'") + TUNECAST_CLI_PATH + "' import-keras '" + prefix + "' -o '" + out +
                                ".tcm' --rules '" + tunecast_test::source_path("weights/rules/ConvAsm1x1U.tcr") +
                                "' --encoding '" +
                                tunecast_test::source_path("weights/encodings/gfx908_ConvAsm1x1U.tce") +
                                "' --weights fp16 --check-perfdb '" + db +
                                "' --check-solver ConvAsm1x1U --check-limit 400 >/dev/null 2>'" + out + ".err'";
    const int exit_status = std::system(command.c_str());
    std::string err;
    if (FILE* f = std::fopen((out + ".err").c_str(), "r")) {
      char buffer[1024];
      while (std::fgets(buffer, sizeof buffer, f)) err += buffer;
      std::fclose(f);
    }
    std::remove((out + ".err").c_str());
    CHECK(exit_status != 0);
    CHECK_MESSAGE(err.find("fp16 weights change the predictions on") != std::string::npos, err);
    CHECK_MESSAGE(err.find("perf DB config") != std::string::npos, err);
    std::FILE* written = std::fopen((out + ".tcm").c_str(), "rb");
    CHECK(written == nullptr);  // nothing written
    if (written) std::fclose(written);
  }
}
