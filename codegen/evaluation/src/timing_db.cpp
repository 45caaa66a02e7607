#include "tunecast/codegen/timing_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
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
  if (timing.ok) {
    if (!has_optimum_ || timing.time < optimum_) {
      optimum_ = timing.time;
      optimal_ = values;
    }
    slowest_ = has_optimum_ ? std::max(slowest_, timing.time) : timing.time;
    has_optimum_ = true;
  }
  auto [it, inserted] = by_values_.emplace(values, std::move(timing));
  if (inserted) order_.push_back(std::move(values));
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

Status TimingDb::open(const std::string& path, const std::string& solver, TimingDb* out) {
  *out = TimingDb();
  if (is_xz_file(path)) {
    return Status::error(StatusCode::kInvalidArgument, "%s is xz-compressed: decompress it first (xz -dk %s)",
                         path.c_str(), path.c_str());
  }
  TUNECAST_RETURN_IF_ERROR(PerfDb::open(path, &out->db_));
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    return Status::error(StatusCode::kIoError, "cannot open timing DB %s", path.c_str());
  }
  std::unique_ptr<sqlite3, SqliteCloser> db(raw);
  StatementPtr stmt;
  Status s = prepare(db.get(), path, "SELECT config, params, time_us, status FROM timings LIMIT 0", &stmt);
  if (!s) {
    return Status::error(StatusCode::kNotFound,
                         "%s is a perf DB without recorded timings: its table timings(config, params, time_us, "
                         "status) is missing or incomplete (docs/search.md)",
                         path.c_str());
  }
  if (prepare(db.get(), path, "SELECT key, value FROM meta", &stmt)) {
    while (sqlite3_step(stmt.get()) == SQLITE_ROW) out->meta_[text_of(stmt.get(), 0)] = text_of(stmt.get(), 1);
  }
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

Status TimingDb::timings(int64_t config_id, ProblemTimings* out) const {
  *out = ProblemTimings();
  const std::string& file = path();
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    return Status::error(StatusCode::kIoError, "cannot open timing DB %s", file.c_str());
  }
  std::unique_ptr<sqlite3, SqliteCloser> db(raw);
  StatementPtr stmt;
  TUNECAST_RETURN_IF_ERROR(
      prepare(db.get(), file, "SELECT params, time_us, status FROM timings WHERE config = ?1 ORDER BY rowid", &stmt));
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
    out->add(std::move(values), std::move(timing));
  }
  if (rc != SQLITE_DONE) {
    return Status::error(StatusCode::kIoError, "timing DB %s: reading timings failed: %s", file.c_str(),
                         sqlite3_errmsg(db.get()));
  }
  return Status::ok();
}

Status TimingDb::find_problem(const Problem& problem, size_t* index) const {
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
      return Status::error(StatusCode::kInvalidArgument, "the model's parameter '%s' is not in the recording (%s)",
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

}  // namespace tunecast::codegen
