// tune --problems (docs/fleet.md): the queue over workers, protocol 2 (batch hints, a process serving
// many problems) beside protocol 1, --json lines, resuming after a kill -9 of tune or of a benchmark
// process, a hanging, dying or garbling benchmark process, and shards merged idempotently. The
// benchmark is a CPU stand-in (fleet_bench.py below) for tests/data/kernels/toy_gemm.tcr.
#include <doctest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

const char* kFleetBench = R"PY(#!/usr/bin/env python3
"""Stand-in benchmark process for tune --problems (tests/test_tune_list.cpp): the toy GEMM's line
protocol, protocol 2 when offered (unless FLEET_PROTOCOL=1), a deterministic time per problem and
config, and faults on request: FLEET_CHILD starts a child that keeps
stdout open; FLEET_FAULT=hang|die|garbage at the FLEET_FAULT_AT-th candidate a process is asked
(default 2), once per run: the first process to get there writes the config into the file
FLEET_ONCE, and no other faults. FLEET_LOG: a file that
gets one line per request ("PID measure PROBLEM PARAMS", "PID prepare PROBLEM C1 C2 ...",
"PID problem PROBLEM"). FLEET_SLEEP: seconds per measurement."""
import math, os, sys, time

problem = os.environ.get("TUNECAST_PROBLEM", "")
log_path = os.environ.get("FLEET_LOG")
sleep = float(os.environ.get("FLEET_SLEEP", "0"))
v2 = os.environ.get("TUNECAST_PROTOCOL") == "2" and os.environ.get("FLEET_PROTOCOL") != "1"

def log(text):
    if log_path:
        with open(log_path, "a") as f:
            f.write(f"{os.getpid()} {text}\n")

def field(name):
    for item in problem.replace(";", ",").replace(" ", ",").split(","):
        if item.startswith(name + "="):
            return int(item.split("=")[1])
    return 1

if os.environ.get("FLEET_CHILD"):  # a child that keeps our output open (as a compile pool would)
    import subprocess
    subprocess.Popen(["sleep", "300"])
if v2:
    print("tunecast-protocol 2", flush=True)
asked = 0
for line in sys.stdin:
    line = line.strip()
    if not v2 and (line.startswith("problem") or line.startswith("prepare")):
        log(f"unexpected {line}")  # a protocol-1 process must never see these
        print("unexpected line", flush=True)
        continue
    if line.startswith("problem "):
        problem = line[len("problem "):]
        log(f"problem {problem}")
        continue
    if line.startswith("prepare "):
        log(f"prepare {problem} {line[len('prepare '):]}")
        continue
    asked += 1
    fault = os.environ.get("FLEET_FAULT")
    if fault and asked == int(os.environ.get("FLEET_FAULT_AT", "2")) and not os.path.exists(os.environ["FLEET_ONCE"]):
        with open(os.environ["FLEET_ONCE"], "w") as f:
            f.write(line)
        log(f"fault {problem} {line}")
        if fault == "hang":
            time.sleep(1000)
        if fault == "die":
            os._exit(9)
        print("twelve microseconds", flush=True)
        continue
    tile_m, tile_n, split_k, warps = (int(v) for v in line.split(","))
    log(f"measure {problem} {line}")
    if sleep:
        time.sleep(sleep)
    if tile_m == 128 and tile_n == 128:
        print("fail", flush=True)
        continue
    best_m = 16 if field("m") < 256 else 64
    t = 10 + abs(math.log2(tile_m) - math.log2(best_m)) + 2 * abs(math.log2(tile_n) - 6) + 0.5 * split_k + abs(warps - 4)
    print(round(t + field("k") / 4096, 3), flush=True)
)PY";

struct Fleet {
  tunecast_test::TempDir dir;
  std::string def = std::string(TUNECAST_SOURCE_DIR) + "/tests/data/kernels/toy_gemm.tcr";

