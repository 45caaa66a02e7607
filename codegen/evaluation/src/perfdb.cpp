#include "tunecast/codegen/perfdb.h"

#include <sqlite3.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <utility>

namespace tunecast {
namespace {

// config column -> problem field, in the SELECT order below (after id, layout, data_type, direction).
struct ColumnField {
  const char* column;
  ProblemField field;
};

constexpr ColumnField kEnumColumns[] = {
    {"layout", ProblemField::kLayout},
    {"data_type", ProblemField::kDtype},
    {"direction", ProblemField::kDir},
};

constexpr ColumnField kNumericColumns[] = {
    {"spatial_dim", ProblemField::kSpatialDim}, {"in_channels", ProblemField::kC},
    {"in_h", ProblemField::kH},                 {"in_w", ProblemField::kW},
    {"in_d", ProblemField::kD},                 {"fil_h", ProblemField::kY},
    {"fil_w", ProblemField::kX},                {"fil_d", ProblemField::kZ},
    {"out_channels", ProblemField::kK},         {"batchsize", ProblemField::kN},
    {"pad_h", ProblemField::kPadH},             {"pad_w", ProblemField::kPadW},
    {"pad_d", ProblemField::kPadD},             {"conv_stride_h", ProblemField::kStrideH},
    {"conv_stride_w", ProblemField::kStrideW},  {"conv_stride_d", ProblemField::kStrideD},
    {"dilation_h", ProblemField::kDilH},        {"dilation_w", ProblemField::kDilW},
    {"dilation_d", ProblemField::kDilD},        {"bias", ProblemField::kBias},
    {"group_count", ProblemField::kG},
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { prepare_status_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return prepare_status_ == SQLITE_OK && stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int prepare_status_ = SQLITE_ERROR;
};

Status columns_of(sqlite3* db, const std::string& path, const char* table, std::set<std::string>* columns) {
  const std::string sql = std::string("PRAGMA table_info(") + table + ")";
  Statement stmt(db, sql.c_str());
  if (!stmt.ok())
    return Status::error(StatusCode::kIoError, "perf DB %s: cannot read its schema: %s", path.c_str(), sqlite3_errmsg(db));
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    const unsigned char* name = sqlite3_column_text(stmt.get(), 1);
    if (name != nullptr) columns->insert(reinterpret_cast<const char*>(name));
  }
  if (rc != SQLITE_DONE)
    return Status::error(StatusCode::kIoError, "perf DB %s: cannot read its schema: %s", path.c_str(), sqlite3_errmsg(db));
  if (columns->empty()) return Status::error(StatusCode::kNotFound, "perf DB %s has no table %s", path.c_str(), table);
  return Status::ok();
}

std::string text_column(sqlite3_stmt* stmt, int column) {
  const unsigned char* text = sqlite3_column_text(stmt, column);
  return text != nullptr ? reinterpret_cast<const char*>(text) : std::string();
}

// The longest architecture symbol the file name starts with ("gfx90a" rather than "gfx90").
std::optional<int64_t> arch_from_file_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string_view name = std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  std::optional<int64_t> best;
  size_t best_length = 0;
  for (int64_t value = 0; value < 64; ++value) {
    const char* symbol = problem_symbol_name(ProblemField::kArch, value);
    if (symbol == nullptr) continue;
    const std::string_view candidate(symbol);
    if (name.substr(0, candidate.size()) == candidate && candidate.size() > best_length) {
      best = value;
      best_length = candidate.size();
    }
  }
  return best;
}

}  // namespace

bool parse_param_list(std::string_view text, std::vector<int64_t>* values) {
  values->clear();
  size_t i = 0;
  for (;;) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t end = i;
    if (end < text.size() && (text[end] == '-' || text[end] == '+')) ++end;
    const size_t digits = end;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == digits) return false;
    const std::string number(text.substr(i, end - i));
    errno = 0;
    const long long value = std::strtoll(number.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;
    values->push_back(value);
    i = end;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) return true;
    if (text[i] != ',') return false;
    ++i;
  }
}

PerfDb::~PerfDb() {
  if (db_ != nullptr) sqlite3_close(db_);
}

PerfDb::PerfDb(PerfDb&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)), arch_(other.arch_) {}

PerfDb& PerfDb::operator=(PerfDb&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    arch_ = other.arch_;
  }
  return *this;
}

Status PerfDb::open(const std::string& path, PerfDb* db) {
  *db = PerfDb();
  sqlite3* handle = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    const Status status = Status::error(rc == SQLITE_CANTOPEN ? StatusCode::kNotFound : StatusCode::kIoError,
                                        "cannot open perf DB %s: %s", path.c_str(),
                                        handle != nullptr ? sqlite3_errmsg(handle) : sqlite3_errstr(rc));
    sqlite3_close(handle);
    return status;
  }
  db->db_ = handle;
  db->path_ = path;
  db->arch_ = arch_from_file_name(path);

  std::set<std::string> perf_columns;
  TUNECAST_RETURN_IF_ERROR(columns_of(handle, path, "perf_db", &perf_columns));
  for (const char* column : {"id", "solver", "config", "params"}) {
    if (!perf_columns.count(column))
      return Status::error(StatusCode::kNotFound, "perf DB %s: table perf_db has no column %s", path.c_str(), column);
  }
  std::set<std::string> config_columns;
  TUNECAST_RETURN_IF_ERROR(columns_of(handle, path, "config", &config_columns));
  if (!config_columns.count("id"))
    return Status::error(StatusCode::kNotFound, "perf DB %s: table config has no column id", path.c_str());
  for (const ColumnField& column : kEnumColumns) {
    if (!config_columns.count(column.column))
      return Status::error(StatusCode::kNotFound, "perf DB %s: table config has no column %s", path.c_str(), column.column);
  }
  for (const ColumnField& column : kNumericColumns) {
    if (!config_columns.count(column.column))
      return Status::error(StatusCode::kNotFound, "perf DB %s: table config has no column %s", path.c_str(), column.column);
  }
  return Status::ok();
}

