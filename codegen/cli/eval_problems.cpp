// eval's problems: the perf DB rows evaluated, which of them the model learned (by its metadata),
// and the notes on stderr that say so, or that the kernel does not apply, or that fields lie
// outside the model's training ranges.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "eval.h"
#include "tunecast/codegen/dataset_split.h"
#include "tunecast/predict.h"

namespace tunecast::cli::eval {
namespace {

template <typename Strings>
std::string joined_items(const Strings& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// Whether `list` (metadata such as "FP32,FP16" or "gfx900,gfx906") names `value`'s symbol.
bool metadata_lists(const char* list, ProblemField field, int64_t value) {
  const char* symbol = problem_symbol_name(field, value);
  if (list == nullptr || symbol == nullptr) return true;  // nothing recorded: assume it does
  const std::string text = std::string(",") + list + ",";
  return text.find(std::string(",") + symbol + ",") != std::string::npos;
}

// How many evaluated problems the model learned from, by its metadata: a problem of one of the
// `in_sample` splits, of a training precision and arch, and, when `learned_db` is given (the
// model's own perf DB, --train-perfdb), present there on the same arch; otherwise the evaluated DB
// is taken to be the model's own. Unknown (nullopt) when `learned_db` holds another arch than an
// evaluated problem's: the model may have learned that one from a DB not given.
std::optional<size_t> count_in_sample(const Model& model, const std::vector<PerfDbRow>& evaluated,
                                      const std::vector<std::string>& in_sample, int seed,
                                      const std::vector<PerfDbRow>* learned_db) {
  if (in_sample.empty()) return 0;
  const char* precisions = model.metadata("training_precisions");
  if (precisions == nullptr) precisions = model.metadata("precisions");
  const char* archs = model.metadata("arch");
  auto learned = [&](const Problem& p) {
    const std::string split = codegen::split_name(codegen::split_of(p, seed));
    return std::find(in_sample.begin(), in_sample.end(), split) != in_sample.end() &&
           metadata_lists(precisions, ProblemField::kDtype, p.get(ProblemField::kDtype)) &&
           (!p.has(ProblemField::kArch) || metadata_lists(archs, ProblemField::kArch, p.get(ProblemField::kArch)));
  };
  if (learned_db == nullptr) {
    return static_cast<size_t>(std::count_if(evaluated.begin(), evaluated.end(),
                                             [&](const PerfDbRow& r) { return learned(r.problem); }));
  }
  std::set<int64_t> db_archs;  // the archs --train-perfdb's file name gives (none: unknown)
  std::set<std::string> in_db;
  for (const PerfDbRow& r : *learned_db) {
    if (r.problem.has(ProblemField::kArch)) db_archs.insert(r.problem.get(ProblemField::kArch));
    if (learned(r.problem)) in_db.insert(perf_db_descriptor(r.problem));
  }
  size_t count = 0;
  for (const PerfDbRow& r : evaluated) {
    // The same shape tuned on another GPU is another problem: the DB cannot speak for this one.
    if (r.problem.has(ProblemField::kArch) && !db_archs.empty() &&
        !db_archs.count(r.problem.get(ProblemField::kArch))) {
      return std::nullopt;
    }
    count += in_db.count(perf_db_descriptor(r.problem));
  }
  return count;
}

}  // namespace

std::set<std::string> fit_splits(const std::string& fit_on) {
  if (fit_on == "train") return {"train"};
  if (fit_on == "train+val") return {"train", "val"};
  if (fit_on == "all") return {"train", "val", "test"};
  return {};
}

std::string joined(const std::set<std::string>& items) { return joined_items(items); }
std::string joined(const std::vector<std::string>& items) { return joined_items(items); }

Status model_splits(const Model& model, const Options& options, ModelSplits* out) {
  // Splits of the model's training data the evaluated problems may fall in, by the model's own
  // metadata (none known for imported models): a refit on all of our split has no held-out
  // problems left. Problems are placed in the model's splits with the model's split seed: an
  // evaluation drawn with another seed mixes them, so every learned split may be among them.
  out->fit_on = model.metadata("fit_on");
  out->seed = options.seed;
  out->in_sample.clear();
  if (const char* text = out->fit_on ? model.metadata("split_seed") : nullptr) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < INT_MIN || value > INT_MAX) {
      return Status::error(StatusCode::kInvalidArgument, "%s: metadata split_seed '%s' is not an integer",
                           options.args.positional()[0].c_str(), text);
    }
    out->seed = static_cast<int>(value);
  }
  if (out->fit_on) {
    const std::set<std::string> learned = fit_splits(out->fit_on);
    for (const char* s : {"train", "val", "test"}) {
      if (learned.count(s) && (options.split == "all" || options.split == s || out->seed != options.seed)) {
        out->in_sample.push_back(s);
      }
    }
  }
  return Status::ok();
}