  explicit Fleet(int problems) {
    std::ofstream(dir.file("fleet_bench.py")) << kFleetBench;
    std::ofstream list(dir.file("problems.txt"));
    list << "# the toy GEMM's problems\n";
    for (int i = 1; i <= problems; ++i) list << "m=" << 64 * i << ",n=256,k=" << (i % 2 ? 1024 : 512) << "\n";
  }
  // The benchmark command: the stand-in with FLEET_* settings ("FLEET_SLEEP=0.05 ...").
  std::string bench(const std::string& log, const std::string& env = "") const {
    return "--bench-cmd 'FLEET_LOG=" + dir.file(log) + " " + env + " python3 " + dir.file("fleet_bench.py") + "'";
  }
  std::string tune(const std::string& db, const std::string& rest, int budget = 12) const {
    return "tune '" + def + "' --problems '" + dir.file("problems.txt") + "' --record '" + dir.file(db) +
           "' --budget " + std::to_string(budget) + " --seed 1 " + rest;
  }
  // The stand-in's log: lines "PID WHAT PROBLEM REST".
  std::vector<std::vector<std::string>> log(const std::string& name, const std::string& what = "") const {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(tunecast_test::read_text(dir.file(name)));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string x; words >> x;) w.push_back(x);
      if (w.size() >= 2 && (what.empty() || w[1] == what)) out.push_back(w);
    }
    return out;
  }
};

