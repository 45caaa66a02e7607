// `tunecast compile KERNEL.tcr` (a kernel definition alone into a blob without a predictor), the IR
// check of such a model, and emit-cpp / embed refusing an output that is their input (a black-box
// review's findings).
#include <doctest.h>

#include <filesystem>
#include <iterator>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/model.h"

using namespace tunecast;

namespace {

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
  REQUIRE(out.good());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// `tune ... --json` without the wall-clock figure: what must be equal for the same seed.
nlohmann::json tune_result(const std::string& out) {
  nlohmann::json j = nlohmann::json::parse(out);
  j.erase("search_overhead_seconds");
  return j;
}

// Compiles `definition` to `blob`, inspects the blob, and tunes from both with the same seed: the
// blob searches as the text does.
void compile_then_tune(const tunecast_test::TempDir& dir, const std::string& definition, const std::string& blob,
                       const std::string& problem, const std::string& kernel) {
  tunecast_test::CliResult r = tunecast_test::run_cli(dir, "compile '" + definition + "' -o '" + blob + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "a kernel definition without a predictor"), r.err);
  REQUIRE(std::filesystem::is_regular_file(blob));

  r = tunecast_test::run_cli(dir, "inspect '" + blob + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.out, "model " + kernel + " (format 3,"), r.out);
  CHECK_MESSAGE(contains(r.out, "(no predictor)"), r.out);
  CHECK_MESSAGE(contains(r.out, "weights checksum: fnv1a64:"), r.out);
  CHECK_MESSAGE(contains(r.out, "parameters (a definition: their domains are the space):\n  0 "), r.out);

  // The blob loads as the runtime's definition: no graph, the definition's parameters and domains.
  tunecast_test::AlignedBlob bytes;
  {
    const std::string file = tunecast_test::read_text(blob);
    bytes.assign(std::vector<uint8_t>(file.begin(), file.end()));
  }
  Model model;
  REQUIRE(Model::load(bytes.bytes.get(), bytes.size, &model).is_ok());
  CHECK_FALSE(model.has_predictor());
  rules::CompiledRules rules;
  REQUIRE(rules::compile_file(definition, {}, &rules).is_ok());
  CHECK(model.parameter_count() == static_cast<int>(rules.params.size()));

  for (const char* bench : {"while read l; do echo 1; done",  // every config as fast
                            "while read l; do echo $(( ${l%%,*} * 3 % 7 + 1 )); done"}) {  // by the first value
    CAPTURE(bench);
    const std::string args = " --problem '" + problem + "' --budget 3 --seed 11 --json --quiet --bench-cmd '" + bench + "'";
    const tunecast_test::CliResult text = tunecast_test::run_cli(dir, "tune '" + definition + "'" + args);
    REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    const tunecast_test::CliResult compiled = tunecast_test::run_cli(dir, "tune '" + blob + "'" + args);
    REQUIRE_MESSAGE(compiled.exit_code == 0, compiled.err);
    const nlohmann::json a = tune_result(text.out), b = tune_result(compiled.out);
    CHECK(a["benchmarks"] == 3);
    CHECK(a["best"].size() == rules.params.size());
    CHECK(a["best"] == b["best"]);
    CHECK(a["history"] == b["history"]);
    CHECK(a == b);
  }
}

}  // namespace

TEST_CASE("compile CLI: a kernel definition alone compiles into a blob that tune searches as the text") {
  tunecast_test::TempDir dir;
  write_file(dir.file("small.tcr"), "kernel Y\nfield m in [1..10] default 3\nparam a in [1..4]\n");
  compile_then_tune(dir, dir.file("small.tcr"), dir.file("small.tcm"), "m=5", "Y");
  // The shipped definition of a convolution kernel (the `params` form, domains from its requires).
  compile_then_tune(dir, tunecast_test::source_path("weights/rules/ConvAsm1x1U.tcr"), dir.file("kernel.tcm"),
                    "dir=F,dtype=FP32,n=16,c=64,k=64,h=28,w=28,y=1,x=1,arch=gfx908", "ConvAsm1x1U");
}

TEST_CASE("compile CLI: a kernel definition takes no predictor's options") {
  tunecast_test::TempDir dir;
  write_file(dir.file("small.tcr"), "kernel Y\nparam a in [1..4]\n");
  for (const char* options : {"--weights fp16", "--rules x.tcr", "--encoding x.tce", "--check-vectors v.json"}) {
    CAPTURE(options);
    const tunecast_test::CliResult r =
        tunecast_test::run_cli(dir, "compile '" + dir.file("small.tcr") + "' -o '" + dir.file("o.tcm") + "' " + options);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(contains(r.err, "a kernel definition compiles alone"), r.err);
    CHECK_FALSE(std::filesystem::exists(dir.file("o.tcm")));
  }
  // A definition whose parameter has no domain: the definition's error, no blob.
  write_file(dir.file("nodomain.tcr"), "params a\nrequire a > 0\n");
  const tunecast_test::CliResult r =
      tunecast_test::run_cli(dir, "compile '" + dir.file("nodomain.tcr") + "' -o '" + dir.file("o.tcm") + "'");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(contains(r.err, "parameter 'a' has no domain"), r.err);
  CHECK_FALSE(std::filesystem::exists(dir.file("o.tcm")));
}

