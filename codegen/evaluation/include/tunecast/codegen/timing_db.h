// Recorded measurements for replaying a tuning search (tunecast tune --replay, eval-search,
// check --timings) and the recorder that writes them (tune --record). Two layouts, both SQLite:
// the definition-keyed timing DB `tunecast-timings/2` (tables meta, problems with a column per
// problem field, timings(problem, params, time_us, status); docs/kernels.md), which the recorder
// writes; and the MIOpen-keyed one of issue 25 (tables config and perf_db as a perf DB, read by
// perfdb.h, plus timings(config, ...); docs/search.md), still read. Host-only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
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

  // A config measured again: its ok times are kept by their median; any failed run fails it.
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
  void settle();  // optimum and slowest from by_values_ (after a repeated config)
  std::map<std::vector<int64_t>, Timing> by_values_;
  std::map<std::vector<int64_t>, std::vector<double>> samples_;  // configs recorded more than once
  std::vector<std::vector<int64_t>> order_;
  bool has_optimum_ = false;
  double optimum_ = 0.0;
  double slowest_ = 0.0;
  std::vector<int64_t> optimal_;
};

struct TimingProblem {
  Problem problem;               // from the config row (perfdb.h's reading), arch from the file name;
                                 // a definition-keyed DB's: parsed with the schema given to open()
  int64_t config_id = 0;         // config.id, or problems.id
  std::vector<int64_t> tuned;    // perf_db's params: the fastest recorded config (may be empty)
  std::string text;              // a definition-keyed DB's canonical problem text
};

class TimingDb {
 public:
  // Opens `path` read-only: tables config, perf_db (PerfDb::open's checks), timings and meta.
  // `solver` picks the perf_db rows; empty: meta's 'solver', else the only solver in perf_db.
  // A definition-keyed DB (docs/kernels.md) has one kernel; its problems are parsed with `schema`
  // when given (a model's, else problems keep only their text and match by it).
  static Status open(const std::string& path, const std::string& solver, TimingDb* out,
                     const ProblemSchema* schema = nullptr);
  bool keyed_by_definition() const { return generic_; }

  const std::string& path() const { return path_; }
  const std::string& solver() const { return solver_; }
  const std::vector<TimingProblem>& problems() const { return problems_; }
  // meta's 'params' split on commas (empty when absent).
  const std::vector<std::string>& parameter_names() const { return names_; }
  std::optional<std::string> meta(const std::string& key) const;

  // The recorded configs of a problem (config id), read from the file.
  Status timings(int64_t config_id, ProblemTimings* out) const;
  // Its rows as recorded, one per measurement (repeats apart), in the order they were made.
  struct Row {
    std::vector<int64_t> values;
    ProblemTimings::Timing timing;
  };
  Status rows(int64_t config_id, std::vector<Row>* out) const;

  // The problem that `problem` names: every config column `problem` sets must agree (fields it
  // leaves unset, such as dir or dtype when not given, match anything; arch is not a column).
  // kNotFound or kInvalidArgument (several match) with a message that lists what to add.
  Status find_problem(const Problem& problem, size_t* index) const;
  // A definition-keyed DB's problem by its canonical text (format_problem with the schema).
  Status find_problem_text(const std::string& text, size_t* index) const;

 private:
  static Status open_generic(const std::string& path, const ProblemSchema* schema, TimingDb* out);
  bool generic_ = false;
  std::string path_;
  PerfDb db_;
  std::string solver_;
  std::vector<TimingProblem> problems_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> meta_;
};

// What a recording is of: written into a new DB's meta, checked against an existing one's.
struct RecordingInfo {
  std::string kernel;                      // meta solver
  std::vector<std::string> params;         // meta params, position order
  std::vector<std::string> fields;         // problem field names, definition order
  std::vector<bool> integer_fields;        // per field: an INTEGER column (else TEXT: symbols, arch)
  std::string definition;                  // the definition's text (meta definition), may be empty
};

// Appends measurements to a definition-keyed timing DB (`tune --record`, `import-timings`),
// creating it when absent. Every row is committed as it is appended, so a killed run loses
// nothing it measured. Merging a recording twice adds nothing (append's occurrence).
class TimingRecorder {
 public:
  TimingRecorder() = default;
  ~TimingRecorder();
  TimingRecorder(TimingRecorder&& other) noexcept;
  TimingRecorder& operator=(TimingRecorder&& other) noexcept;
  TimingRecorder(const TimingRecorder&) = delete;
  TimingRecorder& operator=(const TimingRecorder&) = delete;

  // An existing file must be a tunecast-timings/2 DB of the same kernel, parameters and fields.
  static Status open(const std::string& path, const RecordingInfo& info, TimingRecorder* out);
  // The id of the problem with this canonical text, inserted with its field values (as text,
  // definition order) when new.
  Status problem(const std::string& text, const std::vector<std::string>& field_values, int64_t* id);
  struct Measurement {
    std::string params;   // comma-separated, position order
    bool ok = false;
    double time = 0.0;    // when ok
    std::string status;   // "ok" or the failure kind
  };
  // The problem's measurements in the order they were recorded.
  Status measurements(int64_t problem, std::vector<Measurement>* out) const;
  // Appends one from another recording (a merge: idempotent); *added says whether it was new. Rows
  // are a multiset: `occurrence` is how many identical rows (same params, status and time) came
  // before this one in its source, so a config measured twice at 12.5 keeps both samples and a
  // second merge of the same source adds nothing.
  Status append(int64_t problem, const Measurement& m, bool* added = nullptr, int occurrence = 0);
  // Appends a measurement just made: always (an equal time measured again is a second sample);
  // *row, when given, is its row id (for remove).
  Status record(int64_t problem, const Measurement& m, int64_t* row = nullptr);
  // Removes a row record() made (a failure that was the benchmark command's, not its candidate's).
  Status remove(int64_t row);
  // Many appends in one transaction (an import): nothing of the batch is kept unless it commits.
  Status begin_batch();
  Status commit_batch();
  const std::string& path() const { return path_; }
  // Whether the existing file was recorded with another definition text than RecordingInfo's (its
  // rules or domains may differ; its measurements still answer by parameter values).
  bool other_definition() const { return other_definition_; }

 private:
  void* db_ = nullptr;  // sqlite3*
  std::string path_;
  bool other_definition_ = false;
};

// A recording's rows as the answers a resumed tune gets, per config (params text) in recorded
// order; a config with a failed row answers failed first, as a replay reads it (a config with any
// failed row is failed), so merged DBs answer alike whatever the order of their inputs.
std::map<std::string, std::deque<TimingRecorder::Measurement>> resume_answers(
    std::vector<TimingRecorder::Measurement> rows);

// Whether `path` starts with xz's magic bytes (the repository keeps timing DBs compressed).
bool is_xz_file(const std::string& path);
// Whether `path` is a timing DB (an SQLite file, or one compressed with xz) rather than a
// Kernel Tuner JSON file, by its first bytes.
bool is_timing_db_file(const std::string& path);

// Configs ranked by how they ran in recordings of the same kernel on other GPUs or problems (the
// model-free search's prior, tune --prior): per problem a config's speed is the problem's optimum
// over its time (a failed config: 0.001); its score, the mean log speed over the problems that
// recorded it and one pseudo-problem at speed 0.5, so a config recorded once does not outrank one
// good everywhere. Best first (ties: first recorded), at most `limit`; values as recorded.
std::vector<std::vector<int64_t>> rank_recorded_configs(const std::vector<const ProblemTimings*>& problems, size_t limit);

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
