// Kernel definitions (docs/kernels.md): fields, parameters with domains, problems of a definition's
// schema, a definition compiled alone into a model the search runs on, and the CLI's check, tune
// without a model, --record and resuming.
#include <doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/codegen/timing_db.h"
#include "tunecast/codegen/tuning_cache.h"
#include "tunecast/predict.h"
#include "tunecast/search.h"

using namespace tunecast;

namespace {

const char* kDefinition = R"(kernel Gemm
field m in [1..65536]
field k in [1..65536] default 64
field dtype in {FP16, BF16} default FP16
field trans_a in {N, T} default N
field trans_b in {N, T} default T
field arch default h100
param tile in {16, 32, 64}
param split in pow2[1..8]
param warps in [1..4]
require warps != 3
require tile * split <= max(k, 16)
require trans_b == T || tile != 64
require split in {1, 2, 4}
applies arch == h100 || arch == gfx90a
feature log2 m * k
)";

std::string compile_error(const std::string& text) {
  rules::CompiledRules out;
  Status s = rules::compile(text, "d.tcr", &out);
  return s.is_ok() ? std::string("ok") : std::string(s.message());
}

// kDefinition compiled alone (a model without a predictor).
void compile_definition(tunecast_test::CompiledModel* out) {
  rules::CompiledRules rules;
  REQUIRE(rules::compile(kDefinition, "d.tcr", &rules).is_ok());
  ir::Model ir;
  REQUIRE(codegen::definition_model(rules, "d.tcr", &ir).is_ok());
  tunecast_test::compile_model(ir, out);
}

}  // namespace

TEST_CASE("kernel definition: fields, domains, features") {
  rules::CompiledRules rules;
  const Status status = rules::compile(kDefinition, "d.tcr", &rules);
  REQUIRE_MESSAGE(status.is_ok(), status.message());
  CHECK(rules.kernel == "Gemm");
  REQUIRE(rules.problem.size() == 6);
  CHECK(rules.problem[0].kind == FieldKind::kInteger);
  CHECK_FALSE(rules.problem[0].has_default);
  CHECK(rules.problem[2].symbols == std::vector<std::string>{"FP16", "BF16"});
  CHECK(rules.problem[5].kind == FieldKind::kArchitecture);
  CHECK(rules.params == std::vector<std::string>{"tile", "split", "warps"});
  CHECK(rules.domains[0] == std::vector<int64_t>{16, 32, 64});
  CHECK(rules.domains[1] == std::vector<int64_t>{1, 2, 4});  // pow2[1..8] intersected with require split in {1,2,4}
  CHECK(rules.domains[2] == std::vector<int64_t>{1, 2, 3, 4});  // `require warps != 3` is a rule, not a domain
  REQUIRE(rules.features.size() == 1);
  CHECK(rules.features[0].transform == "log2");
  CHECK(rules::has_domains(rules));
}

TEST_CASE("kernel definition: the older rules files derive their domains from constant requires") {
  rules::CompiledRules rules;
  REQUIRE(rules::compile_file(std::string(TUNECAST_SOURCE_DIR) + "/weights/rules/TritonGemm1x1.tcr", {}, &rules).is_ok());
  CHECK(rules.problem.empty());  // the convolution problem, built in
  CHECK(rules.domains[0] == std::vector<int64_t>{32, 64, 128, 256});
  CHECK(rules::has_domains(rules));
  rules::CompiledRules asm1x1;
  REQUIRE(rules::compile_file(std::string(TUNECAST_SOURCE_DIR) + "/weights/rules/ConvAsm1x1U.tcr", {}, &asm1x1).is_ok());
  CHECK(asm1x1.domains[0] == std::vector<int64_t>{1, 2, 3, 4});          // read_size in [1..4]
  CHECK(asm1x1.domains[3] == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64});  // chunk_size in pow2[1..64]
}

TEST_CASE("kernel definition: errors name the line and the fault") {
  CHECK(compile_error("field m in [1..4]\nfield m in [1..4]\n") == "d.tcr:2:7: field 'm' clashes with a problem field");
  CHECK(compile_error("param a in {1}\nfield m in [1..4]\n") ==
        "d.tcr:2:1: fields must come before every param, let, option, require, applies, feature and input");
  CHECK(compile_error("field d in {X, Y} default Z\n") == "d.tcr:1:27: 'Z' is not a symbol of field 'd'");
  CHECK(compile_error("field m in [1..4] default 9\n") == "d.tcr:1:27: the default of field 'm' lies outside its range");
  CHECK(compile_error("field a in {N, T}\nfield b in {T, N}\n") ==
        "d.tcr:2:13: symbol 'T' is value 1 of field 'a' but value 0 here (a shared symbol keeps its position)");
  CHECK(compile_error("field m in [1..4]\nparam a in {1, 2}\nrequire a > n\n") == "d.tcr:3:13: unknown name 'n'");
  CHECK(compile_error("field d in {X, Y}\nfield e in {P, Q}\nparam a in {1}\nrequire d == P || a > 0\n") ==
        "d.tcr:4:14: this symbol is a value of 'e', compared with 'd'");
  CHECK(compile_error("param a in {1}\nrequire a in {2}\n") == "d.tcr:2:1: parameter 'a' has no value left in its domain");
  CHECK(compile_error("param a\n") == "d.tcr:1:8: expected 'in' and the parameter's domain: param a in {1, 2, 4}");
  CHECK(compile_error("feature log2 a\nparam a in {1}\n") == "d.tcr:1:14: unknown name 'a'");
  CHECK(compile_error("param a in {1}\nfeature cube a\n") == "d.tcr:2:9: a feature's transform is raw or log2, not 'cube'");
  // Shared symbols at the same position compare with either field.
  CHECK(compile_error("field a in {N, T}\nfield b in {N, T}\nparam p in {1}\nrequire a == T || b == N || p > 0\n") == "ok");
  // Names the blob's schema can carry (kMaxProblemNameLength).
  CHECK(compile_error("field " + std::string(65, 'm') + " in [1..4]\n") == "d.tcr:1:7: field name longer than 64 characters");
  CHECK(compile_error("field d in {" + std::string(65, 'X') + "}\n") == "d.tcr:1:13: symbol longer than 64 characters");
}

