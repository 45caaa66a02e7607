// import-timings: measurements from elsewhere into a timing DB keyed by a kernel definition
// (docs/kernels.md): a documented CSV, Kernel Tuner's T4 results or cache file (one problem each),
// another tunecast-timings/2 DB, or the MIOpen-keyed timing DB of issue 25. Idempotent: importing
// the same input twice adds nothing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "tunecast/codegen/file_io.h"
#include "tunecast/codegen/timing_db.h"
#include "tunecast/codegen/tuning_cache.h"

namespace tunecast::cli {
namespace {

using Measurement = codegen::TimingRecorder::Measurement;

bool is_sqlite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::memcmp(head, "SQLite format 3", 16) == 0;
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream in(line);
  while (std::getline(in, item, separator)) {
    const size_t b = item.find_first_not_of(" \t\r");
    items.push_back(b == std::string::npos ? "" : item.substr(b, item.find_last_not_of(" \t\r") + 1 - b));
  }
  if (!line.empty() && line.back() == separator) items.push_back("");
  return items;
}

// The field values of a problem, as the recorder's columns take them (symbols by name).
struct Columns {
  std::vector<std::string> names;
  std::vector<bool> integer;
};

Columns columns_of(const ProblemSchema& schema) {
  Columns c;
  for (int f = 0; f < schema.field_count(); ++f) {
    c.names.push_back(schema.field_name(f));
    c.integer.push_back(schema.field_kind(f) == FieldKind::kInteger);
  }
  return c;
}

std::vector<std::string> values_of(const ProblemSchema& schema, const Problem& problem) {
  std::vector<std::string> values;
  for (int f = 0; f < schema.field_count(); ++f) {
    const char* symbol = schema.field_kind(f) == FieldKind::kInteger ? nullptr : schema.symbol_name(f, problem.get(f));
    values.push_back(!problem.has(f) ? "" : symbol ? symbol : std::to_string(problem.get(f)));
  }
  return values;
}

std::vector<int64_t> reorder(const std::vector<int64_t>& recorded, const std::vector<int>& positions) {
  std::vector<int64_t> config(recorded.size());
  for (size_t q = 0; q < config.size(); ++q) config[q] = recorded[positions.empty() ? q : positions[q]];
  return config;
}

class Importer {
 public:
  Importer(const Model& model, codegen::TimingRecorder* recorder) : model_(model), recorder_(recorder) {
    for (int p = 0; p < model.parameter_count(); ++p) params_.push_back(model.parameter_name(p));
  }

  Status add(const Problem& problem, const std::vector<int64_t>& config, bool ok, double time, const std::string& status) {
    int64_t id = 0;
    TUNECAST_RETURN_IF_ERROR(problem_id(problem, &id));
    Measurement m = measurement(config, ok, time, status);
    char key[64];
    std::snprintf(key, sizeof key, "%lld|%a|", static_cast<long long>(id), m.ok ? m.time : 0.0);
    int& occurrence = occurrences_[key + m.status + "|" + m.params];  // identical rows before it, this input
    bool added = false;
    TUNECAST_RETURN_IF_ERROR(recorder_->append(id, m, &added, occurrence++));
    ++rows_;
    added_ += added;
    return Status::ok();
  }

