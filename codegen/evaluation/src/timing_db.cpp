#include "tunecast/codegen/timing_db.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>

namespace tunecast::codegen {
namespace {

// The config columns as problem fields (perfdb.h reads them): every field but arch.
constexpr ProblemField kConfigFields[] = {
    ProblemField::kLayout, ProblemField::kDtype,   ProblemField::kDir,     ProblemField::kSpatialDim,
    ProblemField::kC,      ProblemField::kH,       ProblemField::kW,       ProblemField::kD,
    ProblemField::kY,      ProblemField::kX,       ProblemField::kZ,       ProblemField::kK,
    ProblemField::kN,      ProblemField::kPadH,    ProblemField::kPadW,    ProblemField::kPadD,
    ProblemField::kStrideH, ProblemField::kStrideW, ProblemField::kStrideD, ProblemField::kDilH,
    ProblemField::kDilW,   ProblemField::kDilD,    ProblemField::kBias,    ProblemField::kG,
};

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StatementCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StatementPtr = std::unique_ptr<sqlite3_stmt, StatementCloser>;

Status prepare(sqlite3* db, const std::string& path, const char* sql, StatementPtr* out) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    const Status s = Status::error(StatusCode::kNotFound, "timing DB %s: %s", path.c_str(), sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return s;
  }
  out->reset(stmt);
  return Status::ok();
}

std::string text_of(sqlite3_stmt* stmt, int column) {
  const unsigned char* text = sqlite3_column_text(stmt, column);
  return text ? reinterpret_cast<const char*>(text) : std::string();
}

Status open_readonly(const std::string& path, std::unique_ptr<sqlite3, SqliteCloser>* out) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  out->reset(raw);
  if (rc != SQLITE_OK) return Status::error(StatusCode::kIoError, "cannot open timing DB %s", path.c_str());
  return Status::ok();
}

// The meta table's key -> value (none when the table is absent).
void read_meta(sqlite3* db, const std::string& path, std::map<std::string, std::string>* meta) {
  StatementPtr stmt;
  if (!prepare(db, path, "SELECT key, value FROM meta", &stmt)) return;
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) (*meta)[text_of(stmt.get(), 0)] = text_of(stmt.get(), 1);
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    out.push_back(item);
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string field_text(ProblemField field, int64_t value) {
  const char* symbol = problem_symbol_name(field, value);
  return symbol ? symbol : std::to_string(value);
}

// "dir=F,dtype=FP32,n=4,c=64,..." without the fields that hold their defaults (pads 0, strides 1...),
// so that messages stay short enough to name the file.
std::string short_problem_text(const Problem& problem) {
  Problem defaults;
  apply_problem_defaults(&defaults);
  std::string text;
  for (int f = 0; f < kProblemFieldCount; ++f) {
    const auto field = static_cast<ProblemField>(f);
    if (!problem.has(field) || (defaults.has(field) && defaults.get(field) == problem.get(field))) continue;
    text += (text.empty() ? "" : ",") + std::string(problem_field_name(field)) + "=" + field_text(field, problem.get(field));
  }
  return text;
}

}  // namespace

void ProblemTimings::add(std::vector<int64_t> values, Timing timing) {
  const auto existing = by_values_.find(values);
  if (existing != by_values_.end()) {  // measured again: median of ok runs, failed if any run failed
    Timing& t = existing->second;
    std::vector<double>& samples = samples_[values];
    if (samples.empty() && t.ok) samples.push_back(t.time);
    if (timing.ok) samples.push_back(timing.time);
    if (!timing.ok) t = timing;
    if (t.ok) {
      std::vector<double> sorted = samples;
      std::sort(sorted.begin(), sorted.end());
      const size_t n = sorted.size();
      t.time = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    }
    settle();
    return;
  }
  if (timing.ok) {
    if (!has_optimum_ || timing.time < optimum_) {
      optimum_ = timing.time;
      optimal_ = values;
    }
    slowest_ = has_optimum_ ? std::max(slowest_, timing.time) : timing.time;
    has_optimum_ = true;
  }
  by_values_.emplace(values, std::move(timing));
  order_.push_back(std::move(values));
}

