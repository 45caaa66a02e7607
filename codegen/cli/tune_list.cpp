// tune --problems FILE: a queue of problems over --workers threads, each owning a benchmark process
// (BenchCommand) and running each problem's search (tunecast::search: re-entrant, its own scratch)
// on its thread. The record DB is the queue's state: every measurement is committed as it is made
// (one TimingRecorder shared under a mutex, WAL), and a problem is done when its
// row is in the `tuned` table (with its best in `perf_db`), written in one transaction when its
// search ends. A rerun skips done problems and resumes the others from what they recorded: the
// search is deterministic, so the recorded answers come back in order and nothing is measured
// twice. docs/fleet.md.
#include "tune_list.h"

#include <sqlite3.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_command.h"
#include "table.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/timing_db.h"

namespace tunecast::cli {

const std::vector<std::string> kTuneListOptions = {"problems", "workers", "shard", "output", "max-restarts", "perf-db"};

namespace {

using Clock = std::chrono::steady_clock;
using Measurement = codegen::TimingRecorder::Measurement;

std::string values_text(const int64_t* values, int count) {
  std::string text;
  for (int p = 0; p < count; ++p) text += (p ? "," : "") + std::to_string(values[p]);
  return text;
}

// One problem of the list.
struct Item {
  std::string given;                      // the line as given (comment and outer spaces removed)
  int line = 0;
  Problem problem;
  std::string text;                       // canonical
  std::vector<std::string> field_values;  // for the record DB's problems table
  // The outcome.
  bool finished = false;
  bool done_before = false;
  std::string error;
  std::string best;                       // comma-separated; empty: nothing ran
  double time = 0.0;
  int benchmarks = 0;
  std::string stop;                       // why its search ended (search_stop_name), this run's or the record's
  int not_applicable = -1;                // the applicability condition it fails (PredictInfo::not_applicable)
};

// The record DB's problem columns and one problem's values, as `tune --record` writes them.
void field_columns(const Model& model, const Problem& problem, codegen::RecordingInfo* info,
                   std::vector<std::string>* values) {
  const ProblemSchema schema = model.problem_schema();
  info->fields.clear();
  info->integer_fields.clear();
  values->clear();
  for (int f = 0; f < schema.field_count(); ++f) {
    if (!schema.builtin() && !problem.has(f)) continue;
    info->fields.push_back(schema.field_name(f));
    info->integer_fields.push_back(schema.field_kind(f) == FieldKind::kInteger);
    const char* symbol = schema.field_kind(f) == FieldKind::kInteger ? nullptr : schema.symbol_name(f, problem.get(f));
    values->push_back(!problem.has(f) ? "" : symbol ? symbol : std::to_string(problem.get(f)));
  }
}

Status read_list(const Model& model, const std::string& path, std::vector<Item>* items, size_t* duplicates) {
  std::set<std::string> seen;
  *duplicates = 0;
  Status first_bad;  // every bad line is said (a list of hundreds is mended in one go), the first returned
  int bad = 0;
  TUNECAST_RETURN_IF_ERROR(for_each_list_line(path, [&](int number, const std::string& line) -> Status {
    Item item;
    item.given = line;
    item.line = number;
    const Status status = parse_model_problem(model, line, &item.problem);
    if (!status) {
      if (bad++ == 0) {
        first_bad = Status::error(StatusCode::kInvalidArgument, "%s:%d: %s", path.c_str(), number, status.message());
      } else {
        std::fprintf(stderr, "tunecast: %s:%d: %s\n", path.c_str(), number, status.message());
      }
      return Status::ok();
    }
    item.text = problem_text(model, item.problem);
    if (!seen.insert(item.text).second) {
      ++*duplicates;
      return Status::ok();
    }
    items->push_back(std::move(item));
    return Status::ok();
  }));
  if (bad > 1) {
    return Status::error_with_tail(first_bad.code(), first_bad.message(),
                                   (" (and " + std::to_string(bad - 1) + " more bad line" + (bad > 2 ? "s" : "") + ", said above)").c_str());
  }
  if (bad == 1) return first_bad;
  if (items->empty()) return Status::error(StatusCode::kInvalidArgument, "%s holds no problems", path.c_str());
  return Status::ok();
}

// The record DB's tables beside the recorder's: `tuned` (the done marker) and `perf_db` (each
// done problem's best, docs/kernels.md's optional table), through a connection of our own.
class Marks {
 public:
  Marks() = default;
  Marks(const Marks&) = delete;
  Marks& operator=(const Marks&) = delete;
  ~Marks() { sqlite3_close(db_); }

  Status open(const std::string& path, bool create) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      return error("cannot open");
    }
    sqlite3_busy_timeout(db_, 60000);
    if (!create) return Status::ok();
    return exec(
        "CREATE TABLE IF NOT EXISTS tuned(problem INTEGER PRIMARY KEY REFERENCES problems(id), budget INTEGER NOT NULL, "
        "best TEXT, time_us REAL, benchmarks INTEGER NOT NULL, stop TEXT);"
        "CREATE TABLE IF NOT EXISTS perf_db(id INTEGER PRIMARY KEY, solver TEXT, problem INTEGER UNIQUE, params TEXT);");
  }