  // A Kernel Tuner file is one run on one GPU. One whose outcome for a config differs from what the
  // problem already holds (another GPU's cache imported under the same problem) is refused: the
  // times would be mixed (each config's median, the mean of two GPUs). The same run's T4 file and
  // cache agree, and merge.
  Status check_same_run(const Problem& problem, const std::string& path, const codegen::TuningCache& cache,
                        const std::vector<int>& positions, double scale) {
    int64_t id = 0;
    TUNECAST_RETURN_IF_ERROR(problem_id(problem, &id));
    std::vector<Measurement> held;
    TUNECAST_RETURN_IF_ERROR(recorder_->measurements(id, &held));
    if (held.empty()) return Status::ok();
    std::map<std::string, const Measurement*> by_params;
    for (const Measurement& m : held) by_params.emplace(m.params, &m);
    for (const std::vector<int64_t>& recorded : cache.timings.configs()) {
      const codegen::ProblemTimings::Timing* t = cache.timings.find(recorded);
      const Measurement m = measurement(reorder(recorded, positions), t->ok, t->time * scale, t->status);
      const auto it = by_params.find(m.params);
      if (it == by_params.end()) continue;
      const Measurement& h = *it->second;
      const bool same = h.ok == m.ok && (m.ok ? std::fabs(h.time - m.time) <= 1e-9 * std::max(h.time, m.time) : h.status == m.status);
      if (same) continue;
      auto outcome = [](const Measurement& x) {
        char text[64];
        std::snprintf(text, sizeof text, "%.6g us", x.time);
        return x.ok ? std::string(text) : x.status;
      };
      const std::string head = "problem " + problem_text(model_, problem) + " already holds config (" + m.params + ") as " +
                               outcome(h) + ", " + path + " has " + outcome(m);
      return Status::error_with_tail(StatusCode::kInvalidArgument, head.c_str(),
                                     ": one GPU's run per problem (import each GPU's file with its own --problem "
                                     "arch=NAME, after `field arch` in the definition)");
    }
    return Status::ok();
  }

  // Maps a recording's parameter names onto the definition's positions.
  Status positions(const std::vector<std::string>& names, const std::string& what, std::vector<int>* out) const {
    return codegen::map_parameters(params_, names, out).is_ok()
               ? Status::ok()
               : Status::error(StatusCode::kInvalidArgument, "%s: its parameters do not match the definition's (%s)",
                               what.c_str(), codegen::map_parameters(params_, names, out).message());
  }

  // Each input's rows count their repeats afresh: a row is new when the DB holds fewer like it.
  void next_input() { occurrences_.clear(); }
  const std::vector<std::string>& params() const { return params_; }
  size_t problems() const { return ids_.size(); }
  size_t rows() const { return rows_; }
  size_t added() const { return added_; }

 private:
  Status problem_id(const Problem& problem, int64_t* id) {
    const std::string text = problem_text(model_, problem);
    auto it = ids_.find(text);
    if (it == ids_.end()) {
      TUNECAST_RETURN_IF_ERROR(recorder_->problem(text, values_of(model_.problem_schema(), problem), id));
      it = ids_.emplace(text, *id).first;
    }
    *id = it->second;
    return Status::ok();
  }

  static Measurement measurement(const std::vector<int64_t>& config, bool ok, double time, const std::string& status) {
    Measurement m;
    for (size_t p = 0; p < config.size(); ++p) m.params += (p ? "," : "") + std::to_string(config[p]);
    m.ok = ok;
    m.time = time;
    m.status = ok ? "ok" : status;
    return m;
  }