void ProblemTimings::settle() {
  has_optimum_ = false;
  for (const std::vector<int64_t>& config : order_) {
    const Timing& t = by_values_.at(config);
    if (!t.ok) continue;
    if (!has_optimum_ || t.time < optimum_) {
      optimum_ = t.time;
      optimal_ = config;
    }
    slowest_ = has_optimum_ ? std::max(slowest_, t.time) : t.time;
    has_optimum_ = true;
  }
}

const ProblemTimings::Timing* ProblemTimings::find(const std::vector<int64_t>& values) const {
  const auto it = by_values_.find(values);
  return it == by_values_.end() ? nullptr : &it->second;
}

std::vector<int64_t> ProblemTimings::values_of(size_t p) const {
  std::set<int64_t> values;
  for (const std::vector<int64_t>& config : order_) {
    if (p < config.size()) values.insert(config[p]);
  }
  return std::vector<int64_t>(values.begin(), values.end());
}

bool is_xz_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[6] = {};
  in.read(head, sizeof head);
  return in.gcount() == 6 && std::memcmp(head, "\xFD" "7zXZ\0", 6) == 0;
}

bool is_timing_db_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return (in.gcount() == 16 && std::memcmp(head, "SQLite format 3", 16) == 0) || is_xz_file(path);
}

std::vector<std::vector<int64_t>> rank_recorded_configs(const std::vector<const ProblemTimings*>& problems, size_t limit) {
  struct Score {
    double log_speed_sum = std::log(0.5);  // the pseudo-problem
    int count = 1;
    size_t first_seen = 0;
  };
  std::map<std::vector<int64_t>, Score> scores;
  size_t seen = 0;
  for (const ProblemTimings* timings : problems) {
    if (!timings->has_optimum()) continue;
    for (const std::vector<int64_t>& config : timings->configs()) {
      const ProblemTimings::Timing* t = timings->find(config);
      auto [it, added] = scores.emplace(config, Score());
      if (added) it->second.first_seen = seen++;
      it->second.log_speed_sum += std::log(t->ok && t->time > 0.0 ? std::min(timings->optimum() / t->time, 1.0) : 0.001);
      ++it->second.count;
    }
  }
  std::vector<std::pair<const std::vector<int64_t>*, const Score*>> ranked;
  for (const auto& [config, score] : scores) ranked.emplace_back(&config, &score);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    const double sa = a.second->log_speed_sum / a.second->count, sb = b.second->log_speed_sum / b.second->count;
    return sa != sb ? sa > sb : a.second->first_seen < b.second->first_seen;
  });
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < ranked.size() && i < limit; ++i) out.push_back(*ranked[i].first);
  return out;
}