std::optional<int> read_problems(const Options& options, const Model& model, Problems* out) {
  const Args& args = options.args;
  auto read_rows = [&](const std::string& path, std::vector<PerfDbRow>* rows) -> Status {
    std::vector<PerfDbRow> all;
    TUNECAST_RETURN_IF_ERROR(read_perf_db(path, options.solver, PerfDbFilter(), &all));
    rows->clear();
    for (PerfDbRow& r : all) {
      if (options.dtypes.count(r.problem.get(ProblemField::kDtype))) rows->push_back(std::move(r));
    }
    // Training order is config order, as in tools/tunecast_train/data.py: baseline ties (first
    // occurrence, nearest by training order) then break the same way in both.
    std::stable_sort(rows->begin(), rows->end(), [](const PerfDbRow& a, const PerfDbRow& b) {
      return a.config_id < b.config_id;
    });
    return Status::ok();
  };
  std::vector<PerfDbRow>& rows = out->rows;  // train_rows: --train-perfdb's, read before the work too
  Status status = read_rows(args.get("perfdb"), &rows);
  for (size_t i = 0; status && options.arch && i < rows.size(); ++i) {
    Problem& problem = rows[i].problem;
    if (problem.has(ProblemField::kArch) && problem.get(ProblemField::kArch) != *options.arch) {
      return usage_error("eval", "--arch " + args.get("arch") + " disagrees with the arch " +
                                     problem_symbol_name(ProblemField::kArch, problem.get(ProblemField::kArch)) +
                                     " that the file name " + args.get("perfdb") + " gives");
    }
    problem.set(ProblemField::kArch, *options.arch);
  }
  if (status && args.has("train-perfdb")) {
    status = read_rows(args.get("train-perfdb"), &out->train_rows);
  }
  if (!status) return fail(status);
  std::vector<PerfDbRow>& evaluated = out->evaluated;
  for (PerfDbRow& r : rows) {
    if (options.split != "all" && options.split != codegen::split_name(codegen::split_of(r.problem, options.seed))) {
      continue;
    }
    if (r.params.size() != static_cast<size_t>(model.parameter_count())) {
      return fail(Status::error(StatusCode::kInvalidArgument,
                                "row %lld has %zu parameters, the model predicts %d (wrong solver?)",
                                static_cast<long long>(r.config_id), r.params.size(),
                                model.parameter_count()));
    }
    out->evaluated_descriptors.insert(perf_db_descriptor(r.problem));
    evaluated.push_back(r);
    if (options.limit > 0 && static_cast<int>(evaluated.size()) >= options.limit) break;
  }
  const uint32_t arch_bit = 1u << static_cast<int>(ProblemField::kArch);
  if ((model.required_fields() & arch_bit) && !evaluated.empty() &&
      !evaluated.front().problem.has(ProblemField::kArch)) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "the arch of %s's problems is unknown and %s reads it: MIOpen names perf DBs "
                              "by arch (gfx906_60.db); rename the file or pass --arch",
                              args.get("perfdb").c_str(), args.positional()[0].c_str()));
  }
  if (evaluated.empty()) {
    const std::string which = options.split == "all" ? "" : " in split " + options.split;
    return fail(Status::error(StatusCode::kNotFound, "%s holds no rows of solver %s%s for precision%s %s",
                              args.get("perfdb").c_str(), options.solver.c_str(), which.c_str(),
                              options.precisions.size() == 1 ? "" : "s", joined(options.precisions).c_str()));
  }
  return std::nullopt;
}

