// `tunecast tune` and `tunecast eval-search` end to end, on the tiny tunable kernel of
// search_fixtures.h: a benchmark process speaking the line protocol (and ones that break it), a
// synthetic timing DB, Kernel Tuner files (tests/data/search), and the errors a user can make.
#include <doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "search_fixtures.h"
#include "test_util.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/dataset_split.h"
#include "tunecast/codegen/timing_db.h"
#include "tunecast/codegen/tuning_cache.h"

namespace {

using nlohmann::json;

using tunecast_test::CliResult;
using tunecast_test::read_text;
using tunecast_test::run_cli;
using tunecast_test::TempDir;

void write_text(const std::string& path, const std::string& text, bool executable = false) {
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
  }
  if (executable) REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// An error: non-zero exit, and stderr's last line is tunecast's, naming `text`.
void check_error(const CliResult& r, const std::string& text) {
  CHECK(r.exit_code != 0);
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.find_last_of('\n') == std::string::npos ? 0 : last.find_last_of('\n') + 1);
  CHECK_MESSAGE(contains(last, text), r.err);
  CHECK_MESSAGE(last.rfind("tunecast", 0) == 0, r.err);
}

json parse_json(const CliResult& r) {
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  try {
    return json::parse(r.out);
  } catch (const json::exception& e) {
    FAIL("not JSON: " << e.what() << "\n" << r.out);
  }
  return json();
}

// The tiny kernel's model, written to dir/tiny_search.tcm.
std::string write_model(const TempDir& dir) {
  std::vector<uint8_t> bytes;
  const tunecast::Status status = tunecast::codegen::write_blob(tunecast_test::search_model(), &bytes);
  REQUIRE_MESSAGE(status.is_ok(), status.message());
  const std::string path = dir.file("tiny_search.tcm");
  write_text(path, std::string(bytes.begin(), bytes.end()));
  return path;
}

// A benchmark process: one awk run per candidate, a smooth function of log2 of the values with
// its optimum at 32,16,8,2 (time 10), failing beyond the landscape's shared-memory budget. It
// writes its environment to env.txt first.
std::string write_bench_script(const TempDir& dir) {
  const std::string path = dir.file("bench.sh");
  write_text(path,
             "#!/bin/sh\n"
             "printf '%s\\n%s\\n' \"$TUNECAST_PROBLEM\" \"$TUNECAST_PARAMS\" > '" + dir.file("env.txt") + "'\n"
             "while IFS= read -r line; do\n"
             "  echo \"$line\" | awk -F, '{ if ($1 * $2 * $3 > 131072) { print \"fail\"; next }\n"
             "    l = log(2); a = log($1)/l - 5; b = log($2)/l - 4; c = log($3)/l - 3; d = log($4)/l - 1\n"
             "    printf \"%.6f\\n\", 10 + 1.5*a*a + b*b + 2*c*c + 0.5*d*d }'\n"
             "done\n",
             true);
  return path;
}

constexpr const char* kProblem = "dir=F,dtype=FP32,n=4,c=64,k=128,h=14,w=14,y=1,x=1";

}  // namespace

TEST_CASE("CLI tune --bench-cmd: the line protocol finds the optimum of the process's formula") {
  TempDir dir;
  const std::string model = write_model(dir);
  const std::string bench = write_bench_script(dir);
  const CliResult r = run_cli(dir, "tune " + model + " --problem " + kProblem + " --budget 60 --json --bench-cmd '" +
                                       bench + "'");
  const json j = parse_json(r);
  CHECK(j["best"] == json({32, 16, 8, 2}));
  CHECK(j["time"].get<double>() == doctest::Approx(10.0));
  CHECK(j["parameters"] == json({"bm", "bn", "bk", "warps"}));
  CHECK(j["benchmarks"].get<int>() <= 60);
  CHECK(j["history"].size() == j["benchmarks"].get<size_t>());
  CHECK(j["history"][0]["phase"] == "explore");
  CHECK(j["skipped_invalid"].get<int>() >= 0);
  tunecast::Problem problem;
  REQUIRE(tunecast::parse_problem(kProblem, &problem).is_ok());
  for (const json& trial : j["history"]) {
    const std::vector<int64_t> v = trial["values"].get<std::vector<int64_t>>();
    CHECK(tunecast_test::search_rules_pass(problem, v.data()));  // nothing invalid was benchmarked
  }
  // The environment the process saw.
  CHECK(read_text(dir.file("env.txt")) == std::string(kProblem) + "\nbm,bn,bk,warps\n");
  // Progress: one line per benchmark on stderr.
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == j["benchmarks"].get<int>());
  CHECK(contains(r.err, "tune: 1/60 explore "));

  // Without --json: a short table on stdout; --quiet: nothing on stderr.
  const CliResult table = run_cli(dir, "tune " + model + " --problem " + kProblem + " --budget 60 --quiet --bench-cmd '" +
                                           bench + "'");
  CHECK_MESSAGE(table.exit_code == 0, table.err);
  CHECK(table.err.empty());
  CHECK(contains(table.out, "best: bm=32 bn=16 bk=8 warps=2  time 10"));
  CHECK(contains(table.out, "rank  phase"));
}