Status TimingDb::open(const std::string& path, const std::string& solver, TimingDb* out, const ProblemSchema* schema) {
  *out = TimingDb();
  if (is_xz_file(path)) {
    return Status::error(StatusCode::kInvalidArgument, "%s is xz-compressed: decompress it first (xz -dk %s)",
                         path.c_str(), path.c_str());
  }
  {
    sqlite3* probe = nullptr;
    bool generic = false, empty = false;
    if (sqlite3_open_v2(path.c_str(), &probe, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      generic = sqlite3_prepare_v2(probe, "SELECT id, problem FROM problems LIMIT 0", -1, &stmt, nullptr) == SQLITE_OK;
      sqlite3_finalize(stmt);
      stmt = nullptr;
      if (sqlite3_prepare_v2(probe, "SELECT count(*) FROM sqlite_master", -1, &stmt, nullptr) == SQLITE_OK &&
          sqlite3_step(stmt) == SQLITE_ROW) {
        empty = sqlite3_column_int64(stmt, 0) == 0;
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(probe);
    if (empty) {  // a recording's first pages, its rows still in the write-ahead log beside it
      return Status::error(StatusCode::kInvalidArgument,
                           "%s holds no table: a recording copied without its %s-wal file? Copy both, or first run "
                           "sqlite3 %s 'PRAGMA wal_checkpoint' where it was written",
                           path.c_str(), path.c_str(), path.c_str());
    }
    if (generic) {
      TUNECAST_RETURN_IF_ERROR(open_generic(path, schema, out));
      if (!solver.empty() && solver != out->solver_) {
        return Status::error(StatusCode::kNotFound, "timing DB %s records kernel %s, not %s", path.c_str(),
                             out->solver_.c_str(), solver.c_str());
      }
      return Status::ok();
    }
  }
  TUNECAST_RETURN_IF_ERROR(PerfDb::open(path, &out->db_));
  out->path_ = path;
  std::unique_ptr<sqlite3, SqliteCloser> db;
  TUNECAST_RETURN_IF_ERROR(open_readonly(path, &db));
  StatementPtr stmt;
  Status s = prepare(db.get(), path, "SELECT config, params, time_us, status FROM timings LIMIT 0", &stmt);
  if (!s) {
    return Status::error(StatusCode::kNotFound,
                         "%s is a perf DB without recorded timings: its table timings(config, params, time_us, "
                         "status) is missing or incomplete (docs/search.md)",
                         path.c_str());
  }
  read_meta(db.get(), path, &out->meta_);
  out->solver_ = solver;
  if (out->solver_.empty()) {
    const auto it = out->meta_.find("solver");
    if (it != out->meta_.end()) {
      out->solver_ = it->second;
    } else {
      std::vector<std::pair<std::string, int64_t>> solvers;
      TUNECAST_RETURN_IF_ERROR(out->db_.solvers(&solvers));
      if (solvers.size() != 1) {
        return Status::error(StatusCode::kInvalidArgument,
                             "timing DB %s names no solver in its meta table and holds %zu: pick one with --solver",
                             path.c_str(), solvers.size());
      }
      out->solver_ = solvers[0].first;
    }
  }
  std::vector<PerfDbRow> rows;
  TUNECAST_RETURN_IF_ERROR(out->db_.rows(out->solver_, PerfDbFilter(), &rows));
  if (rows.empty()) {
    return Status::error(StatusCode::kNotFound, "timing DB %s has no perf_db rows of solver %s", path.c_str(),
                         out->solver_.c_str());
  }
  for (PerfDbRow& row : rows) {
    TimingProblem p;
    p.problem = row.problem;
    p.config_id = row.config_id;
    p.tuned = std::move(row.params);
    out->problems_.push_back(std::move(p));
  }
  if (const auto it = out->meta_.find("params"); it != out->meta_.end() && !it->second.empty()) {
    out->names_ = split_names(it->second);
  }
  return Status::ok();
}

std::optional<std::string> TimingDb::meta(const std::string& key) const {
  const auto it = meta_.find(key);
  if (it == meta_.end()) return std::nullopt;
  return it->second;
}

Status TimingDb::rows(int64_t config_id, std::vector<Row>* out) const {
  out->clear();
  const std::string& file = path();
  const char* sql = generic_ ? "SELECT params, time_us, status FROM timings WHERE problem = ?1 ORDER BY rowid"
                             : "SELECT params, time_us, status FROM timings WHERE config = ?1 ORDER BY rowid";
  std::unique_ptr<sqlite3, SqliteCloser> db;
  TUNECAST_RETURN_IF_ERROR(open_readonly(file, &db));
  StatementPtr stmt;
  TUNECAST_RETURN_IF_ERROR(
      prepare(db.get(), file, sql, &stmt));
  sqlite3_bind_int64(stmt.get(), 1, config_id);
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    const std::string params = text_of(stmt.get(), 0);
    std::vector<int64_t> values;
    if (!parse_param_list(params, &values)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "timing DB %s: config %lld: params '%.60s' are not comma-separated integers", file.c_str(),
                           static_cast<long long>(config_id), params.c_str());
    }
    ProblemTimings::Timing timing;
    timing.status = text_of(stmt.get(), 2);
    timing.ok = timing.status == "ok";
    if (timing.ok) {
      if (sqlite3_column_type(stmt.get(), 1) == SQLITE_NULL) {
        return Status::error(StatusCode::kInvalidArgument, "timing DB %s: config %lld, params %s: status ok but no time_us",
                             file.c_str(), static_cast<long long>(config_id), params.c_str());
      }
      timing.time = sqlite3_column_double(stmt.get(), 1);
      if (!(timing.time >= 0.0) || !std::isfinite(timing.time)) {
        return Status::error(StatusCode::kInvalidArgument, "timing DB %s: config %lld, params %s: time_us %g is not a time",
                             file.c_str(), static_cast<long long>(config_id), params.c_str(), timing.time);
      }
    }
    out->push_back({std::move(values), std::move(timing)});
  }
  if (rc != SQLITE_DONE) {
    return Status::error(StatusCode::kIoError, "timing DB %s: reading timings failed: %s", file.c_str(),
                         sqlite3_errmsg(db.get()));
  }
  return Status::ok();
}

Status TimingDb::timings(int64_t config_id, ProblemTimings* out) const {
  *out = ProblemTimings();
  std::vector<Row> read;
  TUNECAST_RETURN_IF_ERROR(rows(config_id, &read));
  for (Row& row : read) out->add(std::move(row.values), std::move(row.timing));
  return Status::ok();
}

Status TimingDb::find_problem_text(const std::string& text, size_t* index) const {
  for (size_t i = 0; i < problems_.size(); ++i) {
    if (problems_[i].text == text) {
      *index = i;
      return Status::ok();
    }
  }
  return Status::error(StatusCode::kNotFound, "problem %s is not in timing DB %s (%zu %s problems recorded)",
                       text.c_str(), path().c_str(), problems_.size(), solver_.c_str());
}

Status TimingDb::open_generic(const std::string& path, const ProblemSchema* schema, TimingDb* out) {
  out->generic_ = true;
  out->path_ = path;
  std::unique_ptr<sqlite3, SqliteCloser> db;
  TUNECAST_RETURN_IF_ERROR(open_readonly(path, &db));
  StatementPtr stmt;
  read_meta(db.get(), path, &out->meta_);
  const auto kernel = out->meta_.find("solver");
  if (kernel == out->meta_.end() || kernel->second.empty()) {
    return Status::error(StatusCode::kInvalidArgument, "timing DB %s names no kernel (meta solver; docs/kernels.md)",
                         path.c_str());
  }
  out->solver_ = kernel->second;
  if (const auto it = out->meta_.find("params"); it != out->meta_.end() && !it->second.empty()) {
    out->names_ = split_names(it->second);
  }
  Status s = prepare(db.get(), path, "SELECT problem, params, time_us, status FROM timings LIMIT 0", &stmt);
  if (!s) {
    return Status::error(StatusCode::kNotFound,
                         "timing DB %s has no table timings(problem, params, time_us, status) (docs/kernels.md)",
                         path.c_str());
  }
  std::map<int64_t, std::vector<int64_t>> tuned;
  if (prepare(db.get(), path, "SELECT problem, params FROM perf_db", &stmt)) {
    while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
      std::vector<int64_t> values;
      if (parse_param_list(text_of(stmt.get(), 1), &values)) tuned[sqlite3_column_int64(stmt.get(), 0)] = values;
    }
  }
  TUNECAST_RETURN_IF_ERROR(prepare(db.get(), path, "SELECT id, problem FROM problems ORDER BY id", &stmt));
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    TimingProblem p;
    p.config_id = sqlite3_column_int64(stmt.get(), 0);
    p.text = text_of(stmt.get(), 1);
    if (schema != nullptr) {
      const Status parsed = parse_problem(*schema, p.text, &p.problem);
      if (!parsed) {
        return Status::error(StatusCode::kInvalidArgument, "timing DB %s: problem %lld '%.80s': %s", path.c_str(),
                             static_cast<long long>(p.config_id), p.text.c_str(), parsed.message());
      }
    }
    if (const auto it = tuned.find(p.config_id); it != tuned.end()) p.tuned = it->second;
    out->problems_.push_back(std::move(p));
  }
  return Status::ok();
}

