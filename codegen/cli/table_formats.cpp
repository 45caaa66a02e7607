// table's formats: a C++ include of default parameters, a text table, and a MIOpen perf DB
// (SQLite, MIOpen's schema) written through a private temporary file.
#include <sqlite3.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "table.h"

namespace tunecast::cli::table {
namespace {

std::string values_text(const Candidate& c) {
  std::string s;
  for (int p = 0; p < c.length; ++p) s += (p ? "," : "") + std::to_string(c.values[p]);
  return s;
}

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// MIOpen's perf DB schema (tables config and perf_db, their unique indexes).
constexpr const char* kPerfDbSchema =
    "CREATE TABLE IF NOT EXISTS `config` (`id` INTEGER PRIMARY KEY ASC,`layout` TEXT NOT NULL,`data_type` TEXT "
    "NOT NULL,`direction` TEXT NOT NULL,`spatial_dim` INT NOT NULL,`in_channels` INT NOT NULL,"
    "`in_h` INT NOT NULL,`in_w` INT NOT NULL,`in_d` INT NOT NULL,`fil_h` INT NOT NULL,`fil_w` INT "
    "NOT NULL,`fil_d` INT NOT NULL,`out_channels` INT NOT NULL, `batchsize` INT NOT NULL,`pad_h` "
    "INT NOT NULL,`pad_w` INT NOT NULL,`pad_d` INT NOT NULL,`conv_stride_h` INT NOT NULL,"
    "`conv_stride_w` INT NOT NULL,`conv_stride_d` INT NOT NULL,`dilation_h` INT NOT NULL,"
    "`dilation_w` INT NOT NULL,`dilation_d` INT NOT NULL,`bias` INT NOT NULL,`group_count` INT NOT "
    "NULL);"
    "CREATE TABLE IF NOT EXISTS `perf_db` (`id` INTEGER PRIMARY KEY ASC,`solver` TEXT NOT NULL,`config` INTEGER "
    "NOT NULL, `params` TEXT NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS `idx_config` ON config( layout,data_type,direction,spatial_dim,"
    "in_channels,in_h,in_w,in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,"
    "conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,bias,group_count );"
    "CREATE UNIQUE INDEX IF NOT EXISTS `idx_perf_db` ON perf_db(solver, config);";

// MIOpen's columns, in the order of kPerfDbSchema's index. Text columns take the symbolic names.
constexpr ProblemField kColumns[] = {
    ProblemField::kLayout, ProblemField::kDtype, ProblemField::kDir, ProblemField::kSpatialDim,
    ProblemField::kC, ProblemField::kH, ProblemField::kW, ProblemField::kD, ProblemField::kY,
    ProblemField::kX, ProblemField::kZ, ProblemField::kK, ProblemField::kN, ProblemField::kPadH,
    ProblemField::kPadW, ProblemField::kPadD, ProblemField::kStrideH, ProblemField::kStrideW,
    ProblemField::kStrideD, ProblemField::kDilH, ProblemField::kDilW, ProblemField::kDilD,
    ProblemField::kBias, ProblemField::kG};
constexpr const char* kColumnNames[] = {
    "layout", "data_type", "direction", "spatial_dim", "in_channels", "in_h", "in_w", "in_d", "fil_h", "fil_w",
    "fil_d", "out_channels", "batchsize", "pad_h", "pad_w", "pad_d", "conv_stride_h", "conv_stride_w",
    "conv_stride_d", "dilation_h", "dilation_w", "dilation_d", "bias", "group_count"};

Status sqlite_error(sqlite3* db, const char* what) {
  return Status::error(StatusCode::kIoError, "perf DB: %s: %s", what, sqlite3_errmsg(db));
}

// Writes the rows that found a candidate into the SQLite file at `path` (empty, or a perf DB to
// merge into: same solver and problem replaced, every other row kept).
Status write_perf_db(const std::string& path, const std::string& solver, const std::vector<Row>& rows,
                     size_t* written, size_t* held) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    Status s = sqlite_error(db, "open");
    sqlite3_close(db);
    return s;
  }
  struct Closer {
    sqlite3* db;
    ~Closer() { sqlite3_close(db); }
  } closer{db};
  if (sqlite3_exec(db, kPerfDbSchema, nullptr, nullptr, nullptr) != SQLITE_OK) return sqlite_error(db, "schema");
  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) return sqlite_error(db, "begin");
  sqlite3_stmt* config = nullptr;
  sqlite3_stmt* perf = nullptr;
  const char* kConfig =
      "INSERT OR IGNORE INTO config (layout,data_type,direction,spatial_dim,in_channels,in_h,in_w,"
      "in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,conv_stride_h,"
      "conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,bias,group_count) VALUES "
      "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  const char* kLookup =
      "SELECT id FROM config WHERE layout=? AND data_type=? AND direction=? AND spatial_dim=? AND "
      "in_channels=? AND in_h=? AND in_w=? AND in_d=? AND fil_h=? AND fil_w=? AND fil_d=? AND "
      "out_channels=? AND batchsize=? AND pad_h=? AND pad_w=? AND pad_d=? AND conv_stride_h=? AND "
      "conv_stride_w=? AND conv_stride_d=? AND dilation_h=? AND dilation_w=? AND dilation_d=? AND "
      "bias=? AND group_count=?";
  sqlite3_stmt* lookup = nullptr;
  if (sqlite3_prepare_v2(db, kConfig, -1, &config, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, kLookup, -1, &lookup, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO perf_db (solver, config, params) VALUES (?,?,?)",
                         -1, &perf, nullptr) != SQLITE_OK) {
    Status s = sqlite_error(db, "prepare");
    sqlite3_finalize(config);
    sqlite3_finalize(lookup);
    sqlite3_finalize(perf);
    return s;
  }
  Status status;
  *written = 0;
  std::set<int64_t> configs;  // this run's rows (a problem listed twice is one)
  for (const Row& row : rows) {
    if (!row.status || row.not_applicable >= 0) continue;  // no candidate, or MIOpen would not run it
    for (sqlite3_stmt* stmt : {config, lookup}) {
      sqlite3_reset(stmt);
      for (int i = 0; i < 24; ++i) {
        const int64_t value = row.problem.get(kColumns[i]);
        if (i < 3) {
          const char* name = problem_symbol_name(kColumns[i], value);
          sqlite3_bind_text(stmt, i + 1, name ? name : "?", -1, SQLITE_TRANSIENT);
        } else {
          sqlite3_bind_int64(stmt, i + 1, value);
        }
      }
    }
    if (sqlite3_step(config) != SQLITE_DONE || sqlite3_step(lookup) != SQLITE_ROW) {
      status = sqlite_error(db, "insert config");
      break;
    }
    const int64_t config_id = sqlite3_column_int64(lookup, 0);
    configs.insert(config_id);
    const std::string params = values_text(row.best);
    sqlite3_reset(perf);
    sqlite3_bind_text(perf, 1, solver.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(perf, 2, config_id);
    sqlite3_bind_text(perf, 3, params.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(perf) != SQLITE_DONE) {
      status = sqlite_error(db, "insert perf_db");
      break;
    }
  }
  sqlite3_finalize(config);
  sqlite3_finalize(lookup);
  sqlite3_finalize(perf);
  if (!status) return status;
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return sqlite_error(db, "commit");
  // A problem listed twice is one row (its key): count what the file holds.
  sqlite3_stmt* count = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM perf_db", -1, &count, nullptr) != SQLITE_OK ||
      sqlite3_step(count) != SQLITE_ROW) {
    sqlite3_finalize(count);
    return sqlite_error(db, "count");
  }
  *written = configs.size();
  *held = static_cast<size_t>(sqlite3_column_int64(count, 0));
  sqlite3_finalize(count);
  return Status::ok();
}

}  // namespace