  // The problem's done row, if any: its budget, best ("" when nothing ran), time, benchmarks.
  Status find(const std::string& text, bool* found, int* budget, std::string* best, double* time, int* benchmarks,
              std::string* stop) {
    *found = false;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "SELECT t.budget, t.best, t.time_us, t.benchmarks, t.stop FROM tuned t JOIN problems p ON "
                           "p.id = t.problem WHERE p.problem = ?1",
                           -1, &stmt, nullptr) != SQLITE_OK) {
      return error("reading table tuned");
    }
    sqlite3_bind_text(stmt, 1, text.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      *found = true;
      *budget = sqlite3_column_int(stmt, 0);
      const unsigned char* b = sqlite3_column_text(stmt, 1);
      *best = b ? reinterpret_cast<const char*>(b) : "";
      *time = sqlite3_column_double(stmt, 2);
      *benchmarks = sqlite3_column_int(stmt, 3);
      const unsigned char* why = sqlite3_column_text(stmt, 4);
      *stop = why ? reinterpret_cast<const char*>(why) : "";
    }
    sqlite3_finalize(stmt);
    return Status::ok();
  }

  // Marks a problem done, its best in perf_db, in one transaction.
  Status done(int64_t problem, const std::string& solver, int budget, const SearchResult& result) {
    const std::string best = result.found ? values_text(result.best, result.parameter_count) : "";
    TUNECAST_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    Status s = step("DELETE FROM perf_db WHERE problem = ?1", problem, {}, {}, 0, 0, nullptr);
    if (s && result.found) s = step("INSERT INTO perf_db(solver, problem, params) VALUES (?2, ?1, ?3)", problem, solver, best, 0, 0, nullptr);
    if (s) {
      s = step("INSERT OR REPLACE INTO tuned(problem, budget, best, time_us, benchmarks, stop) VALUES (?1, ?4, ?3, ?6, ?5, ?2)",
               problem, search_stop_name(result.stop), best, budget, result.benchmarks,
               result.found ? &result.best_time : nullptr);
    }
    if (!s) {
      exec("ROLLBACK");
      return s;
    }
    TUNECAST_RETURN_IF_ERROR(exec("COMMIT"));
    // The write-ahead log into the DB file as each problem ends (without waiting for readers): a
    // run killed later, and the DB file copied alone, still holds every finished problem.
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    return Status::ok();
  }

  // Claims shard `shard` of `shards` for this process (table `running`): refused while another
  // tune on this host, still alive, tunes a shard sharing problems with it (the same command run
  // twice, a requeued job whose first run is still dying), which would measure every problem twice.
  // Other hosts' claims, and those of processes gone, are stale (a copied DB, a killed run).
  Status claim(int shard, int shards) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    TUNECAST_RETURN_IF_ERROR(exec("CREATE TABLE IF NOT EXISTS running(pid INTEGER, host TEXT, shard INTEGER, "
                                  "shards INTEGER, since TEXT)"));
    TUNECAST_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    sqlite3_stmt* stmt = nullptr;
    Status s = sqlite3_prepare_v2(db_, "SELECT pid, shard, shards, since FROM running WHERE host = ?1", -1, &stmt, nullptr) ==
                       SQLITE_OK
                   ? Status::ok()
                   : error("reading table running");
    if (s) sqlite3_bind_text(stmt, 1, host, -1, SQLITE_TRANSIENT);
    while (s && sqlite3_step(stmt) == SQLITE_ROW) {
      const long pid = static_cast<long>(sqlite3_column_int64(stmt, 0));
      const int other = sqlite3_column_int(stmt, 1), other_shards = sqlite3_column_int(stmt, 2);
      const unsigned char* since = sqlite3_column_text(stmt, 3);
      const int g = std::gcd(shards, other_shards);  // shards I/N and J/M share a problem when I = J mod gcd(N, M)
      if (pid == static_cast<long>(::getpid()) || !tunecast_alive(pid) || g <= 0 || (shard - other) % g != 0) continue;
      s = Status::error(StatusCode::kInvalidArgument,
                        "record DB: tune %ld on this host (since %s) is tuning shard %d/%d of it, which shares problems "
                        "with this one: wait for it to end, or stop it",
                        pid, since ? reinterpret_cast<const char*>(since) : "?", other, other_shards);
    }
    sqlite3_finalize(stmt);
    if (s) s = insert_claim(host, shard, shards);
    if (!s) {
      exec("ROLLBACK");
      return s;
    }
    return exec("COMMIT");
  }

  // Ends this process's claim (a killed run's stays, stale: its pid is gone).
  void release() {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, "DELETE FROM running WHERE pid = ?1", -1, &stmt, nullptr) == SQLITE_OK) {
      sqlite3_bind_int64(stmt, 1, ::getpid());
      sqlite3_step(stmt);
    }
    sqlite3_finalize(stmt);
  }

 private:
  // Whether process `pid` is alive and a tunecast (a recycled pid of another program is not).
  static bool tunecast_alive(long pid) {
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    return !comm || !std::getline(comm, name) || name.rfind("tunecast", 0) == 0;
  }

  Status insert_claim(const char* host, int shard, int shards) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, "INSERT INTO running(pid, host, shard, shards, since) VALUES (?1, ?2, ?3, ?4, datetime('now'))",
                           -1, &stmt, nullptr) != SQLITE_OK) {
      return error("writing table running");
    }
    sqlite3_bind_int64(stmt, 1, ::getpid());
    sqlite3_bind_text(stmt, 2, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(stmt, 3, shard);
    sqlite3_bind_int(stmt, 4, shards);
    const int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? Status::ok() : error("writing table running");
  }

  Status error(const char* what) const {
    return Status::error(StatusCode::kIoError, "record DB: %s: %s (%d)", what, db_ ? sqlite3_errmsg(db_) : "out of memory", db_ ? sqlite3_extended_errcode(db_) : 0);
  }
  Status exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      const Status s = Status::error(StatusCode::kIoError, "record DB: %s (%d) in %.40s", message ? message : sqlite3_errmsg(db_), sqlite3_extended_errcode(db_), sql);
      sqlite3_free(message);
      return s;
    }
    return Status::ok();
  }
  // ?1 problem, ?2 text a, ?3 text b (NULL when empty), ?4 int, ?5 int, ?6 double (NULL when null).
  Status step(const char* sql, int64_t problem, const std::string& a, const std::string& b, int i4, int i5,
              const double* d6) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return error("preparing");
    const int count = sqlite3_bind_parameter_count(stmt);
    sqlite3_bind_int64(stmt, 1, problem);
    if (count >= 2) sqlite3_bind_text(stmt, 2, a.c_str(), -1, SQLITE_TRANSIENT);
    if (count >= 3) {
      if (b.empty()) sqlite3_bind_null(stmt, 3);
      else sqlite3_bind_text(stmt, 3, b.c_str(), -1, SQLITE_TRANSIENT);
    }
    if (count >= 4) sqlite3_bind_int(stmt, 4, i4);
    if (count >= 5) sqlite3_bind_int(stmt, 5, i5);
    if (count >= 6) {
      if (d6) sqlite3_bind_double(stmt, 6, *d6);
      else sqlite3_bind_null(stmt, 6);
    }
    const int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? Status::ok() : error("writing");
  }

  sqlite3* db_ = nullptr;
};