Status TimingDb::find_problem(const Problem& problem, size_t* index) const {
  if (generic_) {
    return Status::error(StatusCode::kInvalidArgument,
                         "timing DB %s is keyed by its kernel definition: look problems up by their canonical text",
                         path().c_str());
  }
  std::vector<size_t> matches;
  for (size_t i = 0; i < problems_.size(); ++i) {
    const Problem& row = problems_[i].problem;
    bool same = true;
    for (ProblemField f : kConfigFields) {
      if (problem.has(f) && row.get(f) != problem.get(f)) {
        same = false;
        break;
      }
    }
    if (same) matches.push_back(i);
  }
  if (matches.size() == 1) {
    *index = matches[0];
    return Status::ok();
  }
  const std::string text = short_problem_text(problem);
  if (matches.empty()) {
    // The field that alone keeps the problem out (layout=NCHW given, every recorded one NHWC).
    std::string hint;
    for (ProblemField f : kConfigFields) {
      if (!problem.has(f)) continue;
      std::set<int64_t> recorded;
      for (const TimingProblem& p : problems_) {
        bool rest = true;
        for (ProblemField g : kConfigFields) rest = rest && (g == f || !problem.has(g) || p.problem.get(g) == problem.get(g));
        if (rest) recorded.insert(p.problem.get(f));
      }
      if (!recorded.empty()) {
        hint += std::string(hint.empty() ? "" : "; ") + problem_field_name(f) + "=" + field_text(f, problem.get(f)) +
                " where the rest matches " + field_text(f, *recorded.begin()) + (recorded.size() > 1 ? ", ..." : "");
      }
    }
    if (!hint.empty()) {  // the field first: messages are short
      return Status::error(StatusCode::kNotFound, "%s: problem %s is not in timing DB %s", hint.c_str(), text.c_str(),
                           path().c_str());
    }
    return Status::error(StatusCode::kNotFound, "problem %s is not in timing DB %s (%zu %s problems recorded)",
                         text.c_str(), path().c_str(), problems_.size(), solver_.c_str());
  }
  // Name the fields whose values differ among the matches: those the user should add.
  std::string differing;
  for (ProblemField f : kConfigFields) {
    std::set<int64_t> values;
    for (size_t i : matches) values.insert(problems_[i].problem.get(f));
    if (values.size() > 1) {
      differing += (differing.empty() ? "" : ", ") + std::string(problem_field_name(f)) + " (" +
                   field_text(f, *values.begin()) + ", " + field_text(f, *std::next(values.begin())) +
                   (values.size() > 2 ? ", ..." : "") + ")";
    }
  }
  return Status::error(StatusCode::kInvalidArgument, "problem %s matches %zu problems of timing DB %s: give %s",
                       text.c_str(), matches.size(), path().c_str(), differing.c_str());
}