namespace {

// The table keyed by the problem's fields (docs/kernels.md, "Tables"): a Key struct with one int64
// member per field, the enumerations' symbols as constants, the entries, and exact and nearest
// lookups.
void key_table(const Model& model, const std::vector<Row>& rows, std::ostringstream* out) {
  std::ostringstream& o = *out;
  const ProblemSchema schema = model.problem_schema();
  const int fields = schema.field_count();
  o << "// The problem as its kernel's fields, in definition order (enumerations by symbol position,\n"
    << "// architectures by tunecast::arch_code).\nstruct Key {\n";
  for (int f = 0; f < fields; ++f) o << "  int64_t " << schema.field_name(f) << " = 0;\n";
  o << "};\n\n";
  for (int f = 0; f < fields; ++f) {
    const FieldKind kind = schema.field_kind(f);
    if (kind == FieldKind::kInteger) continue;
    std::vector<std::pair<std::string, int64_t>> symbols;
    if (kind == FieldKind::kEnumeration) {
      for (int i = 0; i < schema.symbol_count(f) || (schema.builtin() && i < 8); ++i) {
        const char* name = schema.symbol_name(f, i);
        if (name != nullptr) symbols.emplace_back(name, i);
      }
    } else {  // the architectures of the table's rows
      for (const Row& row : rows) {
        const char* name = schema.symbol_name(f, row.problem.get(f));
        if (name == nullptr) continue;
        std::string id(name);
        for (char& c : id) c = (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
        bool seen = false;
        for (const auto& s : symbols) seen = seen || s.first == id;
        if (!seen) symbols.emplace_back(id, row.problem.get(f));
      }
    }
    o << "namespace " << schema.field_name(f) << "_values {\n";
    for (const auto& [name, value] : symbols) o << "constexpr int64_t " << name << " = " << value << ";\n";
    o << "}  // namespace " << schema.field_name(f) << "_values\n";
  }
  o << "\nstruct Entry {\n  Key key;\n  bool found;\n  bool applicable;\n  int64_t values[kParameterCount];\n};\n\n"
    << "constexpr Entry kEntries[] = {\n";
  for (const Row& row : rows) {
    o << "    {{";
    for (int f = 0; f < fields; ++f) o << (f ? ", " : "") << row.problem.get(f);
    o << "}, " << (row.status ? "true" : "false") << ", " << (row.not_applicable < 0 ? "true" : "false") << ", {"
      << (row.status ? values_text(row.best) : "") << "}},\n";
  }
  o << "};\n\n"
    << "// The entry of exactly this problem, or nullptr.\n"
    << "inline const Entry* find(const Key& key) {\n"
    << "  for (const Entry& e : kEntries) {\n    if (";
  for (int f = 0; f < fields; ++f) o << (f ? " && " : "") << "e.key." << schema.field_name(f) << " == key." << schema.field_name(f);
  o << ") return &e;\n  }\n  return nullptr;\n}\n\n"
    << "// The nearest entry with a candidate: among those whose enumerated and architecture fields equal\n"
    << "// the key's, the smallest sum over integer fields of |log2(max(a, 1)) - log2(max(b, 1))|; ties:\n"
    << "// the first listed. nullptr when no entry shares those fields.\n"
    << "inline const Entry* nearest(const Key& key) {\n"
    << "  auto log2_of = [](int64_t v) { return std::log2(static_cast<double>(v < 1 ? 1 : v)); };\n"
    << "  const Entry* best = nullptr;\n  double best_distance = 0.0;\n"
    << "  for (const Entry& e : kEntries) {\n    if (!e.found";
  for (int f = 0; f < fields; ++f) {
    if (schema.field_kind(f) != FieldKind::kInteger) o << " || e.key." << schema.field_name(f) << " != key." << schema.field_name(f);
  }
  o << ") continue;\n    const double distance = 0.0";
  for (int f = 0; f < fields; ++f) {
    if (schema.field_kind(f) == FieldKind::kInteger) {
      o << "\n        + std::fabs(log2_of(e.key." << schema.field_name(f) << ") - log2_of(key." << schema.field_name(f) << "))";
    }
  }
  o << ";\n    if (best == nullptr || distance < best_distance) {\n      best = &e;\n      best_distance = distance;\n    }\n"
    << "  }\n  return best;\n}\n\n";
}

}  // namespace

std::string cpp_table(const Model& model, const std::string& model_path, int beam,
                      const std::string& name_space, const std::vector<Row>& rows) {
  std::ostringstream o;
  const int n = model.parameter_count();
  o << "// Default tuning parameters generated by `tunecast table` from " << model_path
    << " (beam " << beam << "). Do not edit.\n// One entry per problem of the list; `found` is false "
    << "where no candidate satisfied the constraints\n// or the problem could not be encoded; `applicable` is "
    << "false where the kernel's rules\n// (`applies`) exclude the problem: the kernel does not run "
    << "there, do not use its values.\n"
    << "#pragma once\n\n#include <cmath>\n#include <cstdint>\n\n"
    << "namespace " << name_space << " {\n\nconstexpr int kParameterCount = " << n << ";\n"
    << "constexpr const char* kParameterNames[kParameterCount] = {";
  for (int p = 0; p < n; ++p) o << (p ? ", " : "") << c_string(model.parameter_name(p));
  o << "};\n\nstruct DefaultParameters {\n  const char* problem;  // --problem syntax\n"
    << "  bool found;\n  bool applicable;\n  int64_t values[kParameterCount];\n};\n\n"
    << "constexpr DefaultParameters kDefaultParameters[] = {\n";
  for (const Row& row : rows) {
    o << "    {" << c_string(row.text) << ", " << (row.status ? "true" : "false") << ", "
      << (row.not_applicable < 0 ? "true" : "false") << ", {" << (row.status ? values_text(row.best) : "") << "}},";
    if (row.not_applicable >= 0) o << "  // not applicable: " << applicability_text(model, row.not_applicable);
    o << "\n";
  }
  o << "};\n\n";
  key_table(model, rows, &o);
  o << "}  // namespace " << name_space << "\n";
  return o.str();
}

std::string text_table(const Model& model, const std::vector<Row>& rows) {
  std::string out = "# problem";
  for (int p = 0; p < model.parameter_count(); ++p) out += std::string(p ? "," : "\t") + model.parameter_name(p);
  out += "\n";
  for (const Row& row : rows) {
    out += row.text + "\t" + (row.status ? values_text(row.best) : std::string("# ") + row.status.message());
    if (row.not_applicable >= 0) out += std::string("\t# not applicable: ") + applicability_text(model, row.not_applicable);
    out += "\n";
  }
  return out;
}

Status check_perf_db_fields(const std::string& path, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    for (size_t i = 3; i < sizeof kColumns / sizeof kColumns[0]; ++i) {  // the numeric (INT) columns
      const int64_t value = row.problem.get(kColumns[i]);
      if (value > INT32_MAX) {
        return Status::error(StatusCode::kInvalidArgument,
                             "%s:%d: %s = %lld does not fit the perf DB's column %s (MIOpen reads it as a 32-bit int, "
                             "at most %d)",
                             path.c_str(), row.line, problem_field_name(kColumns[i]), static_cast<long long>(value),
                             kColumnNames[i], INT32_MAX);
      }
    }
  }
  return Status::ok();
}