TEST_CASE("kernel definition: compiled for a model's parameter order, a param still may not name a field") {
  // The model's params are declared before the text's fields are read (fuzz finding): the text's
  // own fields decide, not the built-in convolution's.
  rules::CompileOptions options;
  options.params = {"layout", "tile"};
  rules::CompiledRules out;
  CHECK(rules::compile("field m in [1..4]\nparam layout in {1, 2}\nparam tile in {4}\n", "d.tcr", options, &out).is_ok());
  Status clash = rules::compile("field tile in [1..4]\nparam layout in {1}\nparam tile in {4}\n", "d.tcr", options, &out);
  CHECK(std::string(clash.message()) == "d.tcr:1:7: field 'tile' clashes with a parameter");
  clash = rules::compile("field d in {tile}\nparam layout in {1}\nparam tile in {4}\n", "d.tcr", options, &out);
  CHECK(std::string(clash.message()) == "d.tcr:4:1: param 'tile' clashes with a problem field or symbol of the same name");
  clash = rules::compile("require tile > 0\n", "d.tcr", options, &out);  // the built-in convolution's layout
  CHECK(std::string(clash.message()) == "d.tcr:2:1: param 'layout' clashes with a problem field or symbol of the same name");
}

TEST_CASE("kernel definition: compiled alone, a model without a predictor that parses problems and searches") {
  tunecast_test::CompiledModel compiled;
  compile_definition(&compiled);
  const Model& model = compiled.model;
  CHECK(model.root()->format_version() == 3);
  CHECK_FALSE(model.has_predictor());
  const ProblemSchema schema = model.problem_schema();
  REQUIRE(schema.field_count() == 6);

  Problem problem;
  REQUIRE(parse_problem(schema, "m=100 trans_a=T", &problem).is_ok());
  CHECK(problem.get(0) == 100);
  CHECK(problem.get(1) == 64);  // k's default
  CHECK(problem.get(3) == 1);   // T
  char text[256];
  format_problem(schema, problem, text, sizeof text);
  CHECK(std::string(text) == "m=100,k=64,dtype=FP16,trans_a=T,trans_b=T,arch=h100");
  Problem again;
  REQUIRE(parse_problem(schema, text, &again).is_ok());
  CHECK(std::equal(problem.values, problem.values + 6, again.values));

  CHECK(std::string(parse_problem(schema, "k=3", &problem).message()) == "the problem lacks field 'm' (it has no default)");
  CHECK(std::string(parse_problem(schema, "m=0", &problem).message()) == "problem field 'm' must lie in [1..65536], got 0");
  CHECK(std::string(parse_problem(schema, "m=1,dtype=FP8", &problem).message()) ==
        "problem field 'dtype' does not take the value 'FP8' (accepted: FP16 BF16)");
  CHECK(std::string(parse_problem(schema, "m=1,c=3", &problem).message()) ==
        "unknown problem field 'c' (known: m k dtype trans_a trans_b arch)");

  // Search with no predictor: every proposal passes the rules; the optimum of a smooth landscape is found.
  REQUIRE(parse_problem(schema, "m=512,k=256", &problem).is_ok());
  int invalid = 0;
  auto bench = [&](const int64_t* v, int, double* time) {
    invalid += !check_candidate(model, problem, v, 3, nullptr);
    *time = 1.0 + (v[0] - 32) * (v[0] - 32) / 256.0 + (v[1] - 2) * (v[1] - 2) + (v[2] - 2) * (v[2] - 2);
    return BenchmarkStatus::kOk;
  };
  SearchOptions options;
  options.budget = 20;  // of the 27 configs the rules accept for this problem
  for (uint64_t seed : {0u, 1u, 7u}) {
    options.seed = seed;
    std::vector<unsigned char> scratch(search_scratch_bytes(model, options));
    std::vector<SearchTrial> history(20);
    SearchResult result;
    REQUIRE(search(model, problem, options, Benchmark::from(bench), scratch.data(), scratch.size(), history.data(), 20,
                   &result)
                .is_ok());
    CHECK(result.found);
    CHECK(result.best_time == doctest::Approx(1.0));
    CHECK(invalid == 0);
  }
}

TEST_CASE("search: Benchmark::prepare announces the explore batch before its first benchmark, in the order it is run") {
  tunecast_test::CompiledModel compiled;
  compile_definition(&compiled);
  Problem problem;
  REQUIRE(parse_problem(compiled.model.problem_schema(), "m=512,k=256", &problem).is_ok());
  std::vector<std::vector<int64_t>> announced, run;
  int runs_before_announce = -1;
  auto bench = [&](const int64_t* v, int n, double* time) {
    run.emplace_back(v, v + n);
    *time = 1.0 + static_cast<double>(v[0] + v[1] + v[2]);
    return BenchmarkStatus::kOk;
  };
  auto prepare = [&](const int64_t* configs, int count, int n) {
    if (runs_before_announce < 0) runs_before_announce = static_cast<int>(run.size());
    for (int i = 0; i < count; ++i) announced.emplace_back(configs + i * n, configs + (i + 1) * n);
  };
  SearchOptions options;
  options.budget = 20;
  options.seed = 5;
  std::vector<unsigned char> scratch(search_scratch_bytes(compiled.model, options));
  SearchResult result;
  REQUIRE(search(compiled.model, problem, options, Benchmark::from(bench, prepare), scratch.data(), scratch.size(),
                 nullptr, 0, &result)
              .is_ok());
  CHECK(runs_before_announce == 0);
  REQUIRE(announced.size() == static_cast<size_t>(default_free_start(20)));
  REQUIRE(run.size() >= announced.size());
  for (size_t i = 0; i < announced.size(); ++i) CHECK(announced[i] == run[i]);
}

