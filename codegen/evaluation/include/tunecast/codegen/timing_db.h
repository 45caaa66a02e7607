// Recorded exhaustive measurements for replaying a tuning search (tunecast tune --replay,
// tunecast eval-search): tunecast's timing DB, a SQLite file laid out like a MIOpen perf DB
// (tables config and perf_db, read by perfdb.h) plus `timings(config, params, time_us, status)`,
// one row per (problem, config), and `meta(key, value)`; docs/search.md describes it. Host-only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tunecast/codegen/perfdb.h"
#include "tunecast/problem.h"
#include "tunecast/search.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// One problem's recorded configs: values in the recording's parameter order.
class ProblemTimings {
 public:
  struct Timing {
    double time = 0.0;   // when ok
    bool ok = false;
    std::string status;  // "ok", or the failure kind ("out_of_resources", "InvalidConfig"...)
  };

  void add(std::vector<int64_t> values, Timing timing);
  // The recorded timing of `values`, or null when the config was not recorded.
  const Timing* find(const std::vector<int64_t>& values) const;
  // Every recorded config in recording order (file order).
  const std::vector<std::vector<int64_t>>& configs() const { return order_; }
  size_t size() const { return order_.size(); }
  bool has_optimum() const { return has_optimum_; }
  double optimum() const { return optimum_; }                    // the best ok time
  const std::vector<int64_t>& optimal_config() const { return optimal_; }
  double slowest() const { return slowest_; }                    // the worst ok time
  // Distinct values of parameter p over the recorded configs, ascending.
  std::vector<int64_t> values_of(size_t p) const;

 private:
  std::map<std::vector<int64_t>, Timing> by_values_;
  std::vector<std::vector<int64_t>> order_;
  bool has_optimum_ = false;
  double optimum_ = 0.0;
  double slowest_ = 0.0;
  std::vector<int64_t> optimal_;
};

struct TimingProblem {
  Problem problem;               // from the config row (perfdb.h's reading), arch from the file name
  int64_t config_id = 0;
  std::vector<int64_t> tuned;    // perf_db's params: the fastest recorded config
};

class TimingDb {
 public:
  // Opens `path` read-only: tables config, perf_db (PerfDb::open's checks), timings and meta.
  // `solver` picks the perf_db rows; empty: meta's 'solver', else the only solver in perf_db.
  static Status open(const std::string& path, const std::string& solver, TimingDb* out);

  const std::string& path() const { return db_.path(); }
  const std::string& solver() const { return solver_; }
  const std::vector<TimingProblem>& problems() const { return problems_; }
  // meta's 'params' split on commas (empty when absent).
  const std::vector<std::string>& parameter_names() const { return names_; }
  std::optional<std::string> meta(const std::string& key) const;

  // The recorded configs of a problem (config id), read from the file.
  Status timings(int64_t config_id, ProblemTimings* out) const;

  // The problem that `problem` names: every config column `problem` sets must agree (fields it
  // leaves unset, such as dir or dtype when not given, match anything; arch is not a column).
  // kNotFound or kInvalidArgument (several match) with a message that lists what to add.
  Status find_problem(const Problem& problem, size_t* index) const;

 private:
  PerfDb db_;
  std::string solver_;
  std::vector<TimingProblem> problems_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> meta_;
};

// Whether `path` starts with xz's magic bytes (the repository keeps timing DBs compressed).
bool is_xz_file(const std::string& path);

// Parameter positions of the model in the recording: out[p] = the recording's index of the
// model's parameter p. By name when the recording names its parameters, else the same order
// (counts must agree).
Status map_parameters(const std::vector<std::string>& model_names, const std::vector<std::string>& recorded_names,
                      std::vector<int>* out);

// A search's benchmark answered from a recording: the recorded time, or kFailed for a failed or
// unrecorded config (counted in `unrecorded`).
struct Replay {
  const ProblemTimings* timings = nullptr;
  std::vector<int> positions;  // map_parameters(); empty: identity
  int calls = 0;
  int unrecorded = 0;

  BenchmarkStatus operator()(const int64_t* values, int count, double* time);
  // The recorded timing of a config given in the model's order (null: not recorded).
  const ProblemTimings::Timing* find(const int64_t* values, int count) const;
};

}  // namespace tunecast::codegen