Status map_parameters(const std::vector<std::string>& model_names, const std::vector<std::string>& recorded_names,
                      std::vector<int>* out) {
  out->clear();
  if (recorded_names.empty()) return Status::ok();
  if (recorded_names.size() != model_names.size()) {
    return Status::error(StatusCode::kInvalidArgument, "the model has %zu parameters, the recording %zu (another kernel?)",
                         model_names.size(), recorded_names.size());
  }
  for (const std::string& name : model_names) {
    const auto it = std::find(recorded_names.begin(), recorded_names.end(), name);
    if (it == recorded_names.end()) {
      std::string listed;
      for (const std::string& r : recorded_names) listed += (listed.empty() ? "" : ",") + r;
      return Status::error(StatusCode::kInvalidArgument, "parameter '%s' (the model's or definition's) is not in the recording (%s)",
                           name.c_str(), listed.c_str());
    }
    out->push_back(static_cast<int>(it - recorded_names.begin()));
  }
  return Status::ok();
}

const ProblemTimings::Timing* Replay::find(const int64_t* values, int count) const {
  std::vector<int64_t> key(static_cast<size_t>(count));
  for (int p = 0; p < count; ++p) {
    key[positions.empty() ? static_cast<size_t>(p) : static_cast<size_t>(positions[p])] = values[p];
  }
  return timings->find(key);
}

BenchmarkStatus Replay::operator()(const int64_t* values, int count, double* time) {
  ++calls;
  const ProblemTimings::Timing* timing = find(values, count);
  if (timing == nullptr) {
    ++unrecorded;
    return BenchmarkStatus::kFailed;
  }
  if (!timing->ok) return BenchmarkStatus::kFailed;
  *time = timing->time;
  return BenchmarkStatus::kOk;
}

// ---- the recorder ----------------------------------------------------------------------------

namespace {

std::string quoted_name(const std::string& name) { return "\"" + name + "\""; }

Status exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const Status s = Status::error(StatusCode::kIoError, "timing DB %s: %s", path.c_str(), error ? error : "?");
    sqlite3_free(error);
    return s;
  }
  return Status::ok();
}