TEST_CASE("search without a predictor: first_configs are measured first, in order, each checked against the space and the rules") {
  tunecast_test::CompiledModel compiled;
  compile_definition(&compiled);
  Problem problem;
  REQUIRE(parse_problem(compiled.model.problem_schema(), "m=512,k=256", &problem).is_ok());
  std::vector<std::vector<int64_t>> run;
  auto bench = [&](const int64_t* v, int n, double* time) {
    run.emplace_back(v, v + n);
    *time = 1.0 + static_cast<double>(v[0] + v[1] + v[2]);
    return BenchmarkStatus::kOk;
  };
  const int64_t first[] = {32, 2, 2,    // measured first
                           32, 8, 2,    // split 8: outside the domain (require split in {1, 2, 4})
                           16, 1, 3,    // warps 3: a rule rejects it
                           64, 4, 4,    // measured second
                           32, 2, 2};   // a repeat
  SearchOptions options;
  options.budget = 20;
  options.first_configs = first;
  options.first_config_count = 5;
  std::vector<unsigned char> scratch(search_scratch_bytes(compiled.model, options));
  SearchResult result;
  REQUIRE(search(compiled.model, problem, options, Benchmark::from(bench), scratch.data(), scratch.size(), nullptr, 0,
                 &result)
              .is_ok());
  REQUIRE(run.size() == 20);
  CHECK(run[0] == std::vector<int64_t>{32, 2, 2});
  CHECK(run[1] == std::vector<int64_t>{64, 4, 4});
  for (size_t i = 2; i < run.size(); ++i) CHECK(run[i] != std::vector<int64_t>{32, 2, 2});
  CHECK(result.best_time == doctest::Approx(19.0));  // 16,1,1: the space-filling start and the surrogate go on
}

// The measurements of a ToyGemm recording's one problem (tests/data/kernels/toy_gemm.tcr), in
// recorded order.
std::vector<codegen::TimingRecorder::Measurement> toy_gemm_measurements(const std::string& db) {
  codegen::TimingRecorder reader;
  codegen::RecordingInfo info;
  info.kernel = "ToyGemm";
  info.params = {"tile_m", "tile_n", "split_k", "warps"};
  info.fields = {"m", "n", "k", "dtype", "arch"};
  std::vector<codegen::TimingRecorder::Measurement> rows;
  codegen::TimingDb recorded;
  REQUIRE(codegen::TimingRecorder::open(db, info, &reader).is_ok());
  REQUIRE(codegen::TimingDb::open(db, "", &recorded).is_ok());
  REQUIRE(recorded.problems().size() == 1);
  REQUIRE(reader.measurements(recorded.problems()[0].config_id, &rows).is_ok());
  return rows;
}

TEST_CASE("rank_recorded_configs: the mean log speed over the problems that recorded a config, shrunk toward 0.5") {
  codegen::ProblemTimings a, b;
  auto ok = [](double t) { return codegen::ProblemTimings::Timing{t, true, "ok"}; };
  a.add({1}, ok(1.0));   // best on a
  a.add({2}, ok(1.25));
  a.add({3}, codegen::ProblemTimings::Timing{0.0, false, "out_of_resources"});
  b.add({1}, ok(2.0));   // half as fast as b's best
  b.add({2}, ok(1.0));   // best on b
  b.add({4}, ok(1.0));   // recorded once, at the optimum: the pseudo-problem keeps it below 2
  const std::vector<std::vector<int64_t>> ranked = codegen::rank_recorded_configs({&a, &b}, 10);
  // 2: (log .5 + log .8 + log 1) / 3; 1: (log .5 + log 1 + log .5) / 3; 4: (log .5 + log 1) / 2; 3: a failure.
  CHECK(ranked == std::vector<std::vector<int64_t>>{{2}, {4}, {1}, {3}});
  CHECK(codegen::rank_recorded_configs({&a, &b}, 2).size() == 2);
}