  const Model& model_;
  codegen::TimingRecorder* recorder_;
  std::vector<std::string> params_;
  std::map<std::string, int64_t> ids_;
  std::map<std::string, int> occurrences_;
  size_t rows_ = 0, added_ = 0;
};


Status import_csv(const std::string& path, const Model& model, Importer* importer) {
  std::string text;
  TUNECAST_RETURN_IF_ERROR(codegen::read_file(path, &text));
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return Status::error(StatusCode::kInvalidArgument, "%s is empty (it needs a header)", path.c_str());
  const std::vector<std::string> header = split(line, ',');
  const ProblemSchema schema = model.problem_schema();
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  std::vector<int> param_columns;
  for (const std::string& p : importer->params()) {
    param_columns.push_back(column(p));
    if (param_columns.back() < 0) {
      return Status::error(StatusCode::kInvalidArgument, "%s:1: no column for parameter '%s' (docs/kernels.md, CSV)",
                           path.c_str(), p.c_str());
    }
  }
  const int time_column = column("time_us"), status_column = column("status");
  if (time_column < 0) return Status::error(StatusCode::kInvalidArgument, "%s:1: no time_us column", path.c_str());
  std::vector<std::pair<std::string, int>> field_columns;  // problem fields given as columns
  for (size_t i = 0; i < header.size(); ++i) {
    int field = -1;
    if (schema.find_field(header[i], &field)) field_columns.emplace_back(header[i], static_cast<int>(i));
  }
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> cells = split(line, ',');
    if (cells.size() != header.size()) {
      return Status::error(StatusCode::kInvalidArgument, "%s:%d: %zu cells, the header has %zu", path.c_str(), number,
                           cells.size(), header.size());
    }
    std::string problem_text_in;
    for (const auto& [name, i] : field_columns) problem_text_in += (problem_text_in.empty() ? "" : ",") + name + "=" + cells[i];
    Problem problem;
    Status s = parse_model_problem(model, problem_text_in, &problem);
    if (!s) return Status::error(s.code(), "%s:%d: %s", path.c_str(), number, s.message());
    std::vector<int64_t> config;
    for (int c : param_columns) {
      std::vector<int64_t> one;
      if (!parse_param_list(cells[c], &one) || one.size() != 1) {
        return Status::error(StatusCode::kInvalidArgument, "%s:%d: '%s' (%s) is not an integer", path.c_str(), number,
                             cells[c].c_str(), header[c].c_str());
      }
      config.push_back(one[0]);
    }
    const std::string& time_text = cells[time_column];
    std::string status = status_column >= 0 ? cells[status_column] : "";
    double time = 0.0;
    bool ok = !time_text.empty();
    if (ok) {
      char* end = nullptr;
      time = std::strtod(time_text.c_str(), &end);
      if (*end != '\0' || !(time >= 0.0) || !std::isfinite(time)) {
        return Status::error(StatusCode::kInvalidArgument, "%s:%d: time_us '%s' is not a time (a number >= 0, or empty for a failure)",
                             path.c_str(), number, time_text.c_str());
      }
    }
    if (status.empty()) status = ok ? "ok" : "fail";
    if (ok && status != "ok") {
      return Status::error(StatusCode::kInvalidArgument, "%s:%d: status '%s' with a time (a failure has no time_us)",
                           path.c_str(), number, status.c_str());
    }
    if (!ok && status == "ok") {
      return Status::error(StatusCode::kInvalidArgument, "%s:%d: status ok without a time_us", path.c_str(), number);
    }
    TUNECAST_RETURN_IF_ERROR(importer->add(problem, config, ok, time, status));
  }
  return Status::ok();
}

Status import_cache(const std::string& path, const Model& model, const std::string& problem_text_in, Importer* importer) {
  Problem problem;
  const Status parsed = parse_model_problem(model, problem_text_in, &problem);
  if (!parsed && problem_text_in.empty()) {  // a definition whose fields all have defaults needs none
    return Status::error(StatusCode::kInvalidArgument, "%s holds one problem's measurements: say which with --problem",
                         path.c_str());
  }
  TUNECAST_RETURN_IF_ERROR(parsed);
  codegen::TuningCache cache;
  TUNECAST_RETURN_IF_ERROR(codegen::read_tuning_cache(path, &cache));
  for (size_t p = 0; p < cache.indexed.size(); ++p) {
    if (cache.indexed[p]) {
      return Status::error(StatusCode::kInvalidArgument, "%s: parameter '%s' has non-integer values: a definition's are integers",
                           path.c_str(), cache.names[p].c_str());
    }
  }
  std::vector<int> positions;
  TUNECAST_RETURN_IF_ERROR(importer->positions(cache.names, path, &positions));
  const double scale = cache.unit.empty() ? 1.0 : codegen::microseconds_per(cache.unit);  // into microseconds
  TUNECAST_RETURN_IF_ERROR(importer->check_same_run(problem, path, cache, positions, scale));
  for (const std::vector<int64_t>& recorded : cache.timings.configs()) {
    const codegen::ProblemTimings::Timing* t = cache.timings.find(recorded);
    TUNECAST_RETURN_IF_ERROR(importer->add(problem, reorder(recorded, positions), t->ok, t->time * scale, t->status));
  }
  return Status::ok();
}