std::string duration_text(double seconds) {
  char text[32];
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60) std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%lds", s);
  return text;
}

// What the workers share.
struct Run {
  const Args& args;
  const Model& model;
  const SearchOptions& options;
  const std::vector<std::string>& names;
  double bench_timeout = 600.0;
  int max_restarts = 3;
  std::string solver;
  codegen::RecordingInfo info;
  std::string record;
  std::vector<Item>& items;
  std::vector<size_t> queue;  // indices of items to tune
  bool json = false, quiet = false, bar = false;

  // One recorder for every worker (its calls under record_mutex): opening a second one in this
  // process while the first is in use would close a descriptor of the file outside SQLite (its xz
  // check), dropping the POSIX locks SQLite holds on it, and a reader elsewhere could then
  // checkpoint the WAL away under us. The Marks connections are opened by SQLite alone.
  codegen::TimingRecorder recorder;
  std::mutex record_mutex;

  std::mutex mutex;           // everything below, and stdout/stderr
  size_t next = 0;
  size_t finished = 0, failed = 0;
  long measured = 0, answered = 0, failed_benchmarks = 0, timeouts = 0, deaths = 0, processes = 0;
  Status fatal;               // a protocol error or an unusable record DB: every worker stops
  std::atomic<bool> stop{false};
  // A benchmark command that failed --max-restarts + 1 times in a row stopped the run: the
  // failures of every worker's current streak are the command's (no GPU, a missing library), not
  // their candidates', and are removed from the record.
  std::atomic<bool> streak_stop{false};
  Clock::time_point started = Clock::now();

  long units = 0;             // benchmarks answered this run (measured or from the DB), for the bar
  Clock::time_point drawn = Clock::now();

  Run(const Args& a, const Model& m, const SearchOptions& o, const std::vector<std::string>& n, std::vector<Item>& i)
      : args(a), model(m), options(o), names(n), items(i) {}

  // Under the mutex: the bar on a terminal, the ETA from the benchmarks left (each problem's budget).
  void draw() {
    const size_t total = queue.size();
    const size_t ended = finished + failed;
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    const double work = static_cast<double>(total) * options.budget;
    const double left = work - static_cast<double>(units);
    const std::string eta = units > 0 && ended < total ? duration_text(elapsed / units * std::max(0.0, left)) : "-";
    const int width = 30;
    const int filled = total ? static_cast<int>(width * ended / total) : width;
    std::fprintf(stderr, "\rtune: [%s%s] %zu/%zu problems%s, %s elapsed, ETA %s   ", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), ended, total,
                 failed ? (", " + std::to_string(failed) + " unfinished").c_str() : "", duration_text(elapsed).c_str(),
                 eta.c_str());
    if (ended == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
    drawn = Clock::now();
  }

  // One benchmark answered: redraws the bar at most twice a second.
  void tick() {
    std::lock_guard<std::mutex> lock(mutex);
    ++units;
    if (bar && !quiet && std::chrono::duration<double>(Clock::now() - drawn).count() >= 0.5) draw();
  }

  // The first fatal error stops every worker; true when this one was it.
  bool set_fatal(const Status& s) {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
    if (!fatal) return false;
    fatal = s;
    return true;
  }