std::string perf_db_descriptor(const Problem& problem) {
  std::string text;
  auto add = [&](const char* column, const std::string& value) {
    if (!text.empty()) text += ';';
    text += column;
    text += '=';
    text += value;
  };
  for (const ColumnField& column : kEnumColumns) {
    const char* symbol = problem_symbol_name(column.field, problem.get(column.field));
    add(column.column, symbol ? symbol : std::to_string(problem.get(column.field)));
  }
  for (const ColumnField& column : kNumericColumns) {
    add(column.column, std::to_string(problem.get(column.field)));
  }
  return text;
}

Status PerfDb::rows(std::string_view solver, const PerfDbFilter& filter, std::vector<PerfDbRow>* out) const {
  out->clear();
  if (db_ == nullptr) return Status::error(StatusCode::kInvalidArgument, "perf DB is not open");
  std::string sql = "SELECT p.id, p.params, c.id";
  for (const ColumnField& column : kEnumColumns) sql += std::string(", c.") + column.column;
  for (const ColumnField& column : kNumericColumns) sql += std::string(", c.") + column.column;
  sql += " FROM perf_db AS p JOIN config AS c ON p.config = c.id WHERE p.solver = ?1 ORDER BY p.id";
  Statement stmt(db_, sql.c_str());
  if (!stmt.ok())
    return Status::error(StatusCode::kIoError, "perf DB %s: query failed: %s", path_.c_str(), sqlite3_errmsg(db_));
  sqlite3_bind_text(stmt.get(), 1, solver.data(), static_cast<int>(solver.size()), SQLITE_TRANSIENT);

  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    PerfDbRow row;
    const int64_t perf_id = sqlite3_column_int64(stmt.get(), 0);
    row.params_text = text_column(stmt.get(), 1);
    row.config_id = sqlite3_column_int64(stmt.get(), 2);
    int column = 3;
    for (const ColumnField& enum_column : kEnumColumns) {
      const std::string text = text_column(stmt.get(), column++);
      int64_t value = 0;
      if (!find_problem_symbol(enum_column.field, text, &value))
        return Status::error(StatusCode::kInvalidArgument, "perf DB %s: perf_db row %lld (config %lld): unknown %s '%s'",
                             path_.c_str(), static_cast<long long>(perf_id), static_cast<long long>(row.config_id),
                             enum_column.column, text.c_str());
      row.problem.set(enum_column.field, value);
    }
    for (const ColumnField& numeric : kNumericColumns) {
      if (sqlite3_column_type(stmt.get(), column) != SQLITE_INTEGER)
        return Status::error(StatusCode::kInvalidArgument,
                             "perf DB %s: perf_db row %lld (config %lld): column %s is not an integer", path_.c_str(),
                             static_cast<long long>(perf_id), static_cast<long long>(row.config_id), numeric.column);
      row.problem.set(numeric.field, sqlite3_column_int64(stmt.get(), column++));
    }
    if (arch_) row.problem.set(ProblemField::kArch, *arch_);
    if (filter.dtype && row.problem.get(ProblemField::kDtype) != *filter.dtype) continue;
    if (filter.dir && row.problem.get(ProblemField::kDir) != *filter.dir) continue;
    if (!parse_param_list(row.params_text, &row.params))
      return Status::error(StatusCode::kInvalidArgument,
                           "perf DB %s: perf_db row %lld (config %lld): params '%.60s' are not comma-separated integers",
                           path_.c_str(), static_cast<long long>(perf_id), static_cast<long long>(row.config_id),
                           row.params_text.c_str());
    out->push_back(std::move(row));
  }
  if (rc != SQLITE_DONE)
    return Status::error(StatusCode::kIoError, "perf DB %s: reading rows failed: %s", path_.c_str(), sqlite3_errmsg(db_));
  return Status::ok();
}

Status PerfDb::solvers(std::vector<std::pair<std::string, int64_t>>* out) const {
  out->clear();
  if (db_ == nullptr) return Status::error(StatusCode::kInvalidArgument, "perf DB is not open");
  Statement stmt(db_, "SELECT solver, COUNT(*) FROM perf_db GROUP BY solver ORDER BY solver");
  if (!stmt.ok())
    return Status::error(StatusCode::kIoError, "perf DB %s: query failed: %s", path_.c_str(), sqlite3_errmsg(db_));
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW)
    out->emplace_back(text_column(stmt.get(), 0), sqlite3_column_int64(stmt.get(), 1));
  if (rc != SQLITE_DONE)
    return Status::error(StatusCode::kIoError, "perf DB %s: reading solvers failed: %s", path_.c_str(), sqlite3_errmsg(db_));
  return Status::ok();
}

Status read_perf_db(const std::string& path, std::string_view solver, const PerfDbFilter& filter,
                    std::vector<PerfDbRow>* out) {
  PerfDb db;
  TUNECAST_RETURN_IF_ERROR(PerfDb::open(path, &db));
  return db.rows(solver, filter, out);
}

}  // namespace tunecast