// (problem, params, status) of every recorded measurement.
std::vector<std::vector<std::string>> recorded(const std::string& db, const std::string& sql =
    "SELECT p.problem, t.params, t.status FROM timings t JOIN problems p ON p.id = t.problem ORDER BY t.rowid") {
  std::vector<std::vector<std::string>> out;
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE_MESSAGE(sqlite3_prepare_v2(handle, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK, sqlite3_errmsg(handle));
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      const unsigned char* text = sqlite3_column_text(stmt, c);
      row.push_back(text ? reinterpret_cast<const char*>(text) : "");
    }
    out.push_back(row);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(handle);
  return out;
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The CLI started in the background (exec'd by the shell: the pid is tunecast's).
pid_t start_cli(const tunecast_test::TempDir& dir, const std::string& args) {
  const std::string command = std::string("exec '") + TUNECAST_CLI_PATH + "' " + args + " >'" + dir.file("bg.out") +
                              "' 2>'" + dir.file("bg.err") + "'";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("tune --problems: two workers, protocol 2 (hints, one process for many problems), --json lines, resume") {
  Fleet fleet(6);
  tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("log.txt") + " --workers 2 --json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::vector<nlohmann::json> lines = json_lines(r.out);
  REQUIRE(lines.size() == 6);
  std::set<std::string> problems;
  for (const nlohmann::json& j : lines) {
    problems.insert(j["problem"].get<std::string>());  // as given
    CHECK(j["best"].size() == 4);
    CHECK(j["time"].get<double>() > 0.0);
    CHECK(j["benchmarks"] == 12);
    CHECK(j["measured"] == 12);
  }
  CHECK(problems.count("m=64,n=256,k=1024") == 1);
  CHECK(contains(r.err, "tune: 6 problems: 6 tuned now, 0 done before, 0 unfinished; 72 benchmarks measured"));
  // Protocol 2: at most one process per worker, told each problem; every hint is then run, in order.
  std::set<std::string> pids;
  for (const auto& w : fleet.log("log.txt")) pids.insert(w[0]);
  CHECK(pids.size() <= 2);
  CHECK(fleet.log("log.txt", "problem").size() >= 4);
  CHECK(fleet.log("log.txt", "unexpected").empty());
  const auto all = fleet.log("log.txt");
  int hints = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i][1] != "prepare") continue;
    ++hints;
    std::vector<std::string> next;  // the same process's next measurements
    for (size_t k = i + 1; k < all.size() && next.size() + 3 < all[i].size(); ++k) {
      if (all[k][0] == all[i][0] && all[k][1] == "measure") next.push_back(all[k][3]);
    }
    CHECK(std::vector<std::string>(all[i].begin() + 3, all[i].end()) == next);
  }
  CHECK(hints >= 5);  // one per problem; the first process's may be sent after its first answer

  // The table and perf_db: one row per problem.
  CHECK(recorded(fleet.dir.file("rec.db"), "SELECT problem, params FROM perf_db").size() == 6);
  CHECK(recorded(fleet.dir.file("rec.db")).size() == 72);

  // Run again: every problem is done, no process starts, the JSON lines say so.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("log2.txt") + " --workers 2 --json -o '" +
                                                        fleet.dir.file("t.tsv") + "'"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(json_lines(r.out).size() == 6);
  CHECK(json_lines(r.out)[0]["done_before"] == true);
  CHECK(json_lines(r.out)[0]["stop"] == "budget");  // the record's, as the first run reported it
  CHECK(fleet.log("log2.txt").empty());
  const std::string table = tunecast_test::read_text(fleet.dir.file("t.tsv"));
  CHECK(contains(table, "# problem\ttile_m,tile_n,split_k,warps\ttime_us\tbenchmarks\n"));
  CHECK(contains(table, "m=64,n=256,k=1024\t"));

  // A larger budget goes on from the recording: what it proposes again is answered from it (the
  // model-free start grows with the budget, so the new trajectory is not a prefix), nothing is
  // measured twice, and at most 6 x 16 configs are recorded in all.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("log3.txt") + " --workers 2 --quiet", 16));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const size_t measured = fleet.log("log3.txt", "measure").size();
  CHECK(measured >= 24);
  const auto after = recorded(fleet.dir.file("rec.db"), "SELECT p.problem, t.params FROM timings t JOIN problems p ON p.id = t.problem");
  CHECK(after.size() == 72 + measured);
  CHECK(std::set<std::vector<std::string>>(after.begin(), after.end()).size() == after.size());

  // The single-problem tune hints too.
  r = tunecast_test::run_cli(fleet.dir, "tune '" + fleet.def + "' --problem m=64,n=64,k=512 --budget 10 --quiet " +
                                            fleet.bench("log4.txt"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(fleet.log("log4.txt", "prepare").size() == 1);
  CHECK(fleet.log("log4.txt", "measure").size() == 10);
}

TEST_CASE("tune --problems: a protocol-1 process is started per problem and never sees a protocol-2 line") {
  Fleet fleet(3);
  const tunecast_test::CliResult r =
      tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("log.txt", "FLEET_PROTOCOL=1") + " --quiet"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::set<std::string> pids;
  for (const auto& w : fleet.log("log.txt")) pids.insert(w[0]);
  CHECK(pids.size() == 3);
  CHECK(fleet.log("log.txt", "unexpected").empty());
  CHECK(fleet.log("log.txt", "prepare").empty());
  CHECK(fleet.log("log.txt", "measure").size() == 36);
  CHECK(contains(r.out, "m=128,n=256,k=512\t"));
}

TEST_CASE("tune --problems: kill -9 of a benchmark process and of tune lose no recorded measurement; the rerun repeats none") {
  Fleet fleet(8);
  const std::string args = fleet.tune("rec.db", fleet.bench("log1.txt", "FLEET_SLEEP=0.04") + " --workers 2 --quiet");
  const pid_t pid = start_cli(fleet.dir, args);
  REQUIRE(pid > 0);
  auto wait_for = [&](size_t measured) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fleet.log("log1.txt", "measure").size() < measured && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return fleet.log("log1.txt", "measure").size() >= measured;
  };
  REQUIRE(wait_for(10));
  const int worker = std::stoi(fleet.log("log1.txt", "measure").back()[0]);  // a benchmark process, mid-candidate
  kill(worker, SIGKILL);
  REQUIRE(wait_for(30));
  kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  const auto before = recorded(fleet.dir.file("rec.db"));
  CHECK(before.size() >= 25);
  CHECK(recorded(fleet.dir.file("rec.db"), "SELECT * FROM tuned").size() < 8);
  bool died = false;
  for (const auto& row : before) died = died || row[2] == "died";
  CHECK(died);  // the killed process's candidate: a failed one

  const tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("log2.txt") + " --workers 2"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "0 unfinished"));
  CHECK(recorded(fleet.dir.file("rec.db"), "SELECT * FROM tuned").size() == 8);
  std::set<std::pair<std::string, std::string>> earlier;
  for (const auto& row : before) earlier.insert({row[0], row[1]});
  // The problems are listed as given; the recording keys them canonically (dtype and arch added).
  for (const auto& w : fleet.log("log2.txt", "measure")) {
    CHECK_MESSAGE(earlier.count({w[2] + ",dtype=FP16,arch=h100", w[3]}) == 0, std::string(w[2] + " " + w[3] + " measured again"));
  }
  const auto after = recorded(fleet.dir.file("rec.db"));
  std::set<std::pair<std::string, std::string>> unique;
  for (const auto& row : after) unique.insert({row[0], row[1]});
  CHECK(unique.size() == after.size());  // nothing recorded twice
  CHECK(after.size() == 96);
}