TEST_CASE("kernel definition CLI: check, tune with no model, --record, resume, --replay of the recording") {
  tunecast_test::TempDir dir;
  const std::string def = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_gemm.tcr";
  const std::string bench = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_bench.py";
  const std::string db = dir.file("rec.db");

  tunecast_test::CliResult r = tunecast_test::run_cli(dir, "check '" + def + "' --json");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"kernel\": \"ToyGemm\"") != std::string::npos);
  CHECK(r.out.find("\"configs\": 192") != std::string::npos);

  const std::string tune = "tune '" + def + "' --problem m=4096,n=4096,k=1024 --bench-cmd '" + bench + "' --record '" +
                           db + "' --seed 3 --json --quiet";
  r = tunecast_test::run_cli(dir, tune + " --budget 12");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("\"benchmarks\": 12") != std::string::npos);
  const std::string first = r.out;

  // Resumed with a larger budget: what it proposes again is answered from the recording (the
  // model-free start grows with the budget, so this trajectory is not a prefix of the first).
  r = tunecast_test::run_cli(dir, tune + " --budget 20");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  codegen::TimingDb recorded;
  REQUIRE(codegen::TimingDb::open(db, "", &recorded).is_ok());
  REQUIRE(recorded.keyed_by_definition());
  REQUIRE(recorded.problems().size() == 1);
  CHECK(recorded.problems()[0].text == "m=4096,n=4096,k=1024,dtype=FP16,arch=h100");
  codegen::ProblemTimings timings;
  REQUIRE(recorded.timings(recorded.problems()[0].config_id, &timings).is_ok());
  // Nothing measured twice: every recorded row is a distinct config, at most 12 + 20 of them.
  CHECK(timings.size() >= 20);
  CHECK(timings.size() <= 32);
  CHECK(toy_gemm_measurements(db).size() == timings.size());

  // The same search replayed from the recording gives the same best.
  r = tunecast_test::run_cli(dir, "tune '" + def + "' --problem m=4096,n=4096,k=1024 --replay '" + db +
                                      "' --seed 3 --budget 20 --json --quiet");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("\"unrecorded\": 0") != std::string::npos);

  // The stand-in fails every 128x128 config although the rules allow it: check names each recorded
  // one as a failure no rule explains (exit 1), or reports none.
  bool failed_128 = false;
  for (const auto& config : timings.configs()) failed_128 = failed_128 || (config[0] == 128 && config[1] == 128);
  r = tunecast_test::run_cli(dir, "check '" + def + "' --timings '" + db + "'");
  CHECK(r.exit_code == (failed_128 ? 1 : 0));
  CHECK(r.out.find(failed_128 ? "128,128," : "0 recorded failures the rules accept") != std::string::npos);

  // --prior: another problem's search starts from the recording's best configs, best first.
  const size_t best_at = [&] {
    size_t at = 0;
    for (size_t i = 0; i < timings.size(); ++i) {
      const auto* t = timings.find(timings.configs()[i]);
      if (t->ok && t->time == timings.optimum()) at = i;
    }
    return at;
  }();
  r = tunecast_test::run_cli(dir, "tune '" + def + "' --problem m=2048,n=4096,k=1024 --bench-cmd '" + bench +
                                      "' --prior '" + db + "' --budget 6 --json --quiet");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["history"][0]["values"].get<std::vector<int64_t>>() == timings.configs()[best_at]);
  r = tunecast_test::run_cli(dir, "tune '" + def + "' --problem m=2048,n=4096,k=1024 --bench-cmd '" + bench +
                                      "' --prior '" + dir.file("none.db") + "' --budget 6");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("none.db") != std::string::npos);

  // Bad problems: one clear error each.
  r = tunecast_test::run_cli(dir, "tune '" + def + "' --problem m=4096,n=4096 --bench-cmd '" + bench + "' --budget 2");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "tunecast: the problem lacks field 'k' (it has no default)\n");
}