  // Under the mutex: the JSON line and the progress of a problem that ended.
  void report(const Item& item, const SearchResult* result, int measured_now, int worker) {
    if (json) {
      nlohmann::json j;
      j["problem"] = item.given;
      j["canonical"] = item.text;
      std::vector<int64_t> best;
      if (!item.best.empty()) parse_param_list(item.best, &best);
      j["best"] = item.best.empty() ? nlohmann::json(nullptr) : nlohmann::json(best);
      j["time"] = item.best.empty() ? nlohmann::json(nullptr) : nlohmann::json(item.time);
      j["benchmarks"] = item.benchmarks;
      if (item.done_before) {
        j["done_before"] = true;
        j["stop"] = item.stop;
      } else if (item.finished) {
        j["measured"] = measured_now;
        j["failed_benchmarks"] = result ? result->failed_benchmarks : 0;
        j["stop"] = item.stop;
        j["worker"] = worker;
        if (item.not_applicable >= 0) j["not_applicable"] = not_applicable_note(model, item.not_applicable);
      } else {
        j["error"] = item.error;
      }
      std::printf("%s\n", json_text(j).c_str());
      std::fflush(stdout);
    }
    if (quiet || item.done_before) return;
    const size_t total = queue.size();
    const size_t ended = finished + failed;
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    const double left = static_cast<double>(total) * options.budget - static_cast<double>(units);
    const std::string eta = units > 0 && ended < total ? duration_text(elapsed / units * std::max(0.0, left)) : "-";
    if (bar) {
      draw();
      return;
    } else if (item.finished) {
      char time[48] = "";
      if (!item.best.empty()) std::snprintf(time, sizeof time, " %.6g us", item.time);
      std::fprintf(stderr, "tune: %zu/%zu %s: best %s%s (%d benchmarks, %d measured; worker %d; ETA %s)\n", ended, total,
                   item.given.c_str(), item.best.empty() ? "none" : item.best.c_str(), time, item.benchmarks,
                   measured_now, worker, eta.c_str());
    } else {
      std::fprintf(stderr, "tune: %zu/%zu %s: unfinished: %s\n", ended, total, item.given.c_str(), item.error.c_str());
    }
    std::fflush(stderr);
  }
};

class Worker {
 public:
  Worker(Run& run, int index) : run_(run), index_(index) {}

  void operator()() {
    Status s = marks_.open(run_.record, false);
    if (!s) {
      run_.set_fatal(s);
      return;
    }
    for (;;) {
      size_t at = 0;
      {
        std::lock_guard<std::mutex> lock(run_.mutex);
        if (run_.stop || run_.next >= run_.queue.size()) break;
        at = run_.queue[run_.next++];
      }
      tune(run_.items[at]);
    }
    if (run_.streak_stop) forget_streak();
    close_command();
  }

 private:
  // Removes this worker's current streak of failures from the record (Run::streak_stop).
  void forget_streak() {
    std::lock_guard<std::mutex> lock(run_.record_mutex);
    for (const int64_t row : streak_rows_) run_.recorder.remove(row);
    streak_rows_.clear();
  }

  void close_command() {
    if (!command_) return;
    std::string note;
    command_->finish(10.0, &note);
    if (!note.empty() && !run_.quiet) {
      std::lock_guard<std::mutex> lock(run_.mutex);
      std::fprintf(stderr, "tune: note: worker %d: %s\n", index_, note.c_str());
    }
    command_.reset();
  }

  // A benchmark process serving `item`: the one running when it speaks protocol 2 (told the new
  // problem) or already serves it; else a fresh one (also when the last one exited between two
  // candidates: no candidate was in flight, none is charged with it).
  Status command_for(const Item& item, bool* fresh = nullptr) {
    if (fresh) *fresh = false;
    if (command_ && command_->alive()) {
      if (command_problem_ == item.given) return Status::ok();
      if (command_->set_problem(item.given)) {
        command_problem_ = item.given;
        return Status::ok();
      }
    }
    close_command();
    std::string text = run_.args.get("bench-cmd");
    for (size_t at = text.find("{worker}"); at != std::string::npos; at = text.find("{worker}", at)) {
      text.replace(at, 8, std::to_string(index_));
    }
    std::string names;
    for (const std::string& n : run_.names) names += (names.empty() ? "" : ",") + n;
    command_ = std::make_unique<BenchCommand>();
    command_problem_ = item.given;
    if (fresh) *fresh = true;
    {
      std::lock_guard<std::mutex> lock(run_.mutex);
      ++run_.processes;
    }
    return command_->start(text,
                           {"TUNECAST_PROBLEM=" + item.given, "TUNECAST_PARAMS=" + names,
                            "TUNECAST_WORKER=" + std::to_string(index_)},
                           run_.bench_timeout);
  }