Status import_db(const std::string& path, const Model& model, const std::string& solver, Importer* importer) {
  const ProblemSchema schema = model.problem_schema();
  codegen::TimingDb db;
  TUNECAST_RETURN_IF_ERROR(codegen::TimingDb::open(path, solver, &db, &schema));
  const char* kernel = model.metadata("solver");
  if (db.keyed_by_definition() && kernel != nullptr && db.solver() != kernel) {  // as tune --record refuses it
    return Status::error(StatusCode::kInvalidArgument, "%s records kernel %s, the definition is of %s", path.c_str(),
                         db.solver().c_str(), kernel);
  }
  if (db.meta("time_unit").value_or("us") != "us") {
    return Status::error(StatusCode::kInvalidArgument, "%s records times in %s; import takes microseconds", path.c_str(),
                         db.meta("time_unit")->c_str());
  }
  std::vector<int> positions;
  TUNECAST_RETURN_IF_ERROR(importer->positions(db.parameter_names(), path, &positions));
  size_t done = 0;
  for (const codegen::TimingProblem& p : db.problems()) {
    std::vector<codegen::TimingDb::Row> rows;  // every sample: a merge keeps re-measurements
    TUNECAST_RETURN_IF_ERROR(db.rows(p.config_id, &rows));
    for (const codegen::TimingDb::Row& row : rows) {
      TUNECAST_RETURN_IF_ERROR(
          importer->add(p.problem, reorder(row.values, positions), row.timing.ok, row.timing.time, row.timing.status));
    }
    if (++done % 200 == 0) std::fprintf(stderr, "import-timings: %s: %zu of %zu problems\n", path.c_str(), done, db.problems().size());
  }
  return Status::ok();
}

}  // namespace

Status import_kernel_tuner_file(const Model& model, const std::string& path, const std::string& problem_text_in,
                                const std::string& out) {
  codegen::RecordingInfo info;
  const char* solver = model.metadata("solver");
  info.kernel = solver ? solver : "";
  for (int p = 0; p < model.parameter_count(); ++p) info.params.push_back(model.parameter_name(p));
  const Columns columns = columns_of(model.problem_schema());
  info.fields = columns.names;
  info.integer_fields = columns.integer;
  codegen::TimingRecorder recorder;
  TUNECAST_RETURN_IF_ERROR(codegen::TimingRecorder::open(out, info, &recorder));
  TUNECAST_RETURN_IF_ERROR(recorder.begin_batch());
  Importer importer(model, &recorder);
  TUNECAST_RETURN_IF_ERROR(import_cache(path, model, problem_text_in, &importer));
  return recorder.commit_batch();
}

Status read_prior_configs(const Model& model, const std::string& paths, size_t limit, std::vector<std::vector<int64_t>>* out) {
  std::vector<std::string> files;
  TUNECAST_RETURN_IF_ERROR(parse_list(paths, "--prior", &files));
  std::vector<std::string> names;
  for (int p = 0; p < model.parameter_count(); ++p) names.push_back(model.parameter_name(p));
  const ProblemSchema schema = model.problem_schema();
  std::vector<codegen::ProblemTimings> recorded;  // every problem of every file, in the model's parameter order
  for (const std::string& file : files) {
    std::vector<codegen::ProblemTimings> timings;
    std::vector<std::string> recorded_names;
    if (codegen::is_timing_db_file(file)) {
      codegen::TimingDb db;
      TUNECAST_RETURN_IF_ERROR(codegen::TimingDb::open(file, "", &db, &schema));
      recorded_names = db.parameter_names();
      for (const codegen::TimingProblem& problem : db.problems()) {
        timings.emplace_back();
        TUNECAST_RETURN_IF_ERROR(db.timings(problem.config_id, &timings.back()));
      }
    } else {
      codegen::TuningCache cache;
      TUNECAST_RETURN_IF_ERROR(codegen::read_tuning_cache(file, &cache));
      recorded_names = cache.names;
      timings.push_back(std::move(cache.timings));
    }
    std::vector<int> positions;
    const Status mapped = codegen::map_parameters(names, recorded_names, &positions);
    if (!mapped) return Status::error(mapped.code(), "--prior %s: %s", file.c_str(), mapped.message());
    for (const codegen::ProblemTimings& t : timings) {
      codegen::ProblemTimings in_model_order;
      for (const std::vector<int64_t>& config : t.configs()) {
        if (config.size() != (positions.empty() ? names.size() : recorded_names.size())) continue;  // malformed row
        std::vector<int64_t> values(names.size());
        for (size_t p = 0; p < names.size(); ++p) values[p] = config[positions.empty() ? p : static_cast<size_t>(positions[p])];
        in_model_order.add(std::move(values), *t.find(config));
      }
      recorded.push_back(std::move(in_model_order));
    }
  }
  std::vector<const codegen::ProblemTimings*> problems;
  for (const codegen::ProblemTimings& t : recorded) problems.push_back(&t);
  *out = codegen::rank_recorded_configs(problems, limit);
  if (out->empty()) return Status::error(StatusCode::kNotFound, "--prior %s: no config that ran is recorded", paths.c_str());
  return Status::ok();
}