TEST_CASE("tune --record keeps a candidate that hung as failed: resumed, the tune does not hang on it again") {
  tunecast_test::TempDir dir;
  const std::string def = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_gemm.tcr";
  const std::string db = dir.file("rec.db");
  // Hangs on its second candidate; the second process logs every candidate it is asked.
  std::ofstream(dir.file("hang.sh")) << "#!/bin/sh\nread a; echo 5\nread b; sleep 30\n";
  std::ofstream(dir.file("log.sh")) << "#!/bin/sh\nwhile read c; do echo \"$c\" >> '" << dir.file("asked.txt")
                                    << "'; echo 7; done\n";
  REQUIRE(std::system(("chmod +x '" + dir.file("hang.sh") + "' '" + dir.file("log.sh") + "'").c_str()) == 0);
  const std::string tune = "tune '" + def + "' --problem m=4096,n=4096,k=1024 --budget 6 --quiet --record '" + db + "'";
  tunecast_test::CliResult r = tunecast_test::run_cli(dir, tune + " --bench-timeout 0.5 --bench-cmd '" + dir.file("hang.sh") + "'");
  CHECK(r.exit_code == 1);
  const size_t at = r.err.find("no answer to candidate 2 (");
  REQUIRE_MESSAGE(at != std::string::npos, r.err);
  const std::string hung = r.err.substr(at + 26, r.err.find(')', at) - at - 26);  // "tile_m,tile_n,split_k,warps"
  {
    const std::vector<codegen::TimingRecorder::Measurement> rows = toy_gemm_measurements(db);
    REQUIRE(rows.size() == 2);
    CHECK(rows[1].params == hung);
    CHECK_FALSE(rows[1].ok);
    CHECK(rows[1].status == "timeout");
  }
  r = tunecast_test::run_cli(dir, tune + " --bench-cmd '" + dir.file("log.sh") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::ifstream asked(dir.file("asked.txt"));
  int lines = 0;
  for (std::string line; std::getline(asked, line); ++lines) CHECK_MESSAGE(line != hung, "asked again: ", line);
  CHECK(lines == 4);  // 6 benchmarks, 2 answered from the recording
  // The definition edited since: said (its rules may differ), the recording still answers.
  std::ifstream original(def);
  std::string text((std::istreambuf_iterator<char>(original)), std::istreambuf_iterator<char>());
  std::ofstream(dir.file("edited.tcr")) << text << "require warps <= 8   # edited\n";
  r = tunecast_test::run_cli(dir, "tune '" + dir.file("edited.tcr") + "' --problem m=4096,n=4096,k=1024 --budget 6 --record '" +
                                      db + "' --bench-cmd '" + dir.file("log.sh") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(r.err.find("rec.db was recorded with another text of " + dir.file("edited.tcr")) != std::string::npos, r.err);
  r = tunecast_test::run_cli(dir, "tune '" + def + "' --problem m=4096,n=4096,k=1024 --budget 6 --record '" + db +
                                      "' --bench-cmd '" + dir.file("log.sh") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(r.err.find("was recorded with another text") == std::string::npos, r.err);  // the text it was recorded with
}

TEST_CASE("tune stopped by a signal takes its benchmark command with it") {
  tunecast_test::TempDir dir;
  const std::string def = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_gemm.tcr";
  // The command (its own process group) notes its pid and hangs; tunecast is sent SIGTERM, as a
  // scheduler stops a job. (A shell's background job ignores SIGINT, so the test cannot send that.)
  std::ofstream(dir.file("stop.sh"))
      << "'" << TUNECAST_CLI_PATH << "' tune '" << def << "' --problem m=64,n=64,k=64 --budget 3 --quiet"
      << " --bench-cmd 'echo $$ > \"" << dir.file("pid") << "\"; exec sleep 60' 2>/dev/null &\n"
      << "t=$!\n"
      << "for i in $(seq 100); do [ -s '" << dir.file("pid") << "' ] && break; sleep 0.05; done\n"
      << "kill -TERM $t; wait $t; echo \"rc $?\"\n"
      << "p=$(cat '" << dir.file("pid") << "')\n"
      // Dead is gone or a zombie (state Z) that init has not reaped yet; a loaded machine gets 2 s.
      << "state() { cut -d' ' -f3 /proc/$p/stat 2>/dev/null; }\n"
      << "for i in $(seq 40); do case \"$(state)\" in ''|Z) break;; esac; sleep 0.05; done\n"
      << "case \"$(state)\" in ''|Z) echo gone;; *) echo alive; kill -9 $p;; esac\n";
  REQUIRE(std::system(("sh '" + dir.file("stop.sh") + "' > '" + dir.file("out") + "' 2>/dev/null").c_str()) == 0);
  std::ifstream in(dir.file("out"));
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(out == "rc 143\ngone\n", out);  // 128 + SIGTERM: died of the signal, after killing the command
}

TEST_CASE("kernel definition CLI: import-timings from CSV, merged idempotently; check lists failures no rule explains") {
  tunecast_test::TempDir dir;
  const std::string def = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_gemm.tcr";
  {
    std::ofstream csv(dir.file("t.csv"));
    csv << "m,n,k,dtype,tile_m,tile_n,split_k,warps,time_us,status\n"
           "64,64,512,FP16,16,16,1,2,5.5,ok\n"
           "64,64,512,FP16,128,128,1,8,,out_of_resources\n"
           "64,64,512,BF16,32,32,2,4,7.25,\n";
  }
  const std::string import = "import-timings '" + def + "' '" + dir.file("t.csv") + "' -o '" + dir.file("t.db") + "'";
  tunecast_test::CliResult r = tunecast_test::run_cli(dir, import);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("3 measurements of 2 problems read, 3 new") != std::string::npos);
  r = tunecast_test::run_cli(dir, import);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("3 measurements of 2 problems read, 0 new") != std::string::npos);

  r = tunecast_test::run_cli(dir, "check '" + def + "' --timings '" + dir.file("t.db") + "'");
  CHECK(r.exit_code == 1);  // the out_of_resources config passes every rule: a rule is missing
  CHECK(r.out.find("m=64,n=64,k=512,dtype=FP16,arch=h100  128,128,1,8  out_of_resources") != std::string::npos);

  // Bad rows: one clear error naming the line.
  {
    std::ofstream csv(dir.file("bad.csv"));
    csv << "m,n,k,tile_m,tile_n,split_k,warps,time_us\n64,64,512,16,16,1,2,fast\n";
  }
  r = tunecast_test::run_cli(dir, "import-timings '" + def + "' '" + dir.file("bad.csv") + "' -o '" + dir.file("b.db") + "'");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("bad.csv:2: time_us 'fast' is not a time") != std::string::npos);
}

// A T4 file of the 4 configs bx in {16, 32} x ty in {1, 2}, each run in `value` + index; `unit`
// on every measurement (absent when null), `file_unit` as metadata.timeunit (absent when null).
static std::string units_t4(const char* unit, const char* file_unit, double value) {
  nlohmann::json j;
  j["schema_version"] = "1.0.0";
  if (file_unit) j["metadata"]["timeunit"] = file_unit;
  int i = 0;
  for (int bx : {16, 32}) {
    for (int ty : {1, 2}) {
      nlohmann::json m = {{"name", "time"}, {"value", value + i++}};
      if (unit) m["unit"] = unit;
      j["results"].push_back({{"configuration", {{"bx", bx}, {"ty", ty}}}, {"invalidity", "correct"},
                              {"objectives", {"time"}}, {"measurements", {m}}});
    }
  }
  return j.dump();
}