  void tune(Item& item) {
    int64_t id = 0;
    std::vector<Measurement> earlier;
    Status s;
    {
      std::lock_guard<std::mutex> lock(run_.record_mutex);
      s = run_.recorder.problem(item.text, item.field_values, &id);
      if (s) s = run_.recorder.measurements(id, &earlier);
    }
    if (!s) {
      run_.set_fatal(s);
      return;
    }
    std::map<std::string, std::deque<Measurement>> resumed = codegen::resume_answers(earlier);
    const bool have_command = run_.args.has("bench-cmd");
    int answered = 0, measured = 0;
    std::string problem_error;
    bool caused_stop = false;

    // The announced batch (configs the DB does not answer), so that a process started in its
    // middle (after a timeout or a death) is told the rest of it.
    std::vector<int64_t> batch;
    int batch_count = 0;
    size_t batch_next = 0;  // configs of the batch run so far
    auto prepare = [&](const int64_t* configs, int config_count, int count) {
      batch.clear();
      batch_next = 0;
      batch_count = count;
      if (!have_command || run_.stop) return;
      std::vector<int64_t> unanswered;
      std::map<std::string, size_t> used;
      for (int i = 0; i < config_count; ++i) {
        const int64_t* values = configs + static_cast<size_t>(i) * count;
        const std::string params = values_text(values, count);
        auto it = resumed.find(params);
        if (it != resumed.end() && used[params] < it->second.size()) {
          ++used[params];
          continue;
        }
        unanswered.insert(unanswered.end(), values, values + count);
      }
      batch = unanswered;
      if (unanswered.empty() || !command_for(item)) return;
      command_->prepare(unanswered.data(), static_cast<int>(unanswered.size()) / count, count);
    };
    auto run = [&](const int64_t* values, int count, double* time) {
      if (run_.stop) return BenchmarkStatus::kAbort;
      const std::string params = values_text(values, count);
      if (auto it = resumed.find(params); it != resumed.end() && !it->second.empty()) {
        const Measurement m = it->second.front();
        it->second.pop_front();
        ++answered;
        run_.tick();
        *time = m.time;
        return m.ok ? BenchmarkStatus::kOk : BenchmarkStatus::kFailed;
      }
      if (!have_command) {
        problem_error = "config " + params + " is not recorded and there is no --bench-cmd to measure it";
        return BenchmarkStatus::kAbort;
      }
      bool fresh = false;
      Status started = command_for(item, &fresh);
      if (!started) {
        run_.set_fatal(started);
        return BenchmarkStatus::kAbort;
      }
      const size_t batch_size = batch_count > 0 ? batch.size() / static_cast<size_t>(batch_count) : 0;
      const bool in_batch = batch_next < batch_size && batch_count == count &&
                            std::equal(values, values + count, batch.begin() + static_cast<std::ptrdiff_t>(batch_next * count));
      if (fresh && in_batch) {  // this config and the rest of the batch, to the new process
        command_->prepare(batch.data() + batch_next * count, static_cast<int>(batch_size - batch_next), count);
      }
      if (in_batch) ++batch_next;
      BenchmarkStatus answer = command_->run(values, count, time);
      Measurement m;
      m.params = params;
      if (answer == BenchmarkStatus::kAbort) {
        const BenchCommand::Fault fault = command_->fault();
        if (fault == BenchCommand::Fault::kGarbage || fault == BenchCommand::Fault::kNone || command_->broken_command()) {
          // A broken command (not found, or gone without reading) would mark candidate after
          // candidate failed in the record: it stops the run, nothing recorded.
          caused_stop = run_.set_fatal(Status::error(StatusCode::kIoError, "worker %d, problem %s: %s", index_,
                                                     item.given.c_str(), command_->error().message()));
          return BenchmarkStatus::kAbort;
        }
        // It hung (killed at the timeout) or died: the candidate is a failed one, the process
        // starts again at the next candidate.
        const bool timeout = fault == BenchCommand::Fault::kTimeout;
        {
          std::lock_guard<std::mutex> lock(run_.mutex);
          ++(timeout ? run_.timeouts : run_.deaths);
          if (!run_.quiet) {
            if (run_.bar) std::fprintf(stderr, "\n");
            std::fprintf(stderr, "tune: worker %d, problem %s: %s; recorded as failed (%s), restarting it\n", index_,
                         item.given.c_str(), command_->error().message(), timeout ? "timeout" : "died");
          }
        }
        command_error_ = command_->error().message();
        command_.reset();  // kills and reaps what is left of it
        if (++consecutive_faults_ > run_.max_restarts || run_.streak_stop) {
          if (!run_.streak_stop.exchange(true)) {
            run_.set_fatal(Status::error(StatusCode::kIoError,
                                         "worker %d: the benchmark command failed %d times in a row with no answer in "
                                         "between (--max-restarts %d; those failures are not kept: rerun once it "
                                         "works); the last: %s",
                                         index_, consecutive_faults_, run_.max_restarts, command_error_.c_str()));
          }
          return BenchmarkStatus::kAbort;  // this one is not recorded either; the worker's streak goes at its end
        }
        m.ok = false;
        m.status = timeout ? "timeout" : "died";
        answer = BenchmarkStatus::kFailed;
      } else {
        consecutive_faults_ = 0;
        streak_rows_.clear();  // the command answers: its earlier failures were its candidates'
        m.ok = answer == BenchmarkStatus::kOk;
        m.time = m.ok ? *time : 0.0;
        m.status = m.ok ? "ok" : command_->failure_kind();
      }
      Status recorded;
      {
        std::lock_guard<std::mutex> lock(run_.record_mutex);
        int64_t row = 0;
        recorded = run_.recorder.record(id, m, &row);
        if (recorded && !m.ok && (m.status == "died" || m.status == "timeout")) streak_rows_.push_back(row);
      }
      if (!recorded) {
        run_.set_fatal(recorded);
        return BenchmarkStatus::kAbort;  // never measure what cannot be kept
      }
      ++measured;
      run_.tick();
      return answer;
    };

    SearchOptions options = run_.options;
    options.observer = SearchObserver();
    std::vector<unsigned char> scratch(search_scratch_bytes(run_.model, options));
    SearchResult result;
    const Status searched = search(run_.model, item.problem, options, Benchmark::from(run, prepare), scratch.data(),
                                   scratch.size(), nullptr, 0, &result);
    Status marked = Status::ok();
    if (searched) marked = marks_.done(id, run_.solver, options.budget, result);
    if (!marked) run_.set_fatal(marked);

    std::lock_guard<std::mutex> lock(run_.mutex);
    run_.measured += measured;
    run_.answered += answered;
    run_.failed_benchmarks += result.failed_benchmarks;
    run_.units += std::max(0, options.budget - result.benchmarks);  // a search that converged early: no more to come
    if (searched && marked) {
      item.finished = true;
      item.best = result.found ? values_text(result.best, result.parameter_count) : "";
      item.time = result.best_time;
      item.benchmarks = result.benchmarks;
      item.stop = search_stop_name(result.stop);
      item.not_applicable = result.not_applicable;
      ++run_.finished;
    } else {
      item.error = !problem_error.empty() ? problem_error
                   : caused_stop          ? std::string(run_.fatal.message())
                   : !run_.fatal          ? std::string("stopped before it finished (the run stopped at an error)")
                   : !searched            ? searched.message()
                                          : marked.message();
      ++run_.failed;
    }
    run_.report(item, &result, measured, index_);
  }

