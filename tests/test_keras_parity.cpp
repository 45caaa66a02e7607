// Numerical parity with Keras: every MIOpen model file, compiled to a blob and run by the
// runtime, reproduces the test vectors Keras computed and stored in the JSON (within 1e-4).
#include <doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test_data.h"
#include "test_util.h"
#include <nlohmann/json.hpp>

#include "tunecast/codegen/keras_import.h"
#include "tunecast/predict.h"

namespace {

using tunecast::Status;

constexpr float kTolerance = 1e-4f;

// Runs graph `graph_index` on each stored test vector of `json_path`; returns vectors checked.
int check_vectors(const tunecast::Model& model, int graph_index, const std::string& json_path) {
  std::vector<tunecast::keras::TestVector> vectors;
  const Status status = tunecast::keras::read_test_vectors(json_path, &vectors);
  if (status.code() == tunecast::StatusCode::kNotFound) return 0;  // e.g. gfx908.tn.model
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  std::vector<unsigned char> scratch(model.scratch_bytes(1));
  for (const auto& v : vectors) {
    std::vector<const float*> inputs;
    for (const auto& in : v.inputs) inputs.push_back(in.data());
    std::vector<std::vector<float>> outputs(v.outputs.size());
    std::vector<float*> output_ptrs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].assign(v.outputs[i].size(), NAN);
      output_ptrs.push_back(outputs[i].data());
    }
    const Status run = tunecast::run_graph(model, graph_index, 1, inputs.data(),
                                           static_cast<int>(inputs.size()), output_ptrs.data(),
                                           static_cast<int>(output_ptrs.size()), scratch.data(),
                                           scratch.size());
    REQUIRE_MESSAGE(run.is_ok(), std::string(run.message()));
    for (size_t o = 0; o < outputs.size(); ++o) {
      float worst = 0.0f;
      for (size_t j = 0; j < outputs[o].size(); ++j) {
        worst = std::max(worst, std::fabs(outputs[o][j] - v.outputs[o][j]));
      }
      INFO(json_path << " output " << o);
      CHECK(worst <= kTolerance);
    }
  }
  return static_cast<int>(vectors.size());
}

}  // namespace

TEST_CASE("keras parity: every MIOpen model reproduces its Keras test vectors") {
  if (!tunecast_test::have_shared_data()) {
    MESSAGE("skipped: shared data not found at " << tunecast_test::data_dir()
                                                 << " (set TUNECAST_DATA_DIR)");
    return;
  }
  const std::string dir = tunecast_test::data_path("miopen/models");
  int files = 0;
  int vectors = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    const std::string name = entry.path().filename().string();
    auto ends_with = [&](const std::string& suffix) {
      return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    // Each file's graph on its own: the parity of the network does not depend on the vocabulary
    // (some KTN vocabularies hold symbolic tokens, see keras_import.h).
    const bool encoder = ends_with("_encoder.ktn.model");
    const bool decoder = ends_with("_decoder.ktn.model");
    const bool tunanet = ends_with(".tn.model") && !ends_with("_metadata.tn.model");
    if (!encoder && !decoder && !tunanet) continue;
    nlohmann::json json;
    Status status = tunecast::keras::load_json_file(path, &json);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    tunecast::ir::Model ir;
    ir.graphs.emplace_back();
    status = tunecast::keras::import_graph(json, name, decoder, &ir.graphs[0]);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    const int graph = 0;
    CAPTURE(path);
    tunecast_test::CompiledModel compiled;
    tunecast_test::compile_model(ir, &compiled);
    vectors += check_vectors(compiled.model, graph, path);
    ++files;
  }
  MESSAGE("checked " << files << " model files, " << vectors << " Keras test vectors");
  CHECK(files == 15);  // 6 KTN encoder+decoder pairs, 3 TunaNets
  CHECK(vectors == 14);  // gfx908.tn.model ships without test vectors
}
