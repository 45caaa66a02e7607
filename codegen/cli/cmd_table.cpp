// table: build-time default parameters. Every problem of a list is predicted on every core (one
// Model shared read-only, one scratch per thread); the results become a C++ include, a MIOpen
// perf DB or text (table_formats.cpp), written atomically.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "table.h"
#include "tunecast/codegen/cpp_emitter.h"
#include "tunecast/codegen/problem_forms.h"
#include "tunecast/predict.h"

namespace tunecast::cli {
namespace {

using table::Row;

// One problem per line in any form codegen::parse_problem_any reads; lines in MIOpen's forms
// (driver command lines, perf-DB keys, network configs) are converted, and one note says so.
Status read_problems(const Model& model, const std::string& path, std::vector<Row>* rows) {
  size_t converted = 0;
  std::string first_converted;
  TUNECAST_RETURN_IF_ERROR(for_each_list_line(path, [&](int number, const std::string& line) -> Status {
    Row row;
    row.line = number;
    codegen::ProblemForm form = codegen::ProblemForm::kFields;
    const Status status = model.problem_schema().builtin() ? codegen::parse_problem_any(line, &row.problem, &form)
                                                           : parse_model_problem(model, line, &row.problem);
    if (!status) {
      return Status::error(StatusCode::kInvalidArgument, "%s:%d: %s", path.c_str(), number,
                           status.message());
    }
    row.text = problem_text(model, row.problem);
    if (form != codegen::ProblemForm::kFields && converted++ == 0) {
      first_converted = path + ":" + std::to_string(number) + " (a " + codegen::problem_form_name(form) +
                        ") reads as \"" + row.text + "\"";
    }
    rows->push_back(std::move(row));
    return Status::ok();
  }));
  if (rows->empty()) {
    return Status::error(StatusCode::kInvalidArgument, "%s holds no problems", path.c_str());
  }
  if (converted > 0) {
    std::fprintf(stderr,
                 "table: note: %zu line%s in MIOpen's forms, converted to fields (c and k of dir=B and W "
                 "name dy's channels: c = the forward K); %s\n",
                 converted, converted == 1 ? " is" : "s are", first_converted.c_str());
  }
  return Status::ok();
}

// Predicts every row on `threads` threads, with progress on stderr.
void predict_all(const Model& model, const PredictOptions& options, int threads,
                 std::vector<Row>* rows) {
  predict_in_parallel(model, options.beam_width, rows->size(), threads, "table", false,
                      [&](size_t i, PredictBuffers& buffers) {
                        Row& row = (*rows)[i];
                        PredictInfo info;
                        row.status = predict(model, row.problem, options, buffers.scratch.data(),
                                             buffers.scratch.size(), buffers.out.data(),
                                             options.beam_width, &info);
                        if (row.status) row.best = buffers.out[0];
                        row.out_of_range_fields = info.out_of_range_fields;
                        row.not_applicable = info.not_applicable;
                      });
}

// A perf DB holds one arch (MIOpen keeps gfx900_56.db, gfx906_60.db, ...): its key has no arch
// column, so problems of two archs (or with and without one) would overwrite each other's rows.
Status check_one_arch(const std::string& path, const std::vector<Row>& rows) {
  auto arch = [](const Row& r) {
    const char* name = r.problem.has(ProblemField::kArch)
                           ? problem_symbol_name(ProblemField::kArch, r.problem.get(ProblemField::kArch))
                           : "no arch";
    return std::string(name ? name : "?");
  };
  for (const Row& row : rows) {
    if (arch(row) != arch(rows.front())) {
      return Status::error(StatusCode::kInvalidArgument,
                           "a perf DB holds one arch, and its key has no arch column: %s:%d is %s, %s:%d "
                           "is %s (write one table per arch)",
                           path.c_str(), rows.front().line, arch(rows.front()).c_str(), path.c_str(), row.line,
                           arch(row).c_str());
    }
  }
  return Status::ok();
}

// "FILE:LINE detail; ..." for the first three rows `flagged` picks (then "; ..."), and how many
// it picks: the body of one warning per kind of problem.
template <typename Flagged, typename Detail>
std::string flagged_lines(const std::string& path, const std::vector<Row>& rows, Flagged flagged, Detail detail,
                          size_t* count) {
  std::string lines;
  *count = 0;
  for (const Row& row : rows) {
    if (!flagged(row) || ++*count > 3) continue;
    lines += (lines.empty() ? "" : "; ") + path + ":" + std::to_string(row.line) + " " + detail(row);
  }
  return lines + (*count > 3 ? "; ..." : "");
}

// One warning each for the problems with no candidate (and why), with fields outside the ranges
// the model was trained on (extrapolations), and that the kernel does not apply to (its rules'
// `applies`, with the condition each fails).
void warn_rows(const Model& model, const std::string& path, const std::vector<Row>& rows, const std::string& format) {
  size_t count = 0;
  std::string lines = flagged_lines(
      path, rows, [](const Row& r) { return !r.status; },
      [](const Row& r) { return std::string(r.status.message()); }, &count);
  if (count > 0) {
    std::fprintf(stderr, "tunecast: warning: no candidate for %zu of %zu problems (%s)\n", count, rows.size(),
                 lines.c_str());
  }
  lines = flagged_lines(
      path, rows, [](const Row& r) { return r.out_of_range_fields != 0; },
      [&model](const Row& r) {
        std::string fields;
        for (const std::string& f : field_names(r.out_of_range_fields, model.problem_schema())) fields += (fields.empty() ? "" : ",") + f;
        return fields;
      },
      &count);
  if (count > 0) {
    std::fprintf(stderr,
                 "tunecast: warning: %zu of %zu problems have fields outside the range seen in training "
                 "(%s); their predictions are extrapolations\n",
                 count, rows.size(), lines.c_str());
  }
  lines = flagged_lines(
      path, rows, [](const Row& r) { return r.not_applicable >= 0; },
      [&](const Row& r) { return "`" + std::string(applicability_text(model, r.not_applicable)) + "`"; }, &count);
  if (count > 0) {
    const char* solver = model.metadata("solver");
    std::fprintf(stderr,
                 "tunecast: warning: %s does not apply to %zu of %zu problems (%s): the kernel does not "
                 "run there (its `applies` rules); %s\n",
                 solver ? solver : "the kernel", count, rows.size(), lines.c_str(),
                 format == "perfdb" ? "they are left out of the perf DB"
                 : format == "cpp"  ? "their rows say applicable = false"
                                    : "their lines end in '# not applicable'");
  }
}

}  // namespace

int cmd_table(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"problems", "beam", "output", "format", "threads", "namespace", "solver"}, {});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast table MODEL.tcm --problems FILE -o OUT [--beam K] [--format cpp|perfdb|text]\n"
        "                      [--threads N] [--namespace NS] [--solver NAME]\n\n"
        "Predicts the best parameter vector of every problem in FILE (one problem per line, '#'\n"
        "starts a comment) on every core, and writes OUT atomically (-o - : stdout; its folder is\n"
        "created; OUT may not be the model or FILE). A line is a problem in any form `tunecast\n"
        "predict --problem` reads: fields, a MIOpenDriver command line, a perf-DB key or a network\n"
        "config (followed by name=value items such as arch=gfx906); MIOpen's forms are converted\n"
        "and a note shows the first. In fields, for dir=F c and k are the input and output\n"
        "channels and h x w the input; for dir=B and W they describe dy as MIOpen's perf DB does:\n"
        "c = the forward K, k = the forward C, h x w = the forward output. The best is the first\n"
        "candidate of a beam of width K (default: the model's metadata search_width, else 1:\n"
        "greedy). Formats:\n"
        "  cpp     a C++ include: NS::kDefaultParameters[], a constexpr array of {problem, found,\n"
        "          applicable, values} (default; NS defaults to tunecast_table); applicable is false\n"
        "          where the kernel's rules (`applies`) exclude the problem\n"
        "  perfdb  a MIOpen perf DB (SQLite, tables config and perf_db with MIOpen's columns); the\n"
        "          solver name is the model's metadata \"solver\" unless --solver is given; problems\n"
        "          without a valid candidate or that the kernel does not apply to are left out; a\n"
        "          field beyond the DB's 32-bit columns is refused; one arch per file (MIOpen's key\n"
        "          has none); an existing OUT is merged into (its other rows kept); binary:\n"
        "          -o - only into a pipe or file\n"
        "  text    one line per problem: the problem, a tab, the values (or '# reason'), and\n"
        "          '\\t# not applicable: CONDITION' where the kernel does not apply\n"
        "Results go to OUT; progress, the closing status line and one warning each (naming the\n"
        "first few lines) for problems with no candidate, with fields outside the model's training\n"
        "ranges (extrapolations) and that the kernel does not apply to go to stderr. Nothing to\n"
        "write (no problem with a candidate, or none left for the perf DB) is an error (exit 1).\n");
    return 0;
  }
  if (!status) return usage_error("table", status.message());
  if (args.positional().size() != 1 || !args.has("problems") || !args.has("output")) {
    return usage_error("table", "expected one MODEL, --problems FILE and -o OUT");
  }
  PredictOptions options;
  int threads = 0;
  status = args.get_int("threads", static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), &threads);
  if (!status) return usage_error("table", status.message());
  if (threads < 1) return usage_error("table", "--threads must be at least 1");
  const std::string format = args.get("format", "cpp");
  if (format != "cpp" && format != "perfdb" && format != "text") {
    return usage_error("table", "--format must be cpp, perfdb or text");
  }
  const std::string name_space = args.get("namespace", "tunecast_table");
  if (!codegen::is_cpp_namespace(name_space)) {
    return usage_error("table", "--namespace '" + name_space + "' is not a C++ namespace name (a::b)");
  }
  // Before the work, not after it: never the model or the problem list, and a binary DB not to a terminal.
  status = prepare_output(args.get("output"), {args.positional()[0], args.get("problems")}, format == "perfdb");
  if (status && format == "perfdb") status = table::check_perf_db_output(args.get("output"));
  if (!status) return fail(status);

  LoadedModel loaded;
  status = load_model_file(args.positional()[0], &loaded);
  if (!status) return fail(status);
  const Model& model = loaded.model;
  if (!model.is_seq2seq() || model.root()->encoding() == nullptr) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "%s cannot predict from problems (it needs a sequence-to-sequence "
                              "network and a feature encoding: a trained model, not a kernel definition)",
                              args.positional()[0].c_str()));
  }
  int model_width = 1;
  status = model_search_width(model, &model_width);
  if (!status) return fail(status);
  status = args.get_int("beam", model_width, &options.beam_width);
  if (status) status = check_beam_width("beam width", options.beam_width);
  if (!status) return usage_error("table", status.message());
  std::string solver = args.get("solver");
  if (format == "perfdb" && solver.empty()) {
    const char* from_model = model.metadata("solver");
    if (from_model == nullptr || *from_model == '\0') {
      return fail(Status::error(StatusCode::kInvalidArgument,
                                "the model names no solver (metadata \"solver\"); pass --solver"));
    }
    solver = from_model;
  }
  if (format == "perfdb" && !model.problem_schema().builtin()) {
    return usage_error("table", "--format perfdb writes MIOpen's convolution columns; this kernel's problem is its own "
                                "(use cpp, whose Key struct has its fields, or text)");
  }
  std::vector<Row> rows;
  status = read_problems(model, args.get("problems"), &rows);
  if (status && format == "perfdb") status = check_one_arch(args.get("problems"), rows);
  if (status && format == "perfdb") status = table::check_perf_db_fields(args.get("problems"), rows);
  if (!status) return fail(status);
  threads = std::min<int>(threads, static_cast<int>(rows.size()));
  predict_all(model, options, threads, &rows);
  warn_rows(model, args.get("problems"), rows, format);

  size_t found = 0, usable = 0;  // with a candidate; and one the kernel applies to
  for (const Row& row : rows) {
    found += row.status.is_ok();
    usable += row.status.is_ok() && row.not_applicable < 0;
  }
  // Nothing a library could use: an error, not an empty table.
  const size_t kept = format == "perfdb" ? usable : found;
  if (kept == 0) {
    const Row* first = &rows.front();
    for (const Row& row : rows) {
      if (!row.status) {
        first = &row;
        break;
      }
    }
    const std::string why = !first->status ? first->status.message()
                                           : "`" + std::string(applicability_text(model, first->not_applicable)) +
                                                 "` fails (the kernel does not apply)";
    return fail(Status::error(StatusCode::kNotFound,
                              "nothing to write: none of the %zu problems of %s has a valid candidate%s (%s:%d: %s)",
                              rows.size(), args.get("problems").c_str(),
                              format == "perfdb" ? " that the kernel applies to" : "", args.get("problems").c_str(),
                              first->line, why.c_str()));
  }
  std::string contents;
  if (format == "cpp") {
    contents = table::cpp_table(model, args.positional()[0], options.beam_width, name_space, rows);
  } else if (format == "text") {
    contents = table::text_table(model, rows);
  } else {
    size_t written = 0, held = 0;
    status = table::perf_db_bytes(solver, rows, args.get("output"), &contents, &written, &held);
    if (!status) return fail(status);
    if (written < usable) {
      std::fprintf(stderr, "tunecast: warning: %zu problem line%s an earlier problem: %zu row%s written\n",
                   usable - written, usable - written == 1 ? " repeats" : "s repeat", written, written == 1 ? "" : "s");
    }
    if (held > written) {
      std::fprintf(stderr, "table: merged into %s: %zu rows written, %zu in the file\n", args.get("output").c_str(),
                   written, held);
    }
  }
  status = write_output(args.get("output"), contents);
  if (!status) return fail(status);
  std::fprintf(stderr, "table: wrote %s (%zu problems, %zu with a valid candidate, %zu of them applicable, %s)\n",
               output_name(args.get("output")).c_str(), rows.size(), found, usable, format.c_str());
  return 0;
}

}  // namespace tunecast::cli
