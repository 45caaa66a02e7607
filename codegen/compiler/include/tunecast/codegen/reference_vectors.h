// Graph calls with known outputs (the trainer's `model.vectors.json`: PyTorch's own outputs) and
// how closely a compiled model reproduces them: `tunecast compile --check-vectors` and the
// PyTorch parity test. Host-only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tunecast/model.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// One run of one graph at batch 1: every input and output a flat float list in the graph's order.
struct ReferenceCase {
  int graph = 0;
  std::vector<std::vector<float>> inputs;
  std::vector<std::optional<std::vector<float>>> outputs;  // nullopt: not compared
};

struct ReferenceVectors {
  std::string source;       // e.g. "PyTorch 1.13.0"
  double tolerance = 1e-4;  // on |runtime - reference| / max(1, |reference|)
  std::vector<ReferenceCase> cases;
};

// Reads the tunecast-vectors JSON (docs/interchange.md); errors name the file and the case.
Status read_reference_vectors(const std::string& path, ReferenceVectors* out);

struct ReferenceReport {
  int cases = 0;
  size_t values = 0;          // output values compared
  double worst = 0.0;         // largest |runtime - reference| / max(1, |reference|)
  std::string worst_where;    // "case 7 (graph 1) output 0 [3]: 0.1234 vs 0.1235"
};

// Runs every case through run_graph. Fails (kInvalidArgument) when a case does not fit the model
// (graph index, input count or sizes, output count or sizes); the comparison itself never fails:
// compare report->worst with the tolerance.
Status run_reference_vectors(const Model& model, const ReferenceVectors& vectors, ReferenceReport* report);

}  // namespace tunecast::codegen