TEST_CASE("CLI tune --bench-cmd: a process that breaks the protocol is a clear error") {
  TempDir dir;
  const std::string model = write_model(dir);
  const std::string base = "tune " + model + " --problem " + kProblem + " --budget 20 --quiet --bench-cmd ";
  write_text(dir.file("garbage.sh"), "#!/bin/sh\nread line\necho 'twelve microseconds'\nsleep 5\n", true);
  CliResult r = run_cli(dir, base + dir.file("garbage.sh"));
  check_error(r, "the answer to candidate 1 (");
  CHECK_MESSAGE(contains(r.err, "was 'twelve microseconds': expected a time (a number >= 0) or 'fail [KIND]'"), r.err);
  CHECK(r.exit_code == 1);  // the command's fault: 2 is for bad arguments

  write_text(dir.file("early.sh"), "#!/bin/sh\nread line; echo 12.5\nread line; echo fail\nexit 3\n", true);
  r = run_cli(dir, base + dir.file("early.sh"));
  // Whether the process is gone before candidate 3 is written or after decides which is said.
  check_error(r, "candidate 3 (");
  CHECK_MESSAGE((contains(r.err, "the command ended its output before answering candidate 3") ||
                 contains(r.err, "cannot send candidate 3")),
                r.err);
  CHECK_MESSAGE(contains(r.err, "(it exited with status 3)"), r.err);

  write_text(dir.file("slow.sh"), "#!/bin/sh\nread line\nsleep 30\n", true);
  r = run_cli(dir, base + dir.file("slow.sh") + " --bench-timeout 0.3");
  check_error(r, "no answer to candidate 1");
  CHECK_MESSAGE(contains(r.err, "within 0.3 s (--bench-timeout); the command was killed"), r.err);

  r = run_cli(dir, base + "'exit 0'");
  check_error(r, "candidate 1");

  // A process that fails every candidate: nothing found, exit 3 after the results.
  write_text(dir.file("fails.sh"), "#!/bin/sh\nwhile read line; do echo fail; done\n", true);
  r = run_cli(dir, base + dir.file("fails.sh"));
  CHECK(r.exit_code == 3);
  CHECK_MESSAGE(contains(r.err, "no config ran successfully in"), r.err);
}