TEST_CASE("check_ir: a model without graphs passes only as a kernel definition") {
  rules::CompiledRules rules;
  REQUIRE(rules::compile("kernel Y\nfield m in [1..10] default 3\nparam a in [1..4]\nparam b in {2, 8}\n"
                         "require a * b <= m * 8\n",
                         "d.tcr", &rules)
              .is_ok());
  ir::Model definition;
  REQUIRE(codegen::definition_model(rules, "d.tcr", &definition).is_ok());
  REQUIRE(definition.graphs.empty());
  const Status ok = check_ir(definition);
  CHECK_MESSAGE(ok.is_ok(), std::string(ok.message()));

  auto refused = [](const ir::Model& m) {
    const Status s = check_ir(m);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  {
    ir::Model m = definition;  // a predictor's parts without its graphs
    m.encoding = ir::Encoding();
    CHECK(refused(m) == "model 'Y' has no graphs");
  }
  {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.graphs.clear();
    CHECK(contains(refused(m), "has no graphs"));
  }
  {
    ir::Model m = definition;
    m.vocabulary.parameters.clear();
    CHECK(refused(m) == "model 'Y' has no graphs");
  }
  {
    ir::Model m = definition;  // a parameter without a domain: nothing to search, so no definition
    m.vocabulary.parameters[1].domain.clear();
    m.vocabulary.parameters[1].tokens.clear();
    CHECK(refused(m) == "model 'Y' has no graphs");
  }
  {
    ir::Model m = definition;
    m.vocabulary.parameters[1].tokens = {0};
    CHECK(contains(refused(m), "parameter 'b' allows 1 tokens for the 2 values of its domain"));
  }
  {
    ir::Model m = definition;
    std::swap(m.vocabulary.parameters[1].tokens[0], m.vocabulary.parameters[1].tokens[1]);
    CHECK(contains(refused(m), "parameter 'b': token"));
  }
  {
    ir::Model m = definition;
    m.constraints[0].position = 2;
    CHECK(contains(refused(m), "at position 2, but there are 2 parameters"));
  }
}

TEST_CASE("emit-cpp and embed refuse to write over their input, before any work") {
  tunecast_test::TempDir dir;
  std::vector<uint8_t> bytes;
  REQUIRE(codegen::write_blob(tunecast_test::tiny_seq2seq(), &bytes).is_ok());
  const std::string blob(bytes.begin(), bytes.end());
  std::filesystem::create_directory(dir.file("g5"));
  for (const char* command : {"emit-cpp", "embed"}) {
    for (const char* file : {"Foo.cpp", "Foo.h"}) {
      CAPTURE(command);
      CAPTURE(file);
      const std::string input = dir.file(std::string("g5/") + file);
      write_file(input, blob);
      for (const std::string& out : {dir.file("g5"), dir.file("g5/"), dir.file("g5/../g5")}) {
        const tunecast_test::CliResult r =
            tunecast_test::run_cli(dir, std::string(command) + " '" + input + "' -o '" + out + "' --name Foo");
        CHECK(r.exit_code == 2);
        CHECK_MESSAGE(contains(r.err, "is the input"), r.err);
        CHECK_MESSAGE(contains(r.err, "it would be replaced; name another output"), r.err);
        CHECK(tunecast_test::read_text(input) == blob);  // the model is intact
        // Nothing else written, not even the other file of the pair.
        CHECK(std::distance(std::filesystem::directory_iterator(dir.file("g5")), std::filesystem::directory_iterator()) == 1);
      }
      std::filesystem::remove(input);
    }
  }
  // A hard link is the same file too.
  write_file(dir.file("model.tcm"), blob);
  std::filesystem::create_hard_link(dir.file("model.tcm"), dir.file("g5/Foo.cpp"));
  tunecast_test::CliResult r =
      tunecast_test::run_cli(dir, "emit-cpp '" + dir.file("model.tcm") + "' -o '" + dir.file("g5") + "' --name Foo");
  CHECK(r.exit_code == 2);
  CHECK(tunecast_test::read_text(dir.file("model.tcm")) == blob);
  std::filesystem::remove(dir.file("g5/Foo.cpp"));
  // Another output beside the model: written as before.
  std::filesystem::rename(dir.file("model.tcm"), dir.file("g5/model.tcm"));
  for (const char* command : {"emit-cpp", "embed"}) {
    r = tunecast_test::run_cli(dir, std::string(command) + " '" + dir.file("g5/model.tcm") + "' -o '" + dir.file("g5") +
                                        "' --name Foo");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(std::filesystem::is_regular_file(dir.file("g5/Foo.h")));
    CHECK(std::filesystem::is_regular_file(dir.file("g5/Foo.cpp")));
    CHECK(tunecast_test::read_text(dir.file("g5/model.tcm")) == blob);
  }
}