  Run& run_;
  int index_;
  Marks marks_;
  std::unique_ptr<BenchCommand> command_;
  std::string command_problem_;
  int consecutive_faults_ = 0;
  std::vector<int64_t> streak_rows_;  // record rows of the current consecutive faults
  std::string command_error_;
};

// The results table: a header, then one line per problem of the selection.
std::string results_table(const std::vector<std::string>& names, const std::vector<Item>& items,
                          const std::vector<size_t>& selected) {
  std::string text = "# problem\t";
  for (size_t p = 0; p < names.size(); ++p) text += (p ? "," : "") + names[p];
  text += "\ttime_us\tbenchmarks\n";
  for (size_t i : selected) {
    const Item& item = items[i];
    text += item.given + "\t";
    if (!item.finished && !item.done_before) {
      text += "# unfinished: " + item.error + "\n";
    } else if (item.best.empty()) {
      text += "# nothing ran\t\t" + std::to_string(item.benchmarks) + "\n";
    } else {
      char time[32];
      std::snprintf(time, sizeof time, "%.6g", item.time);
      text += item.best + "\t" + time + "\t" + std::to_string(item.benchmarks) + "\n";
    }
  }
  return text;
}

// The bests as a MIOpen perf DB (convolution kernels: MIOpen's columns; one arch per file).
Status miopen_perf_db(const Model& model, const std::string& solver, const std::string& list_path,
                      const std::vector<Item>& items, const std::vector<size_t>& selected, const std::string& out,
                      std::string* bytes, size_t* written, size_t* held) {
  std::vector<table::Row> rows;
  for (size_t i : selected) {
    const Item& item = items[i];
    std::vector<int64_t> best;
    if (item.best.empty() || !parse_param_list(item.best, &best)) continue;
    table::Row row;
    row.problem = item.problem;
    row.text = item.text;
    row.line = item.line;
    row.best.length = static_cast<int32_t>(best.size());
    std::copy(best.begin(), best.end(), row.best.values);
    rows.push_back(row);
  }
  if (rows.empty()) return Status::error(StatusCode::kNotFound, "--perf-db: no problem has a best config to write");
  // One arch: checked on the whole list before tuning (tune_problem_list).
  TUNECAST_RETURN_IF_ERROR(table::check_perf_db_fields(list_path, rows));
  (void)model;
  return table::perf_db_bytes(solver, rows, out, bytes, written, held);
}

}  // namespace