TEST_CASE("tune --problems: a hanging process is killed at --bench-timeout and restarted, its candidate failed") {
  Fleet fleet(2);
  tunecast_test::CliResult r = tunecast_test::run_cli(
      fleet.dir, fleet.tune("rec.db", fleet.bench("log.txt", "FLEET_FAULT=hang FLEET_ONCE=" + fleet.dir.file("once")) +
                                          " --bench-timeout 0.5 --json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "within 0.5 s (--bench-timeout); the command was killed; recorded as failed (timeout), restarting it"));
  const std::string hung = tunecast_test::read_text(fleet.dir.file("once"));  // the config it hung on
  REQUIRE(!hung.empty());
  bool timeout = false;
  for (const auto& row : recorded(fleet.dir.file("rec.db"))) timeout = timeout || (row[1] == hung && row[2] == "timeout");
  CHECK(timeout);
  // The hung config was the second of the explore batch: the process started after the timeout
  // is told the rest of the batch (its first hint lacks the config that hung).
  std::set<std::string> hinted;
  for (const auto& w : fleet.log("log.txt", "prepare")) {
    const bool first_of_process = hinted.insert(w[0]).second;
    if (first_of_process && hinted.size() > 1) CHECK(std::find(w.begin() + 3, w.end(), hung) == w.end());
  }
  CHECK(hinted.size() >= 2);
  for (const nlohmann::json& j : json_lines(r.out)) CHECK(j["benchmarks"] == 12);
}

TEST_CASE("tune --problems: a dying process is restarted, its candidate failed; too many deaths in a row stop the run") {
  Fleet fleet(2);
  auto died_on = [&](const std::string& db, const std::string& once) {
    const std::string config = tunecast_test::read_text(fleet.dir.file(once));
    bool died = false;
    for (const auto& row : recorded(fleet.dir.file(db))) died = died || (row[1] == config && row[2] == "died");
    return !config.empty() && died;
  };
  tunecast_test::CliResult r = tunecast_test::run_cli(
      fleet.dir, fleet.tune("rec.db", fleet.bench("log.txt", "FLEET_FAULT=die FLEET_ONCE=" + fleet.dir.file("once")) + " --quiet"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(died_on("rec.db", "once"));

  // Its child keeps the output open: the death is still seen at once (not at --bench-timeout), and
  // the child goes with the process group.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec3.db", fleet.bench("log3.txt", "FLEET_CHILD=1 FLEET_FAULT=die FLEET_ONCE=" +
                                                                            fleet.dir.file("once3")) +
                                                     " --bench-timeout 60 --quiet"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(died_on("rec3.db", "once3"));

  // A command that dies at once: the run stops after --max-restarts, naming the fault.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec2.db", "--bench-cmd 'exit 4' --max-restarts 1"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "the benchmark command failed 2 times in a row with no answer in between (--max-restarts 1; "
                        "those failures are not kept: rerun once it works); the last: --bench-cmd: "));
  CHECK(contains(r.err, "(it exited with status 4)"));
  // Its failures were the command's (a GPU not visible), not the candidates': the rerun with a
  // working command measured them as failed before, and found worse bests.
  CHECK(recorded(fleet.dir.file("rec2.db")).empty());
}

TEST_CASE("tune --problems: garbage from a benchmark process stops the run with the line quoted; a rerun resumes") {
  Fleet fleet(3);
  tunecast_test::CliResult r = tunecast_test::run_cli(
      fleet.dir, fleet.tune("rec.db", fleet.bench("log.txt", "FLEET_FAULT=garbage FLEET_ONCE=" + fleet.dir.file("once")) +
                                          " -o '" + fleet.dir.file("t.tsv") + "'"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "was 'twelve microseconds': expected a time (a number >= 0) or 'fail [KIND]', one line per candidate"));
  CHECK(contains(tunecast_test::read_text(fleet.dir.file("t.tsv")), "# unfinished: "));
  const size_t kept = recorded(fleet.dir.file("rec.db")).size();
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("log2.txt") + " --quiet"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(fleet.log("log2.txt", "measure").size() == 36 - kept);
}

TEST_CASE("tune --problems: shards, merged idempotently, finished from the records alone, equal one run") {
  Fleet fleet(7);
  for (int s = 0; s < 3; ++s) {
    const tunecast_test::CliResult r = tunecast_test::run_cli(
        fleet.dir, fleet.tune("s" + std::to_string(s) + ".db", fleet.bench("log.txt") + " --quiet --shard " +
                                                                   std::to_string(s) + "/3"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  CHECK(recorded(fleet.dir.file("s0.db"), "SELECT * FROM tuned").size() == 3);  // problems 0, 3, 6
  CHECK(recorded(fleet.dir.file("s2.db"), "SELECT * FROM tuned").size() == 2);
  const std::string import = "import-timings '" + fleet.def + "' '" + fleet.dir.file("s0.db") + "' '" +
                             fleet.dir.file("s1.db") + "' '" + fleet.dir.file("s2.db") + "' -o '" + fleet.dir.file("m.db") + "'";
  tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, import);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "84 measurements of 7 problems read, 84 new"));
  r = tunecast_test::run_cli(fleet.dir, import);
  CHECK(contains(r.err, "84 measurements of 7 problems read, 0 new"));
  // The merged records answer every benchmark: no --bench-cmd needed.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("m.db", "-o '" + fleet.dir.file("merged.tsv") + "'"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "0 benchmarks measured, 84 answered from"));
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("one.db", fleet.bench("log1.txt") + " --workers 3 -o '" +
                                                     fleet.dir.file("one.tsv") + "'"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(tunecast_test::read_text(fleet.dir.file("merged.tsv")) == tunecast_test::read_text(fleet.dir.file("one.tsv")));
  // A measurement missing from the records, with no --bench-cmd: that problem is unfinished, named.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("s0.db", "--quiet"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.out, "# unfinished: config "));
  CHECK(contains(r.err, "4 of 7 problems unfinished (rerun to resume them); the first, "));
}

TEST_CASE("tune --problems: a run is refused while another on this host tunes problems of its shard in the same DB") {
  Fleet fleet(4);
  // The row the running tune claimed (table running), polled until there, as a second job would find it.
  auto claimed = [&](const std::string& db) {
    for (int i = 0; i < 200; ++i) {
      sqlite3* handle = nullptr;
      bool found = false;
      if (sqlite3_open_v2(fleet.dir.file(db).c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* stmt = nullptr;
        found = sqlite3_prepare_v2(handle, "SELECT 1 FROM running", -1, &stmt, nullptr) == SQLITE_OK &&
                sqlite3_step(stmt) == SQLITE_ROW;
        sqlite3_finalize(stmt);
      }
      sqlite3_close(handle);
      if (found) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  const std::string slow = fleet.bench("l1.txt", "FLEET_SLEEP=0.2") + " --quiet";
  pid_t first = start_cli(fleet.dir, fleet.tune("rec.db", slow, 40));
  REQUIRE(claimed("rec.db"));
  // The same command twice (a requeued job while the first still runs) measured every problem twice.
  tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("l2.txt") + " --quiet", 40));
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(contains(r.err, "is tuning shard 0/1 of it, which shares problems with this one"), r.err);
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("l2.txt") + " --quiet --shard 1/2", 40));
  CHECK(r.exit_code == 2);
  ::kill(first, SIGKILL);  // its claim stays, stale: a rerun goes on
  ::waitpid(first, nullptr, 0);
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", fleet.bench("l3.txt") + " --quiet", 40));
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  // Shards without a problem in common share a DB.
  first = start_cli(fleet.dir, fleet.tune("shared.db", slow + " --shard 0/2", 40));
  REQUIRE(claimed("shared.db"));
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("shared.db", fleet.bench("l4.txt") + " --quiet --shard 1/2", 40));
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  ::kill(first, SIGKILL);
  ::waitpid(first, nullptr, 0);
}