TEST_CASE("timing DBs: repeats are samples, a merge adds each once, a config failed anywhere is failed in every reading") {
  tunecast_test::TempDir dir;
  const std::string def = dir.file("two.tcr");
  std::ofstream(def) << "kernel Two\nfield size in [0..0] default 0\nparam a in {1, 2}\nparam b in {1, 2}\n";
  auto count = [&](const std::string& db) {
    tunecast_test::CliResult r = tunecast_test::run_cli(dir, "import-timings '" + def + "' '" + db + "' -o '" +
                                                                 dir.file("count.db") + "'");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.err.substr(r.err.find("import-timings:"));
  };
  // A re-measurement equal to the first (a timer that rounds) is a second sample: it was dropped.
  std::ofstream(dir.file("repeat.csv")) << "a,b,time_us\n1,1,12.5\n1,1,12.5\n1,2,3\n";
  const std::string db = dir.file("repeat.db");
  const std::string import = "import-timings '" + def + "' '" + dir.file("repeat.csv") + "' -o '" + db + "'";
  tunecast_test::CliResult r = tunecast_test::run_cli(dir, import);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("3 measurements of 1 problem read, 3 new") != std::string::npos);
  r = tunecast_test::run_cli(dir, import);  // the same input again: nothing new
  CHECK(r.err.find("3 measurements of 1 problem read, 0 new") != std::string::npos);
  CHECK(count(db).find("3 new") != std::string::npos);  // a DB merged into another keeps both samples

  // ok in one shard, died in another: the finishing tune (resumed from the records) and a replay
  // agree whichever order the merge read them in (the resume took the first row).
  std::ofstream(dir.file("ok.csv")) << "a,b,time_us,status\n1,1,1.0,ok\n1,2,2.0,ok\n2,1,3.0,ok\n2,2,4.0,ok\n";
  std::ofstream(dir.file("died.csv")) << "a,b,time_us,status\n1,1,,died\n";
  std::ofstream(dir.file("list.txt")) << "size=0\n";
  std::string bests[2];
  for (int order = 0; order < 2; ++order) {
    const std::string merged = dir.file("merged" + std::to_string(order) + ".db");
    const std::string first = dir.file(order ? "died.csv" : "ok.csv"), second = dir.file(order ? "ok.csv" : "died.csv");
    r = tunecast_test::run_cli(dir, "import-timings '" + def + "' '" + first + "' '" + second + "' -o '" + merged + "'");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    r = tunecast_test::run_cli(dir, "tune '" + def + "' --problems '" + dir.file("list.txt") + "' --budget 4 --seed 1 --record '" +
                                        merged + "' --json --quiet");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    bests[order] = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')))["best"].dump();
    r = tunecast_test::run_cli(dir, "tune '" + def + "' --replay '" + merged + "' --budget 4 --seed 1 --json --quiet");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(nlohmann::json::parse(r.out)["best"].dump() == bests[order], r.out);
  }
  CHECK(bests[0] == bests[1]);
  CHECK(bests[0] == "[1,2]");  // 1,1 (1.0 us) died in a shard: failed
}

TEST_CASE("tune without --problem: the benchmark command gets the default problem's text, not an empty one") {
  tunecast_test::TempDir dir;
  const std::string def = dir.file("d.tcr");
  std::ofstream(def) << "kernel D\nfield size in [0..0] default 0\nfield arch default a100\nparam a in {1, 2}\n";
  std::ofstream(dir.file("b.sh")) << "echo \"$TUNECAST_PROBLEM\" > '" << dir.file("problem") << "'\nwhile read l; do echo 1.0; done\n";
  tunecast_test::CliResult r =
      tunecast_test::run_cli(dir, "tune '" + def + "' --budget 1 --quiet --bench-cmd 'sh " + dir.file("b.sh") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(tunecast_test::read_text(dir.file("problem")) == "size=0,arch=a100\n");
}

TEST_CASE("tune --record keeps the failure kind a benchmark names: fail compile_fail") {
  tunecast_test::TempDir dir;
  const std::string def = dir.file("k.tcr");
  std::ofstream(def) << "kernel K\nfield size in [0..0] default 0\nparam a in {1, 2, 3}\n";
  // The first config fails to compile, the second fails unnamed (the protocol said only 'fail').
  std::ofstream(dir.file("b.sh")) << "read l; echo 'fail compile_fail'\nread l; echo fail\nwhile read l; do echo 1.0; done\n";
  tunecast_test::CliResult r = tunecast_test::run_cli(dir, "tune '" + def + "' --budget 3 --quiet --record '" +
                                                               dir.file("r.db") + "' --bench-cmd 'sh " + dir.file("b.sh") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  codegen::TimingDb db;
  REQUIRE(codegen::TimingDb::open(dir.file("r.db"), "", &db).is_ok());
  std::vector<codegen::TimingDb::Row> rows;
  REQUIRE(db.rows(db.problems()[0].config_id, &rows).is_ok());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].timing.status == "compile_fail");
  CHECK(rows[1].timing.status == "fail");
  std::ofstream(dir.file("bad.sh")) << "while read l; do echo 'fail sometimes'; done\n";
  r = tunecast_test::run_cli(dir, "tune '" + def + "' --budget 3 --quiet --bench-cmd 'sh " + dir.file("bad.sh") + "'");
  CHECK(r.exit_code == 1);  // not a kind: the line is quoted
  CHECK(r.err.find("was 'fail sometimes'") != std::string::npos);
}