Status check_perf_db_output(const std::string& path) {
  struct stat st;
  if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0) return Status::ok();  // a new file
  if (::access(path.c_str(), W_OK) != 0) {
    return Status::error(StatusCode::kInvalidArgument, "%s exists and is read-only: its rows would be replaced; "
                         "name another output, or make it writable to merge into it", path.c_str());
  }
  sqlite3* db = nullptr;
  const bool opened = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK;
  const bool tables = opened && sqlite3_exec(db, "SELECT 1 FROM config, perf_db LIMIT 0", nullptr, nullptr, nullptr) == SQLITE_OK;
  const std::string why = db ? sqlite3_errmsg(db) : "cannot open it";
  sqlite3_close(db);
  if (!tables) {
    return Status::error(StatusCode::kInvalidArgument, "%s exists and is not a MIOpen perf DB this run can merge into "
                         "(%s): name another output", path.c_str(), why.c_str());
  }
  return Status::ok();
}

// Builds the DB in a private temporary file (a copy of merge_into's when it exists), then hands
// back its bytes for the caller to publish atomically.
Status perf_db_bytes(const std::string& solver, const std::vector<Row>& rows, const std::string& merge_into,
                     std::string* bytes, size_t* written, size_t* held) {
  // An existing perf DB keeps every row this run does not write (other solvers, other problems):
  // MIOpen's own updates work so, and a user's perf DB must not shrink to this run's rows.
  std::string existing;
  struct stat st;
  const bool merging = !merge_into.empty() && merge_into != "-" && ::stat(merge_into.c_str(), &st) == 0;
  if (merging) {
    TUNECAST_RETURN_IF_ERROR(check_perf_db_output(merge_into));
    TUNECAST_RETURN_IF_ERROR(codegen::read_file(merge_into, &existing));
  }
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/tunecast-table-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return Status::error(StatusCode::kIoError, "cannot create a temporary file in %s", path.c_str());
  const bool copied = ::write(fd, existing.data(), existing.size()) == static_cast<ssize_t>(existing.size());
  close(fd);
  Status status = copied ? Status::ok() : Status::error(StatusCode::kIoError, "cannot copy %s to %s", merge_into.c_str(), path.c_str());
  if (status) status = write_perf_db(path, solver, rows, written, held);
  if (!status && merging) {
    status = Status::error(status.code(), "%s exists and is not a MIOpen perf DB this run can merge into (%s): name "
                           "another output", merge_into.c_str(), status.message());
  }
  if (status) status = codegen::read_file(path, bytes);
  std::remove(path.c_str());
  return status;
}

}  // namespace tunecast::cli::table
