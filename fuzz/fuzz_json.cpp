// libFuzzer target: JSON the compiler did not write. The first byte picks the reader: frugally-deep
// Keras model (sequence or step graph) or the trainer's tunecast-ir JSON. Whatever imports is then
// checked (check_ir) and, when the check passes, serialized and verified like `tunecast compile`.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/ir_json.h"
#include "tunecast/codegen/keras_import.h"

using namespace tunecast;

namespace {

// TUNECAST_FUZZ_VERBOSE=1 prints why an input stopped (to check that seeds import).
bool stop(const Status& status) {
  static const bool verbose = std::getenv("TUNECAST_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "fuzz_json: %s\n", status.message());
  return !status.is_ok();
}

}  // namespace

namespace tunecast_fuzz {

// One input; also linked into tunecast_tests (tests/test_regressions.cpp) without the entry point.
int json_one_input(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  ir::Model model;
  if (mode == 2) {
    if (stop(parse_ir_json(text, "fuzz.tcir.json", &model))) return 0;
  } else {
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;
    ir::Graph graph;
    if (stop(keras::import_graph(doc, "fuzz.json", mode == 1, &graph))) return 0;
    model.name = "fuzz";
    model.graphs.push_back(std::move(graph));
  }
  if (stop(check_ir(model))) return 0;
  size_t weights = 0;
  for (const ir::Graph& g : model.graphs) {
    for (const ir::Layer& l : g.layers) weights += l.kernel.data.size() + l.recurrent.data.size();
  }
  if (weights > (size_t{1} << 20)) return 0;
  std::vector<uint8_t> blob;
  stop(codegen::write_blob(model, &blob));
  return 0;
}

}  // namespace tunecast_fuzz

#ifndef TUNECAST_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tunecast_fuzz::json_one_input(data, size);
}
#endif