InSample note_in_sample(const Options& options, const Model& model, const ModelSplits& splits,
                        const Problems& problems) {
  const Args& args = options.args;
  const std::vector<std::string>& in_sample = splits.in_sample;
  const std::vector<PerfDbRow>& evaluated = problems.evaluated;
  InSample result;
  result.known = count_in_sample(model, evaluated, in_sample, splits.seed,
                                 args.has("train-perfdb") ? &problems.train_rows : nullptr);
  result.count = result.known.value_or(0);
  const size_t in_sample_count = result.count;
  if (!in_sample.empty() && !result.known) {
    std::fprintf(stderr,
                 "eval: note: %s holds another arch than the evaluated problems of %s: which of them %s "
                 "learned from (fit_on %s) is unknown (pass its own DB of their arch as --train-perfdb)\n",
                 args.get("train-perfdb").c_str(), args.get("perfdb").c_str(), args.positional()[0].c_str(),
                 splits.fit_on);
  } else if (!in_sample.empty()) {
    const std::string names = joined(in_sample);
    const std::string model_path = args.positional()[0];
    const std::string what = in_sample_count == 0 ? "none of them is in-sample"
                             : in_sample_count == evaluated.size() ? "every figure is in-sample"
                                                                   : "the figures over them are in-sample";
    if (args.has("train-perfdb")) {
      std::fprintf(stderr,
                   "eval: note: %zu of %zu evaluated problems are problems of %s (same key) that %s "
                   "learned from (its fit_on %s: the %s problems of split seed %d): %s\n",
                   in_sample_count, evaluated.size(), args.get("train-perfdb").c_str(), model_path.c_str(),
                   splits.fit_on, names.c_str(), splits.seed,
                   in_sample_count == 0 ? "every figure is out-of-sample" : what.c_str());
    } else {
      std::fprintf(stderr,
                   "eval: note: if %s is a perf DB %s learned from, %zu of %zu evaluated problems are among "
                   "the %s problems it learned (fit_on %s, split seed %d): %s; for another DB (an "
                   "independent holdout) pass the model's own DB of that arch as --train-perfdb to count "
                   "exactly\n",
                   args.get("perfdb").c_str(), model_path.c_str(), in_sample_count, evaluated.size(),
                   names.c_str(), splits.fit_on, splits.seed, what.c_str());
    }
    if (splits.seed != options.seed && options.split != "all") {  // every problem is evaluated with --split all
      std::fprintf(stderr,
                   "eval: note: this evaluation's split seed %d is not the model's (%d): its %s problems "
                   "are a mix of the model's splits, and were placed in them with the model's seed to count "
                   "those it learned\n",
                   options.seed, splits.seed, options.split.c_str());
    }
  }
  return result;
}

ProblemNotes note_problems(const Model& model, const std::vector<PerfDbRow>& evaluated) {
  // Problems the kernel's applicability conditions exclude (perf DBs keep older tunings, e.g.
  // gfx900's WrW3x3 stride-2 rows): scored like the rest, counted so the figures can be read.
  // Problems with fields outside the model's training ranges (extrapolations), likewise.
  ProblemNotes notes;
  std::vector<float> features(model.root()->encoding()
                                  ? size_t{model.root()->encoding()->rows()} * model.root()->encoding()->cols()
                                  : 0);
  for (const PerfDbRow& r : evaluated) {
    int condition = -1;
    if (!check_applicability(model, r.problem, &condition)) {
      ++notes.inapplicable;
      ++notes.inapplicable_by_condition[applicability_text(model, condition)];
    }
    uint32_t fields = 0;
    if (!features.empty() && encode_problem(model, r.problem, features.data(), features.size(), &fields) &&
        fields != 0) {
      ++notes.out_of_range;
      for (const std::string& field : field_names(fields)) ++notes.out_of_range_by_field[field];
    }
  }
  if (notes.inapplicable > 0) {
    std::string which;
    for (const auto& [condition, count] : notes.inapplicable_by_condition) {
      which += (which.empty() ? "" : ", ") + std::string("`") + condition + "`: " + std::to_string(count);
    }
    std::fprintf(stderr,
                 "eval: note: %zu of %zu evaluated problems fail the model's applicability conditions (by "
                 "first failing condition, %s): MIOpen would not run the kernel there today; they are "
                 "scored like the rest\n",
                 notes.inapplicable, evaluated.size(), which.c_str());
  }
  if (notes.out_of_range > 0) {
    std::string which;
    for (const auto& [field, count] : notes.out_of_range_by_field) {
      which += (which.empty() ? "" : ", ") + field + ": " + std::to_string(count);
    }
    std::fprintf(stderr,
                 "eval: note: %zu of %zu evaluated problems have fields outside the model's training ranges "
                 "(%s): the predictions there are extrapolations\n",
                 notes.out_of_range, evaluated.size(), which.c_str());
  }
  return notes;
}

}  // namespace tunecast::cli::eval