TEST_CASE("tune --problems: a problem its --time-limit cut short is done for runs with a limit, continued without one") {
  Fleet fleet(1);
  const std::string slow = fleet.bench("l.txt", "FLEET_SLEEP=0.1") + " --json --quiet";
  tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", slow + " --time-limit 0.25", 8));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json cut = json_lines(r.out).at(0);
  CHECK(cut["stop"] == "time limit");
  REQUIRE(cut["benchmarks"].get<int>() < 8);
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", slow + " --time-limit 0.25", 8));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(json_lines(r.out).at(0)["done_before"] == true);
  // It used to be done for good: only a larger --budget went on.
  r = tunecast_test::run_cli(fleet.dir, fleet.tune("rec.db", slow, 8));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json full = json_lines(r.out).at(0);
  CHECK_FALSE(full.contains("done_before"));
  CHECK(full["benchmarks"] == 8);
}

TEST_CASE("tune --problems and import-timings: a DB file copied without its -wal is refused, not recorded over") {
  Fleet fleet(2);
  // What `cp shard.db` leaves of a killed run: SQLite's first page, the rows in shard.db-wal.
  const std::string copy = fleet.dir.file("copy.db");
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(copy.c_str(), &handle) == SQLITE_OK);
  REQUIRE(sqlite3_exec(handle, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(handle);
  tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, fleet.tune("copy.db", fleet.bench("l.txt") + " --quiet"));
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(contains(r.err, "copy.db holds no table: a recording copied without its"), r.err);  // it began afresh
  r = tunecast_test::run_cli(fleet.dir, "import-timings '" + fleet.def + "' '" + copy + "' -o '" + fleet.dir.file("m.db") + "'");
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(contains(r.err, "copy.db-wal file?"), r.err);  // it said "no table perf_db"
}