TEST_CASE("check --timings: configs outside the definition's domains are listed apart, not judged by the rules") {
  tunecast_test::TempDir dir;
  const std::string def = dir.file("narrow.tcr");
  std::ofstream(def) << "kernel Narrow\nfield size in [0..0] default 0\nparam a in {1, 2}\nparam b in {1, 2}\n";
  // b = 3 lies outside the (edited, narrower) domain; its failure was counted as one the rules accept.
  std::ofstream(dir.file("t.csv")) << "a,b,time_us,status\n1,1,1.0,ok\n2,3,,launch_fail\n1,3,2.0,ok\n";
  tunecast_test::CliResult r = tunecast_test::run_cli(
      dir, "import-timings '" + def + "' '" + dir.file("t.csv") + "' -o '" + dir.file("t.db") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  r = tunecast_test::run_cli(dir, "check '" + def + "' --timings '" + dir.file("t.db") + "' --json");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  const nlohmann::json t = nlohmann::json::parse(r.out)["timings"];
  CHECK(t["failures_the_rules_accept"] == 0);
  CHECK(t["outside_domains"] == 2);
  CHECK(t["outside_listed"][0]["config"] == "2,3");
}

TEST_CASE("Kernel Tuner times: the unit a T4 file states, else Kernel Tuner's milliseconds, into microseconds") {
  tunecast_test::TempDir dir;
  auto read = [&](const std::string& text, codegen::TuningCache* out) {
    std::ofstream(dir.file("u.json")) << text;
    return codegen::read_tuning_cache(dir.file("u.json"), out);
  };
  // The benchmark hub's T4 files say "" or "miliseconds" (metadata.timeunit): milliseconds.
  const struct {
    const char* unit;
    const char* file_unit;
    const char* expected;
  } cases[] = {{"ms", nullptr, "ms"},        {"", "miliseconds", "ms"}, {"", nullptr, "ms"},
               {nullptr, nullptr, "ms"},     {"milliseconds", nullptr, "ms"}, {nullptr, "s", "s"},
               {"us", "miliseconds", "us"},  {"ns", nullptr, "ns"}};
  for (const auto& c : cases) {
    codegen::TuningCache cache;
    REQUIRE(read(units_t4(c.unit, c.file_unit, 2.0), &cache).is_ok());
    CHECK_MESSAGE(cache.unit == c.expected, (c.unit ? c.unit : "(none)"), " / ", (c.file_unit ? c.file_unit : "(none)"));
  }
  CHECK(codegen::microseconds_per("ms") == 1e3);
  CHECK(codegen::microseconds_per("s") == 1e6);
  CHECK(codegen::microseconds_per("us") == 1.0);
  CHECK(codegen::microseconds_per("ns") == 1e-3);
  CHECK(codegen::microseconds_per("furlongs") == 0.0);
  codegen::TuningCache cache;
  Status s = read(units_t4("furlongs", nullptr, 2.0), &cache);
  CHECK_FALSE(s.is_ok());
  CHECK(std::string(s.message()).find("unknown time unit 'furlongs' (ms, s, us or ns)") != std::string::npos);
  {  // one file, two units: refused, not mixed
    nlohmann::json j = nlohmann::json::parse(units_t4("ms", nullptr, 2.0));
    j["results"][3]["measurements"][0]["unit"] = "us";
    s = read(j.dump(), &cache);
    CHECK_FALSE(s.is_ok());
    CHECK(std::string(s.message()).find("results[3]: time in us, earlier results in ms") != std::string::npos);
  }

  // import-timings and tune --record store microseconds, whatever the file's unit says.
  const std::string def = dir.file("units.tcr");
  std::ofstream(def) << "kernel Units\nfield size in [0..0] default 0\nparam bx in {16, 32}\nparam ty in {1, 2}\n";
  std::ofstream(dir.file("hub.json")) << units_t4("", "miliseconds", 2.0);  // as the hub writes it
  std::ofstream(dir.file("ms.json")) << units_t4("ms", nullptr, 2.0);
  std::ofstream(dir.file("us.json")) << units_t4("us", nullptr, 2000.0);
  for (const char* name : {"hub", "ms", "us"}) {
    const std::string db = dir.file(std::string(name) + ".db");
    tunecast_test::CliResult r = tunecast_test::run_cli(
        dir, "import-timings '" + def + "' '" + dir.file(std::string(name) + ".json") + "' --problem size=0 -o '" + db + "'");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    codegen::TimingDb imported;
    REQUIRE(codegen::TimingDb::open(db, "", &imported).is_ok());
    codegen::ProblemTimings timings;
    REQUIRE(imported.timings(imported.problems()[0].config_id, &timings).is_ok());
    CHECK_MESSAGE(timings.optimum() == doctest::Approx(2000.0), name);

    const std::string recorded = dir.file(std::string(name) + "_rec.db");
    r = tunecast_test::run_cli(dir, "tune '" + def + "' --replay '" + dir.file(std::string(name) + ".json") +
                                        "' --budget 4 --quiet --record '" + recorded + "'");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    codegen::TimingDb rec;
    REQUIRE(codegen::TimingDb::open(recorded, "", &rec).is_ok());
    codegen::ProblemTimings kept;
    REQUIRE(rec.timings(rec.problems()[0].config_id, &kept).is_ok());
    CHECK_MESSAGE(kept.optimum() == doctest::Approx(2000.0), name);
    // Resumed from the recording: its microseconds answer in the replay's unit again.
    r = tunecast_test::run_cli(dir, "tune '" + def + "' --replay '" + dir.file(std::string(name) + ".json") +
                                        "' --budget 4 --json --quiet --record '" + recorded + "'");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(nlohmann::json::parse(r.out)["speed"].get<double>() == doctest::Approx(1.0), name, r.out);
  }
}

TEST_CASE("Kernel Tuner files: the time whatever the objective; failures as the timing DB's kinds") {
  tunecast_test::TempDir dir;
  // A GFLOP/s objective (larger when better) was minimized as if it were the time.
  nlohmann::json j = nlohmann::json::parse(units_t4("ms", nullptr, 2.0));
  for (nlohmann::json& r : j["results"]) {
    r["objectives"] = {"GFLOP/s"};
    const double t = r["measurements"][0]["value"].get<double>();
    r["measurements"].push_back({{"name", "GFLOP/s"}, {"value", 1000.0 / t}, {"unit", ""}});
  }
  const char* kinds[][2] = {{"compile", "compile_fail"}, {"runtime", "launch_fail"}, {"constraints", "out_of_resources"}};
  for (int i = 0; i < 3; ++i) j["results"][i + 1]["invalidity"] = kinds[i][0];
  std::ofstream(dir.file("t4.json")) << j.dump();
  codegen::TuningCache cache;
  REQUIRE(codegen::read_tuning_cache(dir.file("t4.json"), &cache).is_ok());
  CHECK(cache.timings.optimum() == doctest::Approx(2.0));  // bx 16, ty 1: 2 ms, 500 GFLOP/s
  for (int i = 0; i < 3; ++i) {
    const codegen::ProblemTimings::Timing* t = cache.timings.find({j["results"][i + 1]["configuration"]["bx"].get<int64_t>(),
                                                          j["results"][i + 1]["configuration"]["ty"].get<int64_t>()});
    REQUIRE(t != nullptr);
    CHECK(t->status == kinds[i][1]);
  }
  // A Kernel Tuner cache file's error names alike.
  nlohmann::json c;
  c["tune_params_keys"] = {"bx"};
  c["cache"]["16"] = {{"bx", 16}, {"time", 1.5}};
  c["cache"]["32"] = {{"bx", 32}, {"time", "CompilationFailedConfig"}};
  c["cache"]["64"] = {{"bx", 64}, {"time", "RuntimeFailedConfig"}};
  c["cache"]["128"] = {{"bx", 128}, {"time", "InvalidConfig"}};
  c["cache"]["256"] = {{"bx", 256}, {"time", 1e20}};
  std::ofstream(dir.file("cache.json")) << c.dump();
  REQUIRE(codegen::read_tuning_cache(dir.file("cache.json"), &cache).is_ok());
  const std::pair<int64_t, const char*> expected[] = {
      {32, "compile_fail"}, {64, "launch_fail"}, {128, "out_of_resources"}, {256, "fail"}};
  for (const auto& e : expected) {
    const codegen::ProblemTimings::Timing* t = cache.timings.find({e.first});
    REQUIRE(t != nullptr);
    CHECK_MESSAGE(t->status == e.second, e.first);
  }
}

TEST_CASE("import-timings: two GPUs' Kernel Tuner files are not mixed into one problem; a failed import leaves no DB") {
  tunecast_test::TempDir dir;
  const std::string def = dir.file("gpus.tcr");
  std::ofstream(def) << "kernel Gpus\nfield size in [0..0] default 0\nfield arch default a100\nparam bx in {16, 32}\n"
                        "param ty in {1, 2}\n";
  std::ofstream(dir.file("a100.json")) << units_t4("ms", nullptr, 2.0);
  std::ofstream(dir.file("a100_again.json")) << units_t4("ms", nullptr, 2.0);  // the same run's numbers
  std::ofstream(dir.file("a4000.json")) << units_t4("ms", nullptr, 3.0);
  const std::string db = dir.file("gpus.db");
  // Both under one problem: each config's median used to be the mean of the two GPUs.
  tunecast_test::CliResult r = tunecast_test::run_cli(
      dir, "import-timings '" + def + "' '" + dir.file("a100.json") + "' '" + dir.file("a4000.json") + "' -o '" + db + "'");
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(r.err.find("already holds config (16,1) as 2000 us, ") != std::string::npos, r.err);
  CHECK(r.err.find("--problem arch=NAME") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(db));  // the DB this import created is not kept half-made
  r = tunecast_test::run_cli(dir, "import-timings '" + def + "' /nonexistent.json -o '" + db + "'");
  CHECK(r.exit_code != 0);
  CHECK_FALSE(std::filesystem::exists(db));
  // One problem per GPU, and the same run twice, are accepted.
  r = tunecast_test::run_cli(dir, "import-timings '" + def + "' '" + dir.file("a100.json") + "' '" + dir.file("a100_again.json") +
                                      "' --problem arch=a100 -o '" + db + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  r = tunecast_test::run_cli(dir, "import-timings '" + def + "' '" + dir.file("a4000.json") + "' --problem arch=a4000 -o '" + db + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  codegen::TimingDb imported;
  REQUIRE(codegen::TimingDb::open(db, "", &imported).is_ok());
  REQUIRE(imported.problems().size() == 2);
  // A failed import into an existing DB keeps the DB and what it held.
  r = tunecast_test::run_cli(dir, "import-timings '" + def + "' '" + dir.file("a4000.json") + "' --problem arch=a100 -o '" + db + "'");
  CHECK(r.exit_code != 0);
  REQUIRE(codegen::TimingDb::open(db, "", &imported).is_ok());
  CHECK(imported.problems().size() == 2);
}

TEST_CASE("tune --replay reads gzip-compressed Kernel Tuner files (the benchmark hub's .json.gz)") {
  tunecast_test::TempDir dir;
  const std::string t4 = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/search/t4_small.json";
  REQUIRE(std::system(("gzip -c '" + t4 + "' > '" + dir.file("t4.json.gz") + "'").c_str()) == 0);
  const tunecast_test::CliResult plain = tunecast_test::run_cli(dir, "tune --replay '" + t4 + "' --budget 7 --json --quiet");
  const tunecast_test::CliResult gz =
      tunecast_test::run_cli(dir, "tune --replay '" + dir.file("t4.json.gz") + "' --budget 7 --json --quiet");
  REQUIRE_MESSAGE(gz.exit_code == 0, gz.err);
  CHECK(gz.out.substr(gz.out.find("\"best\"")) .substr(0, 60) == plain.out.substr(plain.out.find("\"best\"")).substr(0, 60));
  {
    std::ofstream cut(dir.file("cut.json.gz"), std::ios::binary);
    const std::string bytes = tunecast_test::read_text(dir.file("t4.json.gz"));
    cut << bytes.substr(0, bytes.size() / 2);
  }
  const tunecast_test::CliResult cut =
      tunecast_test::run_cli(dir, "tune --replay '" + dir.file("cut.json.gz") + "' --budget 7 --quiet");
  CHECK(cut.exit_code != 0);
  CHECK(cut.err.find("a truncated or corrupt gzip file") != std::string::npos);
}
