// Numerical parity with PyTorch: tiny random models of every architecture the trainer exports
// (paper LSTM, bi-LSTM + attention, Conv1D hybrid, mlp), compiled to blobs, reproduce PyTorch's
// own encoder outputs and decoder steps within 1e-4. The fixtures in tests/data/pytorch come from
// `tools/test_export.py --write-fixtures tests/data/pytorch`; ctest -R pytorch_parity re-creates
// them with the installed PyTorch and checks them through the CLI.
#include <doctest.h>

#include <filesystem>
#include <string>

#include "test_data.h"
#include "test_util.h"

#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/file_io.h"
#include "tunecast/codegen/ir_json.h"
#include "tunecast/codegen/reference_vectors.h"

namespace {

using tunecast::Status;
namespace codegen = tunecast::codegen;

const char* const kArchitectures[] = {"paper", "attention", "hybrid", "mlp"};

std::string fixture(const std::string& kind, const char* file) {
  return tunecast_test::source_path("tests/data/pytorch/" + kind + "/" + file);
}

void compile_fixture(const std::string& kind, tunecast_test::CompiledModel* out) {
  tunecast::ir::Model ir;
  Status status = tunecast::read_ir_json(fixture(kind, "model.tcir.json"), &ir);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  status = codegen::attach_rules(&ir, "", fixture(kind, "model.tce"));
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  tunecast_test::compile_model(ir, out);
}

}  // namespace

TEST_CASE("pytorch parity: every exported architecture reproduces PyTorch's outputs within 1e-4") {
  for (const char* kind : kArchitectures) {
    INFO(kind);
    tunecast_test::CompiledModel compiled;
    compile_fixture(kind, &compiled);
    codegen::ReferenceVectors vectors;
    Status status = codegen::read_reference_vectors(fixture(kind, "model.vectors.json"), &vectors);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    CHECK(vectors.tolerance == doctest::Approx(1e-4));
    codegen::ReferenceReport report;
    status = codegen::run_reference_vectors(compiled.model, vectors, &report);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    // Both graphs, every decoder output PyTorch names (logits and states).
    CHECK(report.cases == static_cast<int>(vectors.cases.size()));
    CHECK(report.values > 100);
    INFO(report.worst_where);
    CHECK(report.worst <= vectors.tolerance);
  }
}

TEST_CASE("pytorch parity: the comparison sees a wrong reference value, and refuses cases that do not fit") {
  tunecast_test::CompiledModel compiled;
  compile_fixture("attention", &compiled);
  codegen::ReferenceVectors vectors;
  REQUIRE(codegen::read_reference_vectors(fixture("attention", "model.vectors.json"), &vectors).is_ok());
  codegen::ReferenceReport report;

  // One decoder logit off by 1e-3: above the tolerance, and named.
  codegen::ReferenceVectors off = vectors;
  codegen::ReferenceCase& step = off.cases.at(1);
  REQUIRE(step.outputs.at(0).has_value());
  (*step.outputs[0])[2] += 1e-3f;
  REQUIRE(codegen::run_reference_vectors(compiled.model, off, &report).is_ok());
  CHECK(report.worst > vectors.tolerance);
  CHECK(report.worst_where.find("case 1 (graph") == 0);

  codegen::ReferenceVectors bad = vectors;
  bad.cases.at(0).inputs.at(0).pop_back();
  CHECK(codegen::run_reference_vectors(compiled.model, bad, &report).code() ==
        tunecast::StatusCode::kInvalidArgument);
  bad = vectors;
  bad.cases.at(0).graph = 7;
  CHECK(codegen::run_reference_vectors(compiled.model, bad, &report).code() ==
        tunecast::StatusCode::kInvalidArgument);
  bad = vectors;
  bad.cases.at(1).outputs.pop_back();
  CHECK(codegen::run_reference_vectors(compiled.model, bad, &report).code() ==
        tunecast::StatusCode::kInvalidArgument);
}

TEST_CASE("pytorch parity: malformed vector files are refused with the file named") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tunecast_vectors_test";
  std::filesystem::create_directories(dir);
  auto read = [&](const std::string& text) {
    const std::string path = (dir / "v.json").string();
    REQUIRE(codegen::write_file_atomic(path, text).is_ok());
    codegen::ReferenceVectors v;
    return codegen::read_reference_vectors(path, &v);
  };
  const char* bad[] = {
      "[]",
      R"({"format":"tunecast-vectors","version":2,"cases":[]})",
      R"({"format":"tunecast-vectors","version":1,"cases":[]})",
      R"({"format":"tunecast-vectors","version":1,"tolerance":0,"cases":[{"graph":0,"inputs":[],"outputs":[]}]})",
      R"({"format":"tunecast-vectors","version":1,"cases":[{"graph":"enc","inputs":[],"outputs":[]}]})",
      R"({"format":"tunecast-vectors","version":1,"cases":[{"graph":0,"inputs":[[1,"x"]],"outputs":[]}]})",
      "{",
  };
  for (const char* text : bad) {
    INFO(text);
    const Status status = read(text);
    CHECK_FALSE(status.is_ok());
    CHECK(std::string(status.message()).find("v.json") != std::string::npos);
  }
  CHECK(read(R"({"format":"tunecast-vectors","version":1,"cases":[{"graph":0,"inputs":[[1]],"outputs":[null]}]})")
            .is_ok());
  std::filesystem::remove_all(dir);
}