TEST_CASE("CLI tune --replay: a timing DB and Kernel Tuner files") {
  TempDir dir;
  const std::string model = write_model(dir);
  const std::vector<std::string> problems = tunecast_test::synthetic_problem_texts(6);
  const std::string db = dir.file("timings.db");
  REQUIRE(tunecast_test::write_synthetic_timing_db(db, problems, /*holes=*/true) == "");

  SUBCASE("the model's search, looked up in the DB") {
    const CliResult r = run_cli(dir, "tune " + model + " --problem " + problems[2] + " --budget 200 --json --replay " + db);
    const json j = parse_json(r);
    CHECK(j["speed"].get<double>() == doctest::Approx(1.0));
    CHECK(j["time"].get<double>() == doctest::Approx(j["optimum"].get<double>()));
    CHECK(j["stop"] == "converged");
    CHECK(contains(j["replay"].get<std::string>(), "TinyGemm"));
    CHECK(j["unit"] == "us");
    tunecast::Problem problem;
    REQUIRE(tunecast::parse_problem(problems[2], &problem).is_ok());
    for (const json& trial : j["history"]) {
      const std::vector<int64_t> v = trial["values"].get<std::vector<int64_t>>();
      CHECK(tunecast_test::search_rules_pass(problem, v.data()));
    }
    // A small budget: the speed is the share of the optimum reached so far.
    const json small = parse_json(run_cli(dir, "tune " + model + " --problem " + problems[2] +
                                                   " --budget 3 --json --quiet --replay " + db));
    CHECK(small["benchmarks"] == 3);
    CHECK(small["speed"].get<double>() <= 1.0);
    CHECK(small["speed"].get<double>() > 0.0);
  }
  SUBCASE("without a model: coordinate descent from the DB's default config") {
    const json j = parse_json(run_cli(dir, "tune --problem " + problems[1] + " --budget 300 --json --quiet --replay " + db));
    CHECK(j["history"][0]["values"] == json({16, 16, 8, 2}));
    CHECK(j["parameters"] == json({"bm", "bn", "bk", "warps"}));
    CHECK(j["speed"].get<double>() > 0.9);
    CHECK(j["failed_benchmarks"].get<int>() > 0);  // no rules: it learns invalidity by failing
  }
  SUBCASE("problems that are not in the DB, or several") {
    check_error(run_cli(dir, "tune " + model + " --problem dir=F,dtype=FP32,n=3,c=5,k=7,h=9,w=9,y=1,x=1 --budget 5 --replay " + db),
                "problem dir=F,dtype=FP32,n=3,c=5,k=7,h=9,w=9,y=1,x=1 is not in timing DB " + db + " (6 TinyGemm problems recorded)");
    // One field off (the recorded problems are NCHW): the message names it.
    const CliResult one_off = run_cli(dir, "tune " + model + " --problem " + problems[1] + ",layout=NHWC --budget 5 --replay " + db);
    CHECK(one_off.exit_code != 0);
    CHECK(one_off.err.rfind("tunecast: layout=NHWC where the rest matches NCHW: problem ", 0) == 0);
    // FP32 and FP16 twins: a problem that gives no dtype names both.
    const std::string twins = dir.file("twins.db");
    REQUIRE(tunecast_test::write_synthetic_timing_db(twins, {"dir=F,dtype=FP32,n=2,c=32,k=32,h=7,w=7,y=1,x=1",
                                                             "dir=F,dtype=FP16,n=2,c=32,k=32,h=7,w=7,y=1,x=1"}) == "");
    check_error(run_cli(dir, "tune " + model + " --problem dir=F,n=2,c=32,k=32,h=7,w=7,y=1,x=1 --budget 5 --replay " + twins),
                "problem dir=F,n=2,c=32,k=32,h=7,w=7,y=1,x=1 matches 2 problems of timing DB " + twins +
                    ": give dtype (FP32, FP16)");
    // A plain perf DB (no timings table).
    tunecast_test::write_synthetic_timing_db(dir.file("plain.db"), problems);
    sqlite3* handle = nullptr;
    REQUIRE(sqlite3_open(dir.file("plain.db").c_str(), &handle) == SQLITE_OK);
    REQUIRE(sqlite3_exec(handle, "DROP TABLE timings", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(handle);
    check_error(run_cli(dir, "tune " + model + " --problem " + problems[0] + " --budget 5 --replay " + dir.file("plain.db")),
                "is a perf DB without recorded timings");
  }
  SUBCASE("holes in the recording are failures, said in a note") {
    // bk = 128 with 8 warps is not recorded; a wide search meets some of them.
    const CliResult r = run_cli(dir, "tune --problem " + problems[3] + " --budget 50 --json --quiet --replay " + db +
                                         " --start 64,64,128,4");
    const json j = parse_json(r);
    CHECK(j["unrecorded"].get<int>() > 0);
    CHECK_MESSAGE(contains(r.err, "not in the recording (answered as fail)"), r.err);
    bool hole_failed = false;
    for (const json& trial : j["history"]) {
      hole_failed = hole_failed || (trial["values"] == json({64, 64, 128, 8}) && trial["time"].is_null());
    }
    CHECK(hole_failed);
  }
  SUBCASE("Kernel Tuner T4 results without a model: its parameters' values, from the first valid config") {
    const std::string t4 = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/search/t4_small.json";
    const json j = parse_json(run_cli(dir, "tune --replay " + t4 + " --budget 24 --json --quiet"));
    CHECK(j["parameters"] == json({"block_size_x", "tile_size", "layout"}));
    CHECK(j["history"][0]["values"] == json({16, 1, "col"}));
    CHECK(j["best"] == json({32, 2, "row"}));
    CHECK(j["time"].get<double>() == doctest::Approx(2.0));
    CHECK(j["speed"].get<double>() == doctest::Approx(1.0));
    CHECK(j["unit"] == "ms");
    const json started = parse_json(run_cli(dir, "tune --replay " + t4 + " --budget 5 --json --quiet --start 64,4,row"));
    CHECK(started["history"][0]["values"] == json({64, 4, "row"}));
    check_error(run_cli(dir, "tune --replay " + t4 + " --budget 5 --start 64,4,diagonal"), "'diagonal' is not a value of layout");
    check_error(run_cli(dir, "tune --replay " + t4 + " --budget 5 --start 64,4"), "--start has 2 values, the space 3");
    // With a model: the names must be the model's.
    check_error(run_cli(dir, "tune " + model + " --problem " + kProblem + " --budget 5 --replay " + t4),
                "the model has 4 parameters, the recording 3");
  }
  SUBCASE("Kernel Tuner's cache file") {
    const std::string cache = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/search/kt_cache_small.json";
    const json j = parse_json(run_cli(dir, "tune --replay " + cache + " --budget 10 --json --quiet"));
    CHECK(j["best"] == json({32, 2}));
    CHECK(j["speed"].get<double>() == doctest::Approx(1.0));
  }
  SUBCASE("argument errors") {
    check_error(run_cli(dir, "tune " + model + " --problem " + kProblem + " --budget 5"), "give one of --bench-cmd and --replay");
    check_error(run_cli(dir, "tune " + model + " --problem " + kProblem + " --replay " + db), "give --budget N");
    check_error(run_cli(dir, "tune " + model + " --budget 5 --replay " + db), "give --problem");
    check_error(run_cli(dir, "tune --budget 5 --bench-cmd true"), "--bench-cmd needs a MODEL");
    check_error(run_cli(dir, "tune " + model + " --problem " + problems[0] + " --budget 0 --replay " + db),
                "--budget 0 is outside 1..");
    check_error(run_cli(dir, "tune " + model + " --problem " + problems[0] + " --budget 5 --explore 33 --replay " + db),
                "--explore 33 is outside 1..32");
    check_error(run_cli(dir, "tune --replay " + dir.file("absent.json") + " --budget 5"), "absent.json");
    write_text(dir.file("t.db.xz"), std::string("\xFD" "7zXZ\0", 6) + "compressed bytes");
    check_error(run_cli(dir, "tune " + model + " --problem " + kProblem + " --budget 5 --replay " + dir.file("t.db.xz")),
                "t.db.xz is xz-compressed: decompress it first (xz -dk ");
    write_text(dir.file("other.json"), "{\"kernel\": 1}");
    check_error(run_cli(dir, "tune --replay " + dir.file("other.json") + " --budget 5"),
                "neither Kernel Tuner T4 results");
    // Options that would do nothing are refused, not ignored.
    const std::string t4 = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/search/t4_small.json";
    check_error(run_cli(dir, "tune --replay " + t4 + " --budget 5 --seed 3"),
                "--seed is for a search without a predictor (a KERNEL.tcr)");
    check_error(run_cli(dir, "tune " + model + " --problem " + problems[0] + " --budget 5 --seed 3 --replay " + db),
                "a model's search draws nothing");
    check_error(run_cli(dir, "tune --replay " + t4 + " --budget 5 --seed -1"), "--seed needs an integer 0..");
    check_error(run_cli(dir, "tune --replay " + t4 + " --budget 5 --seed 18446744073709551616"), "--seed needs an integer 0..");
    check_error(run_cli(dir, "tune --replay " + t4 + " --budget 5 --start 7,4,row"),
                "--start: 7 is not a recorded value of block_size_x (16, 32, 64, 128)");
    check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --seed -1"), "--seed needs an integer 0..");
    check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --split all --strategies config_list"),
                "none of --strategies can run here");
  }
}

TEST_CASE("CLI tune with a kernel definition: a start of more configs than a beam holds") {
  TempDir dir;
  const std::string def = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_gemm.tcr";
  write_text(dir.file("bench.sh"), "#!/bin/sh\nwhile read c; do echo 5; done\n", true);
  const CliResult r = run_cli(dir, "tune '" + def + "' --problem m=4096,n=4096,k=1024 --budget 50 --explore 40 --json "
                                   "--quiet --bench-cmd " + dir.file("bench.sh"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(parse_json(r)["benchmarks"].get<int>() == 50);
}

TEST_CASE("Kernel Tuner files: T4 results and cache read into one recording") {
  tunecast::codegen::TuningCache t4;
  REQUIRE(tunecast::codegen::read_tuning_cache(std::string(TUNECAST_SOURCE_DIR) + "/tests/data/search/t4_small.json", &t4)
              .is_ok());
  CHECK(t4.format == "T4");
  CHECK(t4.timings.size() == 24);
  CHECK(t4.indexed == std::vector<bool>{false, false, true});
  CHECK(t4.labels[2] == std::vector<std::string>{"\"col\"", "\"row\""});
  CHECK(t4.values[0] == std::vector<int64_t>{16, 32, 64, 128});
  const auto* failed = t4.timings.find({128, 4, 0});
  REQUIRE(failed != nullptr);
  CHECK_FALSE(failed->ok);
  CHECK(failed->status == "compile_fail");
  CHECK(t4.timings.optimum() == doctest::Approx(2.0));
  CHECK(t4.timings.optimal_config() == std::vector<int64_t>{32, 2, 1});
  tunecast::codegen::TuningCache kt;
  REQUIRE(tunecast::codegen::read_tuning_cache(std::string(TUNECAST_SOURCE_DIR) + "/tests/data/search/kt_cache_small.json",
                                               &kt)
              .is_ok());
  CHECK(kt.format == "Kernel Tuner cache");
  CHECK(kt.timings.size() == 6);
  CHECK(kt.timings.find({64, 1})->status == "compile_fail");
}

TEST_CASE("CLI eval-search: every strategy at every budget on the synthetic timing DB") {
  TempDir dir;
  const std::string model = write_model(dir);
  const std::vector<std::string> problems = tunecast_test::synthetic_problem_texts(40);
  size_t test_problems = 0;
  for (const std::string& text : problems) {
    tunecast::Problem p;
    REQUIRE(tunecast::parse_problem(text, &p).is_ok());
    test_problems += tunecast::codegen::split_of(p, 0) == tunecast::codegen::Split::kTest;
  }
  REQUIRE(test_problems >= 2);
  const std::string db = dir.file("timings.db");
  REQUIRE(tunecast_test::write_synthetic_timing_db(db, problems) == "");
  const CliResult r = run_cli(dir, "eval-search " + model + " --timings " + db +
                                       " --split test --budgets 1,2,5,10,20,50,100,3000 --json --random-runs 4");
  const json j = parse_json(r);
  CHECK(j["n"].get<size_t>() == test_problems);
  CHECK(j["budgets"] == json({1, 2, 5, 10, 20, 50, 100, 3000}));
  CHECK(j["default_config"] == json({16, 16, 8, 2}));
  CHECK(j["invalid_proposed_constrained"] == 0);
  const std::vector<std::string> names = {"predictor_top1", "predictor_top_b", "predictor_search",
                                          "default_search", "random",          "exhaustive"};
  for (const std::string& name : names) {
    CAPTURE(name);
    REQUIRE(j["strategies"].contains(name));
    double previous = 0.0;
    for (const char* b : {"1", "2", "5", "10", "20", "50", "100", "3000"}) {
      CAPTURE(b);
      const json& cell = j["strategies"][name][b];
      const double speed = cell["geomean_speed"].get<double>();
      CHECK(speed > 0.0);
      CHECK(speed <= 1.0);
      CHECK(cell["p10_speed"].get<double>() <= speed + 1e-12);
      CHECK(cell["mean_benchmarks"].get<double>() <= std::stod(b));
      if (name != "default_search") CHECK(cell["invalid_proposed"] == 0);
      if (name == "exhaustive" || name == "random" || name == "predictor_top_b") CHECK(speed >= previous - 1e-12);
      previous = speed;
    }
  }
  CHECK(j["strategies"]["predictor_top1"]["10"]["mean_benchmarks"] == 0);
  CHECK(j["strategies"]["predictor_top1"]["1"]["geomean_speed"] == j["strategies"]["predictor_top1"]["100"]["geomean_speed"]);
  // Every valid config measured: the optimum.
  CHECK(j["strategies"]["exhaustive"]["3000"]["geomean_speed"].get<double>() == doctest::Approx(1.0));
  CHECK(j["strategies"]["predictor_search"]["3000"]["geomean_speed"].get<double>() > 0.95);
  CHECK(j["strategies"]["predictor_search"]["10"].contains("overhead_us_per_benchmark"));

  // A subset of the strategies: the same figures for those (overhead is a wall time), nothing for
  // the others.
  const json some = parse_json(run_cli(dir, "eval-search " + model + " --timings " + db +
                                                " --split test --budgets 1,2,5,10,20,50,100,3000 --json --random-runs 4"
                                                " --strategies exhaustive,predictor_search"));
  CHECK(some["strategies"].size() == 2);
  for (const std::string name : {"exhaustive", "predictor_search"}) {
    CAPTURE(name);
    for (const char* b : {"1", "2", "5", "10", "20", "50", "100", "3000"}) {
      CAPTURE(b);
      json ours = some["strategies"][name][b], all = j["strategies"][name][b];
      ours.erase("overhead_us_per_benchmark");
      all.erase("overhead_us_per_benchmark");
      CHECK(ours == all);
    }
  }

  // The table, and the plot when matplotlib is there.
  const CliResult table = run_cli(dir, "eval-search " + model + " --timings " + db + " --budgets 1,10 --random-runs 2");
  CHECK_MESSAGE(table.exit_code == 0, table.err);
  CHECK(contains(table.out, "geomean speed"));
  CHECK(contains(table.out, "predictor_search"));
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0) {
    const CliResult plot = run_cli(dir, "eval-search " + model + " --timings " + db + " --budgets 1,10 --random-runs 2 --plot " +
                                            dir.file("s.png"));
    CHECK_MESSAGE(plot.exit_code == 0, plot.err);
    CHECK(std::filesystem::file_size(dir.file("s.png")) > 1000);
    CHECK(std::filesystem::exists(dir.file("s.png.json")));
  }
  // Errors.
  check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --budgets 1,0"), "--budgets: 0 is outside");
  check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --default 1,2"), "--default needs 4");
  check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --default 3,16,8,2"),
              "default_search: the start config's value 3 (parameter 0) is not among its values");
  check_error(run_cli(dir, "eval-search " + model + " --timings " + dir.file("absent.db")), "absent.db");
  check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --plot x.txt"), "must end with .png");
  check_error(run_cli(dir, "eval-search " + model + " --timings " + db + " --strategies random,greedy"),
              "--strategies: unknown strategy 'greedy'");
}

// Writes the fixtures to $TUNECAST_SEARCH_FIXTURES (a folder) for trying the commands by hand
// (docs/search.md): the tiny model and a synthetic timing DB of 200 problems.
TEST_CASE("search fixtures on request") {
  const char* folder = std::getenv("TUNECAST_SEARCH_FIXTURES");
  if (folder == nullptr) return;
  std::filesystem::create_directories(folder);
  std::vector<uint8_t> bytes;
  REQUIRE(tunecast::codegen::write_blob(tunecast_test::search_model(), &bytes).is_ok());
  write_text(std::string(folder) + "/tiny_search.tcm", std::string(bytes.begin(), bytes.end()));
  const std::string db = std::string(folder) + "/tiny_search_timings.db";
  std::remove(db.c_str());
  REQUIRE(tunecast_test::write_synthetic_timing_db(db, tunecast_test::synthetic_problem_texts(200)) == "");
  MESSAGE("wrote " << std::string(folder) << "/tiny_search.tcm and " << db);
}