int cmd_import_timings(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"output", "problem", "solver"}, {});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast import-timings KERNEL.tcr INPUT... -o OUT.db [--problem FIELDS] [--solver NAME]\n\n"
        "Adds measurements to a timing DB keyed by the kernel definition's fields (tunecast-timings/2,\n"
        "docs/kernels.md; OUT.db is created, or extended: importing what it holds adds nothing). INPUTs:\n"
        "  *.csv           a header of field names, parameter names, time_us and optionally status;\n"
        "                  one measurement per row (empty time_us: a failure)\n"
        "  *.json[.gz]     Kernel Tuner's T4 results or cache file: one problem's measurements (ms,\n"
        "                  stored as us); --problem names the problem. One GPU's run each: a file\n"
        "                  whose times differ from its problem's is refused (docs/kernels.md)\n"
        "  a timing DB     another tunecast-timings/2 DB (a merge), or the MIOpen-keyed timing DB of\n"
        "                  docs/search.md (its kernel's definition: --solver when it holds several)\n"
        "Parameters are matched by name. The whole import is one transaction: a failure keeps nothing.\n");
    return 0;
  }
  if (!status) return usage_error("import-timings", status.message());
  if (args.positional().size() < 2 || !args.has("output")) {
    return usage_error("import-timings", "expected KERNEL.tcr, at least one INPUT and -o OUT.db");
  }
  const std::string out = args.get("output");
  status = prepare_output(out, args.positional(), true);
  if (!status) return fail(status);
  LoadedModel loaded;
  status = load_model_or_definition(args.positional()[0], &loaded);
  if (!status) return fail(status);
  const Model& model = loaded.model;
  const char* solver = model.metadata("solver");
  codegen::RecordingInfo info;
  info.kernel = solver ? solver : "";
  if (info.kernel.empty()) return fail(Status::error(StatusCode::kInvalidArgument, "%s names no kernel ('kernel NAME')", args.positional()[0].c_str()));
  for (int p = 0; p < model.parameter_count(); ++p) info.params.push_back(model.parameter_name(p));
  const Columns columns = columns_of(model.problem_schema());
  info.fields = columns.names;
  info.integer_fields = columns.integer;
  info.definition = loaded.definition_text;
  std::error_code error;
  const bool existed = std::filesystem::exists(out, error);
  size_t rows = 0, problems = 0, added = 0;
  {
    codegen::TimingRecorder recorder;
    status = codegen::TimingRecorder::open(out, info, &recorder);
    if (status) status = recorder.begin_batch();
    Importer importer(model, &recorder);
    for (size_t i = 1; i < args.positional().size() && status; ++i) {
      const std::string& input = args.positional()[i];
      importer.next_input();
      if (!std::filesystem::exists(input, error)) {
        status = Status::error(StatusCode::kNotFound, "cannot open '%s': no such file", input.c_str());
        break;
      }
      if (input.size() > 4 && input.compare(input.size() - 4, 4, ".csv") == 0) {
        status = import_csv(input, model, &importer);
      } else if (is_sqlite(input) || codegen::is_xz_file(input)) {
        status = import_db(input, model, args.get("solver"), &importer);
      } else {
        status = import_cache(input, model, args.get("problem"), &importer);
      }
    }
    if (status) status = recorder.commit_batch();
    rows = importer.rows();
    problems = importer.problems();
    added = importer.added();
  }  // a failed batch is rolled back as the recorder closes
  if (!status) {
    if (!existed) {  // nor is the DB this command created kept: it would be taken for a recording
      for (const char* suffix : {"", "-journal", "-wal", "-shm"}) std::filesystem::remove(out + suffix, error);
    }
    return fail(status);
  }
  std::fprintf(stderr, "import-timings: %s: %zu measurements of %zu problem%s read, %zu new\n", out.c_str(), rows, problems,
               problems == 1 ? "" : "s", added);
  return 0;
}

}  // namespace tunecast::cli