std::string joined_names(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ",") + n;
  return text;
}

}  // namespace

TimingRecorder::~TimingRecorder() { sqlite3_close(static_cast<sqlite3*>(db_)); }

TimingRecorder::TimingRecorder(TimingRecorder&& other) noexcept
    : db_(other.db_), path_(std::move(other.path_)), other_definition_(other.other_definition_) {
  other.db_ = nullptr;
}

TimingRecorder& TimingRecorder::operator=(TimingRecorder&& other) noexcept {
  if (this != &other) {
    sqlite3_close(static_cast<sqlite3*>(db_));
    db_ = other.db_;
    path_ = std::move(other.path_);
    other_definition_ = other.other_definition_;
    other.db_ = nullptr;
  }
  return *this;
}

Status TimingRecorder::open(const std::string& path, const RecordingInfo& info, TimingRecorder* out) {
  *out = TimingRecorder();
  // No look at the file outside SQLite here: closing any other descriptor of a file this process
  // holds a SQLite connection to drops that connection's POSIX locks (a recorder open beside
  // another could then lose its WAL). An xz file is diagnosed only when SQLite refuses it.
  struct stat before;  // (stat opens no descriptor)
  const bool had_bytes = ::stat(path.c_str(), &before) == 0 && before.st_size > 0;
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    const Status s = Status::error(StatusCode::kIoError, "cannot open or create timing DB %s: %s", path.c_str(),
                                   raw ? sqlite3_errmsg(raw) : "out of memory");
    sqlite3_close(raw);
    return s;
  }
  out->db_ = raw;
  out->path_ = path;
  sqlite3_busy_timeout(raw, 30000);  // shards of one fleet may share a file on one host
  // WAL: a reader (eval-search, another tune) never blocks the recorder, and a kill loses nothing
  // committed.
  {
    StatementPtr mode;
    Status s = prepare(raw, path, "PRAGMA journal_mode=WAL", &mode);
    const int rc = s ? sqlite3_step(mode.get()) : SQLITE_ERROR;
    if (rc != SQLITE_ROW) {
      if (sqlite3_errcode(raw) == SQLITE_NOTADB && is_xz_file(path)) {
        return Status::error(StatusCode::kInvalidArgument, "%s is xz-compressed: decompress it first (xz -dk %s)",
                             path.c_str(), path.c_str());
      }
      return Status::error(StatusCode::kIoError, "timing DB %s: %s", path.c_str(), sqlite3_errmsg(raw));
    }
    if (text_of(mode.get(), 0) != "wal") {
      return Status::error(StatusCode::kIoError, "timing DB %s: cannot use WAL journaling (journal mode %s)",
                           path.c_str(), text_of(mode.get(), 0).c_str());
    }
  }
  std::map<std::string, std::string> meta;
  StatementPtr stmt;
  const bool existing = prepare(raw, path, "SELECT key, value FROM meta", &stmt).is_ok();
  if (!existing && had_bytes) {  // a file with bytes but no table: a recording copied without its write-ahead log
    StatementPtr count;
    int64_t tables = -1;
    if (prepare(raw, path, "SELECT count(*) FROM sqlite_master", &count) && sqlite3_step(count.get()) == SQLITE_ROW) {
      tables = sqlite3_column_int64(count.get(), 0);
    }
    if (tables == 0) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s holds no table: a recording copied without its %s-wal file? Copy both, or name a new "
                           "file to record into",
                           path.c_str(), path.c_str());
    }
  }
  if (existing) {
    while (sqlite3_step(stmt.get()) == SQLITE_ROW) meta[text_of(stmt.get(), 0)] = text_of(stmt.get(), 1);
    stmt.reset();
    if (meta["format"] != "tunecast-timings/2") {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s is not a tunecast-timings/2 DB (meta format '%s'): record into a new file",
                           path.c_str(), meta["format"].c_str());
    }
    const std::string params = joined_names(info.params), fields = joined_names(info.fields);
    if (meta["solver"] != info.kernel || meta["params"] != params || meta["fields"] != fields) {
      return Status::error(StatusCode::kInvalidArgument,
                           "timing DB %s records kernel %s (params %s; fields %s), not %s (params %s; fields %s)",
                           path.c_str(), meta["solver"].c_str(), meta["params"].c_str(), meta["fields"].c_str(),
                           info.kernel.c_str(), params.c_str(), fields.c_str());
    }
    out->other_definition_ = !meta["definition"].empty() && !info.definition.empty() && meta["definition"] != info.definition;
    return Status::ok();
  }
  std::string columns;
  for (size_t f = 0; f < info.fields.size(); ++f) {
    columns += ", " + quoted_name(info.fields[f]) + (f < info.integer_fields.size() && info.integer_fields[f] ? " INTEGER" : " TEXT");
  }
  std::string sql = "BEGIN;"
                    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                    "CREATE TABLE problems(id INTEGER PRIMARY KEY, problem TEXT NOT NULL UNIQUE" + columns + ");"
                    "CREATE TABLE timings(problem INTEGER NOT NULL REFERENCES problems(id), params TEXT NOT NULL, "
                    "time_us REAL, status TEXT NOT NULL);"
                    "CREATE INDEX timings_problem ON timings(problem);"
                    "COMMIT;";
  TUNECAST_RETURN_IF_ERROR(exec(raw, path, sql));
  TUNECAST_RETURN_IF_ERROR(prepare(raw, path, "INSERT INTO meta(key, value) VALUES (?1, ?2)", &stmt));
  const std::pair<std::string, std::string> rows[] = {
      {"format", "tunecast-timings/2"},       {"solver", info.kernel},
      {"params", joined_names(info.params)},  {"fields", joined_names(info.fields)},
      {"time_unit", "us"},                    {"definition", info.definition},
  };
  for (const auto& [key, value] : rows) {
    sqlite3_bind_text(stmt.get(), 1, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt.get(), 2, value.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
      return Status::error(StatusCode::kIoError, "timing DB %s: %s", path.c_str(), sqlite3_errmsg(raw));
    }
    sqlite3_reset(stmt.get());
  }
  return Status::ok();
}