int tune_problem_list(const Args& args, const LoadedModel& loaded, const SearchOptions& options, double bench_timeout,
                      const std::vector<std::string>& names) {
  const Model& model = loaded.model;
  int workers = 1, max_restarts = 3;
  Status status = args.get_int("workers", 1, &workers);
  if (status) status = args.get_int("max-restarts", 3, &max_restarts);
  if (!status) return usage_error("tune", status.message());
  if (workers < 1 || workers > 1024) return usage_error("tune", "--workers must lie in 1..1024");
  if (max_restarts < 0) return usage_error("tune", "--max-restarts must be >= 0");
  // A mistyped placeholder ({workers}, {Worker}) reached the shell as text: every worker got the same
  // GPU. A shell variable's ${worker_id} is the user's own.
  const std::string text = args.get("bench-cmd");
  for (size_t at = text.find('{'); at != std::string::npos; at = text.find('{', at + 1)) {
    const size_t end = text.find('}', at);
    if (end == std::string::npos || (at > 0 && text[at - 1] == '$')) continue;
    std::string inside = text.substr(at + 1, end - at - 1);
    for (char& c : inside) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (inside != "worker" && inside.find("worker") != std::string::npos) {
      return usage_error("tune", "--bench-cmd: '" + text.substr(at, end - at + 1) +
                                     "' is no placeholder; {worker} is the worker's number (0..N-1)");
    }
  }
  if (!args.has("bench-cmd") && workers > 1) {
    return usage_error("tune", "--workers needs --bench-cmd (without it, the list is answered from --record alone)");
  }
  int shard = 0, shards = 1;
  if (args.has("shard")) {
    const std::string text = args.get("shard");
    char* end = nullptr;
    shard = static_cast<int>(std::strtol(text.c_str(), &end, 10));
    const bool slash = end != text.c_str() && *end == '/';
    char* end2 = nullptr;
    if (slash) shards = static_cast<int>(std::strtol(end + 1, &end2, 10));
    if (!slash || end2 == end + 1 || *end2 != '\0' || shards < 1 || shard < 0 || shard >= shards) {
      return usage_error("tune", "--shard takes I/N with 0 <= I < N (e.g. 0/4), got '" + text + "'");
    }
  }
  if (workers > 1 && !sqlite3_threadsafe()) {
    return fail(Status::error(StatusCode::kInvalidArgument, "this SQLite is built single-threaded: use --workers 1"));
  }
  const char* solver = model.metadata("solver");
  if (solver == nullptr || *solver == '\0') {
    return fail(Status::error(StatusCode::kInvalidArgument, "--record: the model names no kernel (metadata solver)"));
  }
  const std::string record = args.get("record");
  std::vector<std::string> inputs = {args.positional()[0], args.get("problems")};
  status = prepare_output(record, inputs, true);
  inputs.push_back(record);
  if (status && args.has("output")) status = prepare_output(args.get("output"), inputs, false);
  if (status && args.has("perf-db")) {
    if (!model.problem_schema().builtin()) {
      return usage_error("tune", "--perf-db writes MIOpen's convolution columns; this kernel's problem is its own "
                                 "(its perf DB is the record DB's perf_db table)");
    }
    status = prepare_output(args.get("perf-db"), inputs, true);
    if (status) status = table::check_perf_db_output(args.get("perf-db"));
  }
  if (!status) return fail(status);

  std::vector<Item> items;
  size_t duplicates = 0;
  status = read_list(model, args.get("problems"), &items, &duplicates);
  if (!status) return fail(status);
  if (args.has("perf-db")) {  // refused now, not after the whole list is tuned
    auto arch = [](const Item& item) {
      return item.problem.has(ProblemField::kArch) ? item.problem.get(ProblemField::kArch) : -1;
    };
    for (const Item& item : items) {
      if (arch(item) != arch(items.front())) {
        return usage_error("tune", "--perf-db: a perf DB holds one arch (its key has none): " + args.get("problems") + ":" +
                                       std::to_string(items.front().line) + " and " + args.get("problems") + ":" +
                                       std::to_string(item.line) + " differ; write one per arch (a list per arch)");
      }
    }
  }
  const bool quiet = args.has("quiet");
  if (duplicates > 0 && !quiet) {
    std::fprintf(stderr, "tune: note: %zu line%s of %s repeat%s an earlier problem (tuned once)\n", duplicates,
                 duplicates == 1 ? "" : "s", args.get("problems").c_str(), duplicates == 1 ? "s" : "");
  }
  Run run(args, model, options, names, items);
  run.bench_timeout = bench_timeout;
  run.max_restarts = max_restarts;
  run.solver = solver;
  run.record = record;
  run.json = args.has("json");
  run.quiet = quiet;
  run.bar = isatty(STDERR_FILENO) != 0;
  run.info.kernel = solver;
  run.info.params = names;
  run.info.definition = loaded.definition_text;
  for (size_t i = 0; i < items.size(); ++i) {
    codegen::RecordingInfo info;
    field_columns(model, items[i].problem, &info, &items[i].field_values);
    if (i == 0) {
      run.info.fields = info.fields;
      run.info.integer_fields = info.integer_fields;
    } else if (info.fields != run.info.fields) {
      return fail(Status::error(StatusCode::kInvalidArgument,
                                "%s:%d sets other fields than line %d: one record DB keys every problem by the same fields",
                                args.get("problems").c_str(), items[i].line, items[0].line));
    }
  }

  // The record DB first, in this thread (its tables created once), then the done marks.
  std::vector<size_t> selected;
  for (size_t i = 0; i < items.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(shards)) == shard) selected.push_back(i);
  }
  Marks claim;  // this run's claim on its shard of the record DB, held to its end
  struct Release {
    Marks& marks;
    ~Release() { marks.release(); }
  } release{claim};
  {
    Marks marks;
    status = codegen::TimingRecorder::open(record, run.info, &run.recorder);
    if (status && run.recorder.other_definition() && !quiet) {
      std::fprintf(stderr, "tune: note: %s was recorded with another text of %s (its rules or domains may differ): "
                           "its measurements still answer the configs they name\n",
                   record.c_str(), args.positional()[0].c_str());
    }
    if (status) status = marks.open(record, true);
    if (status) status = claim.open(record, false);
    if (status) status = claim.claim(shard, shards);
    for (size_t k = 0; status && k < selected.size(); ++k) {
      Item& item = items[selected[k]];
      bool found = false;
      int budget = 0;
      status = marks.find(item.text, &found, &budget, &item.best, &item.time, &item.benchmarks, &item.stop);
      // Its --time-limit ended it early: done for a run with a time limit too, continued by one without.
      const bool cut_short = item.stop == search_stop_name(SearchStop::kTimeLimit) && options.time_limit <= 0.0;
      if (status && found && budget >= options.budget && !cut_short) {
        item.done_before = true;
      } else {
        item.best.clear();
        item.stop.clear();
        run.queue.push_back(selected[k]);
      }
    }
    if (!status) return fail(status);
  }
  const size_t done_before = selected.size() - run.queue.size();
  workers = std::max(1, std::min<int>(workers, static_cast<int>(run.queue.size())));  // no idle worker
  if (!quiet) {
    std::fprintf(stderr, "tune: %zu problem%s%s, %zu done before (in %s), %zu to tune on %d worker%s\n", selected.size(),
                 selected.size() == 1 ? "" : "s",
                 shards > 1 ? (" (shard " + std::to_string(shard) + "/" + std::to_string(shards) + " of " +
                               std::to_string(items.size()) + ")").c_str()
                            : "",
                 done_before, record.c_str(), run.queue.size(), workers, workers == 1 ? "" : "s");
  }
  for (size_t i : selected) {
    if (items[i].done_before && run.json) run.report(items[i], nullptr, 0, -1);
  }
  {
    std::vector<std::thread> threads;
    std::vector<std::unique_ptr<Worker>> pool;
    for (int w = 0; w < workers; ++w) pool.push_back(std::make_unique<Worker>(run, w));
    for (int w = 0; w < workers && !run.queue.empty(); ++w) threads.emplace_back(std::ref(*pool[static_cast<size_t>(w)]));
    for (std::thread& t : threads) t.join();
  }
  for (size_t i : run.queue) {  // never taken: the run stopped first
    Item& item = items[i];
    if (!item.finished && item.error.empty()) {
      item.error = "not started (the run stopped at an error)";
      ++run.failed;
      run.report(item, nullptr, 0, -1);
    }
  }

  const std::string table = results_table(names, items, selected);
  if (args.has("output")) {
    status = write_output(args.get("output"), table);
    if (!status) return fail(status);
  } else if (!run.json) {
    std::printf("%s", table.c_str());
  }
  size_t perf_rows = 0, perf_held = 0;
  if (args.has("perf-db")) {
    std::string bytes;
    status = miopen_perf_db(model, run.solver, args.get("problems"), items, selected, args.get("perf-db"), &bytes,
                            &perf_rows, &perf_held);
    if (status) status = write_output(args.get("perf-db"), bytes);
    if (!status) return fail(status);
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - run.started).count();
  if (!quiet) {
    std::fprintf(stderr,
                 "tune: %zu problem%s: %zu tuned now, %zu done before, %zu unfinished; %ld benchmarks measured, %ld "
                 "answered from %s, %ld failed; %ld benchmark process%s started (%ld timed out, %ld died); %s\n",
                 selected.size(), selected.size() == 1 ? "" : "s", run.finished, done_before, run.failed, run.measured, run.answered, record.c_str(),
                 run.failed_benchmarks, run.processes, run.processes == 1 ? "" : "es", run.timeouts, run.deaths,
                 duration_text(elapsed).c_str());
    // As `tune --problem` warns of one: the kernel's applicability conditions (MIOpen's IsApplicable).
    size_t inapplicable = 0;
    const Item* first = nullptr;
    for (size_t i : selected) {
      if (items[i].not_applicable < 0) continue;
      if (inapplicable++ == 0) first = &items[i];
    }
    if (first != nullptr) {
      std::fprintf(stderr, "tune: warning: %zu problem%s of %s fail%s the kernel's applicability conditions (line %d: %s)\n",
                   inapplicable, inapplicable == 1 ? "" : "s", args.get("problems").c_str(), inapplicable == 1 ? "s" : "",
                   first->line, not_applicable_note(model, first->not_applicable).c_str());
    }
    if (args.has("output")) std::fprintf(stderr, "tune: results in %s; best configs in %s (table perf_db)\n",
                                         args.get("output").c_str(), record.c_str());
    if (args.has("perf-db")) {
      std::fprintf(stderr, "tune: MIOpen perf DB %s: %zu rows written%s\n", args.get("perf-db").c_str(), perf_rows,
                   perf_held > perf_rows ? (", " + std::to_string(perf_held) + " in the file (merged)").c_str() : "");
    }
  }
  if (!run.fatal) return fail(run.fatal);
  if (run.failed > 0) {
    std::string first;  // the reason, also under --quiet (which keeps the per-problem lines back)
    for (size_t i : selected) {
      if (!items[i].error.empty()) {
        first = items[i].given + ": " + items[i].error;
        break;
      }
    }
    return fail(Status::error(StatusCode::kIoError, "%zu of %zu problems unfinished (rerun to resume them); the first, %s",
                              run.failed, selected.size(), first.c_str()));
  }
  return 0;
}

}  // namespace tunecast::cli