TEST_CASE("tune --problems: problems the kernel does not apply to are said, as tune --problem says one") {
  Fleet fleet(3);  // m = 64, 128, 192
  const std::string def = fleet.dir.file("narrow.tcr");
  std::ofstream(def) << tunecast_test::read_text(fleet.def) << "applies m >= 128\n";
  tunecast_test::CliResult r = tunecast_test::run_cli(
      fleet.dir, "tune '" + def + "' --problems '" + fleet.dir.file("problems.txt") + "' --record '" +
                     fleet.dir.file("rec.db") + "' --budget 4 --seed 1 --json " + fleet.bench("l.txt"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "tune: warning: 1 problem of "), r.err);
  CHECK(contains(r.err, "fails the kernel's applicability conditions (line 2: ToyGemm does not apply to this problem: "
                        "`m >= 128` fails)"));
  const std::vector<nlohmann::json> lines = json_lines(r.out);
  int flagged = 0;
  for (const nlohmann::json& j : lines) flagged += j.contains("not_applicable");
  CHECK(flagged == 1);
}

TEST_CASE("tune --problems: argument errors") {
  Fleet fleet(2);
  const std::string base = "tune '" + fleet.def + "' --problems '" + fleet.dir.file("problems.txt") + "' --budget 4 ";
  tunecast_test::CliResult r = tunecast_test::run_cli(fleet.dir, base + fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--problems needs --record DB"));
  r = tunecast_test::run_cli(fleet.dir, base + "--record r.db --shard 3/3 " + fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--shard takes I/N with 0 <= I < N (e.g. 0/4), got '3/3'"));
  r = tunecast_test::run_cli(fleet.dir, "tune '" + fleet.def + "' --problem m=1,n=1,k=1 --budget 2 --workers 2 " + fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--workers is for a problem list (--problems FILE)"));
  std::ofstream(fleet.dir.file("bad.txt")) << "m=64,n=64,k=512\nm=64,n=64\nm=64,n=64,k=512,warps=3\n";
  r = tunecast_test::run_cli(fleet.dir, "tune '" + fleet.def + "' --problems '" + fleet.dir.file("bad.txt") +
                                            "' --budget 2 --record r.db " + fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "bad.txt:2: the problem lacks field 'k' (it has no default)"));
  CHECK_MESSAGE(contains(r.err, "bad.txt:3: "), r.err);  // every bad line, not the first alone
  CHECK(contains(r.err, "(and 1 more bad line, said above)"));
  // A compiled blob handed to check: pointed at inspect, not parsed as text.
  r = tunecast_test::run_cli(fleet.dir, "compile '" + fleet.def + "' -o '" + fleet.dir.file("k.tcm") + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  r = tunecast_test::run_cli(fleet.dir, "check '" + fleet.dir.file("k.tcm") + "'");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "is a compiled model (a .tcm blob): check reads the definition's text"));
  r = tunecast_test::run_cli(fleet.dir, "tune '" + fleet.def + "' --problems '" + fleet.dir.file("problems.txt") +
                                            "' --budget 0 --record '" + fleet.dir.file("r0.db") + "' " + fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--budget 0 is outside 1.."));
  CHECK_FALSE(std::filesystem::exists(fleet.dir.file("r0.db")));
  // A command that cannot run (not found: the shell's 127) or that exits without reading stops the
  // run with nothing recorded: the candidates are not to blame.
  for (const char* broken : {"/nonexistent/bench", "true"}) {
    r = tunecast_test::run_cli(fleet.dir, base + "--record '" + fleet.dir.file("rb.db") + "' --bench-cmd '" + broken + "'");
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(contains(r.err, broken == std::string("true") ? "(it exited with status 0)" : "(it exited with status 127)"),
                  r.err);
    CHECK(recorded(fleet.dir.file("rb.db")).empty());
  }
  // A mistyped placeholder went to the shell as text (every worker on one GPU); ${worker_id} is the shell's.
  r = tunecast_test::run_cli(fleet.dir, base + "--record '" + fleet.dir.file("rw.db") +
                                            "' --workers 2 --bench-cmd 'CUDA_VISIBLE_DEVICES={workers} true'");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(contains(r.err, "'{workers}' is no placeholder; {worker} is the worker's number"), r.err);
  CHECK_FALSE(std::filesystem::exists(fleet.dir.file("rw.db")));
  // -o naming the record DB replaced it with the table, and a folder was refused only after the
  // whole list: both said before any benchmark.
  const std::string same = fleet.dir.file("same.db");
  r = tunecast_test::run_cli(fleet.dir, base + "--record '" + same + "' -o '" + same + "' " + fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(contains(r.err, "is the input"), r.err);
  CHECK_FALSE(std::filesystem::exists(same));
  // Another spelling of a path not made yet (it compared as text).
  r = tunecast_test::run_cli(fleet.dir, base + "--record '" + same + "' -o '" + fleet.dir.file("sub/../same.db") + "' " +
                                            fleet.bench("l.txt"));
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(contains(r.err, "is the input"), r.err);
  CHECK_FALSE(std::filesystem::exists(same));
  r = tunecast_test::run_cli(fleet.dir, base + "--record '" + fleet.dir.file("rd.db") + "' -o '" + fleet.dir.path.string() + "' " +
                                            fleet.bench("l.txt"));
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(contains(r.err, "it is a folder; name a file"), r.err);
  CHECK_FALSE(std::filesystem::exists(fleet.dir.file("rd.db")));
}