Status TimingRecorder::problem(const std::string& text, const std::vector<std::string>& field_values, int64_t* id) {
  sqlite3* db = static_cast<sqlite3*>(db_);
  StatementPtr stmt;
  TUNECAST_RETURN_IF_ERROR(prepare(db, path_, "SELECT id FROM problems WHERE problem = ?1", &stmt));
  sqlite3_bind_text(stmt.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    *id = sqlite3_column_int64(stmt.get(), 0);
    return Status::ok();
  }
  std::string placeholders;
  for (size_t i = 0; i < field_values.size(); ++i) placeholders += ", ?" + std::to_string(i + 2);
  // Field columns in table order (the meta's fields, the order they were created in).
  StatementPtr names;
  TUNECAST_RETURN_IF_ERROR(prepare(db, path_, "SELECT * FROM problems LIMIT 0", &names));
  const int count = sqlite3_column_count(names.get());
  if (count != static_cast<int>(field_values.size()) + 2) {
    return Status::error(StatusCode::kInvalidArgument, "timing DB %s: table problems has %d field columns, the kernel %zu",
                         path_.c_str(), count - 2, field_values.size());
  }
  std::string columns;
  for (int c = 2; c < count; ++c) columns += ", " + quoted_name(sqlite3_column_name(names.get(), c));
  TUNECAST_RETURN_IF_ERROR(prepare(db, path_, ("INSERT INTO problems(problem" + columns + ") VALUES (?1" + placeholders + ")").c_str(), &stmt));
  sqlite3_bind_text(stmt.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
  for (size_t i = 0; i < field_values.size(); ++i) {
    const std::string& v = field_values[i];
    char* end = nullptr;
    const long long number = std::strtoll(v.c_str(), &end, 10);
    if (!v.empty() && *end == '\0') {
      sqlite3_bind_int64(stmt.get(), static_cast<int>(i) + 2, number);
    } else {
      sqlite3_bind_text(stmt.get(), static_cast<int>(i) + 2, v.c_str(), -1, SQLITE_TRANSIENT);
    }
  }
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
    return Status::error(StatusCode::kIoError, "timing DB %s: adding problem %s: %s", path_.c_str(), text.c_str(),
                         sqlite3_errmsg(db));
  }
  *id = sqlite3_last_insert_rowid(db);
  return Status::ok();
}

Status TimingRecorder::measurements(int64_t problem, std::vector<Measurement>* out) const {
  out->clear();
  sqlite3* db = static_cast<sqlite3*>(db_);
  StatementPtr stmt;
  TUNECAST_RETURN_IF_ERROR(
      prepare(db, path_, "SELECT params, time_us, status FROM timings WHERE problem = ?1 ORDER BY rowid", &stmt));
  sqlite3_bind_int64(stmt.get(), 1, problem);
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    Measurement m;
    m.params = text_of(stmt.get(), 0);
    m.status = text_of(stmt.get(), 2);
    m.ok = m.status == "ok" && sqlite3_column_type(stmt.get(), 1) != SQLITE_NULL;
    m.time = m.ok ? sqlite3_column_double(stmt.get(), 1) : 0.0;
    out->push_back(std::move(m));
  }
  return Status::ok();
}

Status TimingRecorder::begin_batch() { return exec(static_cast<sqlite3*>(db_), path_, "BEGIN IMMEDIATE"); }

Status TimingRecorder::commit_batch() { return exec(static_cast<sqlite3*>(db_), path_, "COMMIT"); }

Status TimingRecorder::append(int64_t problem, const Measurement& m, bool* added, int occurrence) {
  sqlite3* db = static_cast<sqlite3*>(db_);
  StatementPtr stmt;
  // occurrence < 0: always; else only while fewer than occurrence + 1 identical rows are held.
  TUNECAST_RETURN_IF_ERROR(prepare(db, path_,
                                   "INSERT INTO timings(problem, params, time_us, status) SELECT ?1, ?2, ?3, ?4 "
                                   "WHERE ?5 < 0 OR (SELECT COUNT(*) FROM timings WHERE problem = ?1 AND params = ?2 "
                                   "AND status = ?4 AND time_us IS ?3) <= ?5",
                                   &stmt));
  sqlite3_bind_int64(stmt.get(), 1, problem);
  sqlite3_bind_text(stmt.get(), 2, m.params.c_str(), -1, SQLITE_TRANSIENT);
  if (m.ok) {
    sqlite3_bind_double(stmt.get(), 3, m.time);
  } else {
    sqlite3_bind_null(stmt.get(), 3);
  }
  const std::string status = m.ok ? "ok" : (m.status.empty() || m.status == "ok" ? "fail" : m.status);
  sqlite3_bind_text(stmt.get(), 4, status.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt.get(), 5, occurrence);
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
    return Status::error(StatusCode::kIoError, "timing DB %s: recording a measurement: %s", path_.c_str(),
                         sqlite3_errmsg(db));
  }
  if (added) *added = sqlite3_changes(db) > 0;
  return Status::ok();
}

Status TimingRecorder::record(int64_t problem, const Measurement& m, int64_t* row) {
  TUNECAST_RETURN_IF_ERROR(append(problem, m, nullptr, -1));
  if (row) *row = sqlite3_last_insert_rowid(static_cast<sqlite3*>(db_));
  return Status::ok();
}

Status TimingRecorder::remove(int64_t row) {
  sqlite3* db = static_cast<sqlite3*>(db_);
  StatementPtr stmt;
  TUNECAST_RETURN_IF_ERROR(prepare(db, path_, "DELETE FROM timings WHERE rowid = ?1", &stmt));
  sqlite3_bind_int64(stmt.get(), 1, row);
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
    return Status::error(StatusCode::kIoError, "timing DB %s: removing a row: %s", path_.c_str(), sqlite3_errmsg(db));
  }
  return Status::ok();
}

std::map<std::string, std::deque<TimingRecorder::Measurement>> resume_answers(
    std::vector<TimingRecorder::Measurement> rows) {
  std::map<std::string, std::deque<TimingRecorder::Measurement>> out;
  for (TimingRecorder::Measurement& m : rows) {
    std::deque<TimingRecorder::Measurement>& answers = out[m.params];
    const bool first_failure = !m.ok && std::none_of(answers.begin(), answers.end(),
                                                      [](const TimingRecorder::Measurement& a) { return !a.ok; });
    if (first_failure) {
      answers.push_front(std::move(m));
    } else {
      answers.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace tunecast::codegen
