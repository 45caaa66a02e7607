// eval: the paper's metrics, computed by the real runtime (constrained beam search) over every
// problem of a solver in a perf DB, next to the trivial baselines.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "cli.h"
#include "tunecast/codegen/baselines.h"
#include "tunecast/codegen/dataset_split.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/predict.h"

namespace tunecast::cli {
namespace {

using codegen::ParamVector;

Status parse_list(const std::string& text, const char* what, std::vector<std::string>* out) {
  out->clear();
  for (size_t start = 0;;) {
    const size_t end = text.find(',', start);
    out->push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (out->back().empty()) {
      return Status::error(StatusCode::kInvalidArgument, "%s '%s' has an empty item", what, text.c_str());
    }
    if (end == std::string::npos) return Status::ok();
    start = end + 1;
  }
}

// The splits a model (metadata "fit_on", tools/train.py --fit-on) or a baseline learns from;
// empty for an unknown name.
std::set<std::string> fit_splits(const std::string& fit_on) {
  if (fit_on == "train") return {"train"};
  if (fit_on == "train+val") return {"train", "val"};
  if (fit_on == "all") return {"train", "val", "test"};
  return {};
}

// Whether matplotlib (tools/plot_eval.py) can write `path` by its extension.
bool has_plot_extension(const std::string& path) {
  for (const char* ext : {".png", ".svg", ".pdf", ".PNG", ".SVG", ".PDF"}) {
    const size_t n = std::strlen(ext);
    if (path.size() > n && path.compare(path.size() - n, n, ext) == 0) return true;
  }
  return false;
}

// `text` as one word for /bin/sh: in single quotes, each ' written as '\''.
std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// "a, b, c".
template <typename Strings>
std::string joined(const Strings& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// The archs (symbols) of `rows`' problems; rows of a DB named without one give none.
template <typename Rows, typename ProblemOf>
std::set<std::string> archs_of(const Rows& rows, ProblemOf problem_of) {
  std::set<std::string> archs;
  for (const auto& row : rows) {
    const Problem& p = problem_of(row);
    if (p.has(ProblemField::kArch)) archs.insert(problem_symbol_name(ProblemField::kArch, p.get(ProblemField::kArch)));
  }
  return archs;
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

// Per-k metrics over a set of problems.
struct Scores {
  std::vector<int> ks;
  std::vector<double> perfect;   // fraction of problems whose tuned vector is among the first k
  std::vector<double> average;   // mean per-parameter accuracy of the best-matching of the first k
  std::vector<double> top1;      // fraction whose first (most probable) of the k candidates is it
  int n = 0;

  explicit Scores(std::vector<int> k_list)
      : ks(std::move(k_list)), perfect(ks.size(), 0.0), average(ks.size(), 0.0), top1(ks.size(), 0.0) {}

  // `candidates_for(i)` gives the candidate list used for k = ks[i].
  template <typename CandidatesFor>
  void add(const ParamVector& target, CandidatesFor candidates_for) {
    ++n;
    for (size_t i = 0; i < ks.size(); ++i) {
      const std::vector<ParamVector>& cands = candidates_for(i);
      const size_t limit = std::min(cands.size(), static_cast<size_t>(ks[i]));
      double best = 0.0;
      bool hit = false;
      for (size_t c = 0; c < limit; ++c) {
        size_t same = 0;
        for (size_t p = 0; p < target.size() && p < cands[c].size(); ++p) same += cands[c][p] == target[p];
        best = std::max(best, static_cast<double>(same) / target.size());
        hit = hit || cands[c] == target;
      }
      perfect[i] += hit;
      average[i] += best;
      top1[i] += limit > 0 && cands[0] == target;
    }
  }
  // One of the sums above at ks[i], as a percentage of the problems.
  double percent(const std::vector<double>& sums, size_t i) const { return n ? 100.0 * sums[i] / n : 0.0; }
  nlohmann::json to_json(const std::vector<double>& sums) const {
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < ks.size(); ++i) j[std::to_string(ks[i])] = percent(sums, i);
    return j;
  }
};

struct ProblemResult {
  std::vector<std::vector<ParamVector>> candidates;  // per k
  std::vector<float> scores;                         // log-probabilities of the last k's candidates
  std::vector<bool> cut_short;  // per k: fewer than k candidates, and the beam had dropped some
  int64_t returned = 0;
  int64_t invalid = 0;
  int64_t removed = 0;
  bool failed = false;
  std::string error;
};

void print_row(const char* label, const Scores& s, const std::string& extra) {
  std::printf("%-16s", label);
  for (size_t i = 0; i < s.ks.size(); ++i) std::printf(" %7.1f", s.percent(s.perfect, i));
  std::printf("   %6.1f %s\n", s.percent(s.average, 0), extra.c_str());
}

}  // namespace

int cmd_eval(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(
      argv, {"perfdb", "solver", "precision", "beam", "split", "split-seed", "train-perfdb", "baselines-fit-on", "plot",
             "limit", "threads", "search-width", "candidates", "arch"},
      {"json", "no-baselines", "no-constraints"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast eval MODEL.tcm --perfdb DB --solver S [--precision P[,P...]]\n"
        "                     [--beam 1,10,30,50,100] [--split all|train|val|test] [--split-seed N]\n"
        "                     [--train-perfdb DB] [--baselines-fit-on train|train+val|all]\n"
        "                     [--search-width W] [--no-baselines] [--no-constraints]\n"
        "                     [--plot FILE.png] [--candidates FILE.jsonl] [--json] [--limit N]\n"
        "                     [--threads N] [--arch A]\n\n"
        "Runs the runtime's constrained beam search at each beam width over every problem of\n"
        "solver S (and the given precisions) in DB and reports the paper's metrics:\n"
        "  perfect@k  share of problems whose tuned vector is among the k candidates (beam k)\n"
        "  average@k  mean per-parameter accuracy of the best-matching of the k candidates\n"
        "             (k = 1: plain per-parameter accuracy)\n"
        "  top1@k     share of problems whose first (most probable) candidate of beam k is the\n"
        "             tuned vector: what a library gets by running beam k and keeping one\n"
        "  invalid    share of returned candidates that break the model's constraints, checked\n"
        "             on the whole vector independently of the search\n"
        "  cut short  share of problems with fewer than k candidates although the beam dropped\n"
        "             hypotheses (others died at later positions; a wider search may find more)\n"
        "Baselines on the same problems: the k most frequent training vectors, and the distinct\n"
        "vectors of the nearest training problems (docs/training.md). Training rows come from the\n"
        "train split (tools/tunecast_train/data.py) of --train-perfdb (default: --perfdb), minus\n"
        "every evaluated problem; --baselines-fit-on train+val adds the val split, to compare with\n"
        "a model refit on train + val (tools/train.py --fit-on train+val), and all adds test too\n"
        "(a model refit on all of it, scored on problems from elsewhere, e.g. a holdout DB with\n"
        "--train-perfdb). --split picks the evaluated problems (default all). When the model's\n"
        "metadata says it learned from splits being evaluated (fit_on), a note counts the\n"
        "evaluated problems it learned from: exactly with --train-perfdb (the model's own DB,\n"
        "e.g. when DB is an independent holdout), else taking DB for the model's own.\n"
        "--precision: FP32, FP16, BF16, INT8, comma-separated (default: all four).\n"
        "The problems' arch comes from DB's file name, as MIOpen names perf DBs (gfx906_60.db);\n"
        "--arch A gives it for a DB named otherwise (it must agree with the name's, if any).\n"
        "--plot FILE.png (or .svg, .pdf) also writes FILE.png.json and draws perfect@k with\n"
        "/usr/bin/python3 tools/plot_eval.py (needs python3-matplotlib).\n"
        "--search-width W: each k takes the first k candidates of a beam of max(k, W), so k = 1\n"
        "is the best of a W-wide search instead of the greedy one (default: the model's metadata\n"
        "search_width, else 1, the paper's protocol; --search-width 1 forces it).\n"
        "--json prints {\"n\", \"perfect\", \"average\", \"top1\", \"cut_short\", \"invalid_rate\",\n"
        "\"baselines\", \"search_width\", \"in_sample_problems\", \"in_sample_basis\",\n"
        "\"not_applicable_problems\", \"not_applicable_by_condition\", \"out_of_range_problems\",\n"
        "\"out_of_range_by_field\", ...}.\n"
        "Problems that fail the model's applicability conditions (its rules' `applies`: MIOpen\n"
        "would not run the kernel there today, e.g. gfx900's ConvAsmBwdWrW3x3 stride-2 rows) and\n"
        "problems with fields outside its training ranges are scored like the rest; notes count\n"
        "them.\n"
        "--candidates FILE.jsonl writes one JSON object per evaluated problem, in DB config order:\n"
        "{\"config_id\", \"problem\" (the DB's descriptor), \"problem_args\" (the same for tunecast predict\n"
        "--problem), \"split\", \"tuned\", \"rank\" (1-based place of\n"
        "the tuned vector among the candidates, 0 if absent), \"candidates\": [{\"values\", \"score\"}]}\n"
        "with the candidates of the last --beam width, best first: where a model fails, problem\n"
        "by problem.\n"
        "--limit N evaluates only the first N problems in DB config order (default 0: all).\n"
        "--threads N predicts on N threads (default: every core; never more than problems).\n");
    return 0;
  }
  if (!status) return usage_error("eval", status.message());
  if (args.positional().size() != 1 || !args.has("perfdb") || !args.has("solver")) {
    return usage_error("eval", "expected MODEL, --perfdb DB and --solver S");
  }
  std::vector<std::string> beam_texts, precisions;
  status = parse_list(args.get("beam", "1,10,30,50,100"), "--beam", &beam_texts);
  if (status) status = parse_list(args.get("precision", "FP32,FP16,BF16,INT8"), "--precision", &precisions);
  if (!status) return usage_error("eval", status.message());
  std::vector<int> ks;
  for (const std::string& t : beam_texts) {
    char* end = nullptr;
    const long k = std::strtol(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '\0') return usage_error("eval", "beam width '" + t + "' is not a number");
    if (k < 1 || k > kMaxBeamWidth) {
      return usage_error("eval", "beam width '" + t + "' is outside 1.." + std::to_string(kMaxBeamWidth));
    }
    if (std::find(ks.begin(), ks.end(), k) != ks.end()) {
      return usage_error("eval", "beam width " + std::to_string(k) + " is given twice");
    }
    ks.push_back(static_cast<int>(k));
  }
  std::set<int64_t> dtypes;
  for (const std::string& p : precisions) {
    int64_t value;
    if (!find_problem_symbol(ProblemField::kDtype, p, &value)) {
      return usage_error("eval", "unknown precision '" + p + "' (FP32, FP16, BF16, INT8)");
    }
    if (!dtypes.insert(value).second) return usage_error("eval", "precision " + p + " is given twice");
  }
  const std::string split = args.get("split", "all");
  if (split != "all" && split != "train" && split != "val" && split != "test") {
    return usage_error("eval", "--split must be all, train, val or test");
  }
  const std::string baselines_fit_on = args.get("baselines-fit-on", "train");
  const std::set<std::string> baseline_splits = fit_splits(baselines_fit_on);
  if (baseline_splits.empty()) {
    return usage_error("eval", "--baselines-fit-on must be train, train+val or all");
  }
  int seed = 0, limit = 0, threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  status = args.get_int("split-seed", 0, &seed);
  if (status) status = args.get_int("limit", 0, &limit);
  if (status) status = args.get_int("threads", threads, &threads);
  if (!status) return usage_error("eval", status.message());
  if (limit < 0) return usage_error("eval", "--limit must be 0 (every problem) or more");
  if (threads < 1) return usage_error("eval", "--threads must be at least 1");
  std::optional<int64_t> arch;
  if (args.has("arch")) {
    int64_t value = 0;
    if (!find_problem_symbol(ProblemField::kArch, args.get("arch"), &value)) {
      return usage_error("eval", "unknown arch '" + args.get("arch") + "'");
    }
    arch = value;
  }
  if (args.has("plot") && !has_plot_extension(args.get("plot"))) {
    return usage_error("eval", "--plot " + args.get("plot") + ": the plot's name must end with .png, .svg or .pdf");
  }
  // Output files are checked before the work, so that a long evaluation is not lost to a typo.
  for (const char* option : {"plot", "candidates"}) {
    if (args.has(option)) {
      status = codegen::check_output_path(args.get(option));
      if (!status) return fail(status);
    }
  }

  LoadedModel loaded;
  status = load_model_file(args.positional()[0], &loaded);
  if (!status) return fail(status);
  const Model& model = loaded.model;
  if (!model.is_seq2seq() || model.root()->encoding() == nullptr) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "%s needs a feature encoding to be evaluated from a perf DB",
                              args.positional()[0].c_str()));
  }
  const bool has_constraints = model.root()->constraints() && model.root()->constraints()->size() > 0;
  int search_width = 1;
  status = model_search_width(model, &search_width);
  if (!status) return fail(status);
  status = args.get_int("search-width", search_width, &search_width);
  if (status) status = check_beam_width("search width", search_width);
  if (!status) return usage_error("eval", status.message());
  // Splits of the model's training data the evaluated problems may fall in, by the model's own
  // metadata (none known for imported models): a refit on all of our split has no held-out
  // problems left. Problems are placed in the model's splits with the model's split seed: an
  // evaluation drawn with another seed mixes them, so every learned split may be among them.
  std::vector<std::string> in_sample;
  const char* model_fit_on = model.metadata("fit_on");
  int model_seed = seed;
  if (const char* text = model_fit_on ? model.metadata("split_seed") : nullptr) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < INT_MIN || value > INT_MAX) {
      return fail(Status::error(StatusCode::kInvalidArgument, "%s: metadata split_seed '%s' is not an integer",
                                args.positional()[0].c_str(), text));
    }
    model_seed = static_cast<int>(value);
  }
  if (model_fit_on) {
    const std::set<std::string> learned = fit_splits(model_fit_on);
    for (const char* s : {"train", "val", "test"}) {
      if (learned.count(s) && (split == "all" || split == s || model_seed != seed)) in_sample.push_back(s);
    }
  }

  auto read_rows = [&](const std::string& path, std::vector<PerfDbRow>* rows) -> Status {
    std::vector<PerfDbRow> all;
    TUNECAST_RETURN_IF_ERROR(read_perf_db(path, args.get("solver"), PerfDbFilter(), &all));
    rows->clear();
    for (PerfDbRow& r : all) {
      if (dtypes.count(r.problem.get(ProblemField::kDtype))) rows->push_back(std::move(r));
    }
    // Training order is config order, as in tools/tunecast_train/data.py: baseline ties (first
    // occurrence, nearest by training order) then break the same way in both.
    std::stable_sort(rows->begin(), rows->end(), [](const PerfDbRow& a, const PerfDbRow& b) {
      return a.config_id < b.config_id;
    });
    return Status::ok();
  };
  std::vector<PerfDbRow> rows, train_rows;  // train_rows: --train-perfdb's, read before the work too
  status = read_rows(args.get("perfdb"), &rows);
  for (size_t i = 0; status && arch && i < rows.size(); ++i) {
    Problem& problem = rows[i].problem;
    if (problem.has(ProblemField::kArch) && problem.get(ProblemField::kArch) != *arch) {
      return usage_error("eval", "--arch " + args.get("arch") + " disagrees with the arch " +
                                     problem_symbol_name(ProblemField::kArch, problem.get(ProblemField::kArch)) +
                                     " that the file name " + args.get("perfdb") + " gives");
    }
    problem.set(ProblemField::kArch, *arch);
  }
  if (status && args.has("train-perfdb")) {
    status = read_rows(args.get("train-perfdb"), &train_rows);
  }
  if (!status) return fail(status);
  std::vector<PerfDbRow> evaluated;
  std::set<std::string> evaluated_descriptors;
  for (PerfDbRow& r : rows) {
    if (split != "all" && split != codegen::split_name(codegen::split_of(r.problem, seed))) continue;
    if (r.params.size() != static_cast<size_t>(model.parameter_count())) {
      return fail(Status::error(StatusCode::kInvalidArgument,
                                "row %lld has %zu parameters, the model predicts %d (wrong solver?)",
                                static_cast<long long>(r.config_id), r.params.size(),
                                model.parameter_count()));
    }
    evaluated_descriptors.insert(perf_db_descriptor(r.problem));
    evaluated.push_back(r);
    if (limit > 0 && static_cast<int>(evaluated.size()) >= limit) break;
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
    const char* model_solver = model.metadata("solver");
    const std::string hint = model_solver ? std::string(" (the model predicts ") + model_solver + ")" : "";
    return fail(Status::error(StatusCode::kNotFound, "no %s rows of %s in %s for those precisions%s",
                              split.c_str(), args.get("solver").c_str(), args.get("perfdb").c_str(),
                              hint.c_str()));
  }

  const std::optional<size_t> in_sample_known = count_in_sample(model, evaluated, in_sample, model_seed,
                                                                args.has("train-perfdb") ? &train_rows : nullptr);
  const size_t in_sample_count = in_sample_known.value_or(0);
  if (!in_sample.empty() && !in_sample_known) {
    std::fprintf(stderr,
                 "eval: note: %s holds another arch than the evaluated problems of %s: which of them %s "
                 "learned from (fit_on %s) is unknown (pass its own DB of their arch as --train-perfdb)\n",
                 args.get("train-perfdb").c_str(), args.get("perfdb").c_str(), args.positional()[0].c_str(),
                 model_fit_on);
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
                   model_fit_on, names.c_str(), model_seed,
                   in_sample_count == 0 ? "every figure is out-of-sample" : what.c_str());
    } else {
      std::fprintf(stderr,
                   "eval: note: if %s is a perf DB %s learned from, %zu of %zu evaluated problems are among "
                   "the %s problems it learned (fit_on %s, split seed %d): %s; for another DB (an "
                   "independent holdout) pass the model's own DB of that arch as --train-perfdb to count "
                   "exactly\n",
                   args.get("perfdb").c_str(), model_path.c_str(), in_sample_count, evaluated.size(),
                   names.c_str(), model_fit_on, model_seed, what.c_str());
    }
    if (model_seed != seed && split != "all") {  // every problem is evaluated with --split all
      std::fprintf(stderr,
                   "eval: note: this evaluation's split seed %d is not the model's (%d): its %s problems "
                   "are a mix of the model's splits, and were placed in them with the model's seed to count "
                   "those it learned\n",
                   seed, model_seed, split.c_str());
    }
  }

  // Problems the kernel's applicability conditions exclude (perf DBs keep older tunings, e.g.
  // gfx900's WrW3x3 stride-2 rows): scored like the rest, counted so the figures can be read.
  // Problems with fields outside the model's training ranges (extrapolations), likewise.
  std::map<std::string, size_t> inapplicable_by_condition;  // first failing condition -> problems
  std::map<std::string, size_t> out_of_range_by_field;
  size_t inapplicable = 0, out_of_range = 0;
  std::vector<float> features(model.root()->encoding()
                                  ? size_t{model.root()->encoding()->rows()} * model.root()->encoding()->cols()
                                  : 0);
  for (const PerfDbRow& r : evaluated) {
    int condition = -1;
    if (!check_applicability(model, r.problem, &condition)) {
      ++inapplicable;
      ++inapplicable_by_condition[applicability_text(model, condition)];
    }
    uint32_t fields = 0;
    if (!features.empty() && encode_problem(model, r.problem, features.data(), features.size(), &fields) &&
        fields != 0) {
      ++out_of_range;
      for (const std::string& field : field_names(fields)) ++out_of_range_by_field[field];
    }
  }
  if (inapplicable > 0) {
    std::string which;
    for (const auto& [condition, count] : inapplicable_by_condition) {
      which += (which.empty() ? "" : ", ") + std::string("`") + condition + "`: " + std::to_string(count);
    }
    std::fprintf(stderr,
                 "eval: note: %zu of %zu evaluated problems fail the model's applicability conditions (by "
                 "first failing condition, %s): MIOpen would not run the kernel there today; they are "
                 "scored like the rest\n",
                 inapplicable, evaluated.size(), which.c_str());
  }
  if (out_of_range > 0) {
    std::string which;
    for (const auto& [field, count] : out_of_range_by_field) {
      which += (which.empty() ? "" : ", ") + field + ": " + std::to_string(count);
    }
    std::fprintf(stderr,
                 "eval: note: %zu of %zu evaluated problems have fields outside the model's training ranges "
                 "(%s): the predictions there are extrapolations\n",
                 out_of_range, evaluated.size(), which.c_str());
  }

  // Runtime predictions, problems spread over threads. Each k takes the first k candidates of a
  // beam of max(k, search width): the ks that share a width share one search, run once with room
  // for the largest of them (the output capacity only cuts the list).
  const int max_k = *std::max_element(ks.begin(), ks.end());
  std::map<int, int> capacity_of_width;
  for (int k : ks) {
    int& capacity = capacity_of_width[std::max(k, search_width)];
    capacity = std::max(capacity, k);
  }
  std::vector<ProblemResult> results(evaluated.size());
  predict_in_parallel(model, std::max(max_k, search_width), evaluated.size(), threads, "eval", args.has("json"),
                      [&](size_t i, PredictBuffers& buffers) {
    ProblemResult& r = results[i];
    const Candidate* out = buffers.out.data();
    int held_width = 0;  // the search whose candidates buffers.out holds
    PredictInfo info;
    for (int k : ks) {
      const int width = std::max(k, search_width);
      if (width != held_width) {
        PredictOptions options;
        options.beam_width = width;
        options.use_model_constraints = !args.has("no-constraints");
        info = PredictInfo();
        const Status s = predict(model, evaluated[i].problem, options, buffers.scratch.data(),
                                 buffers.scratch.size(), buffers.out.data(), capacity_of_width.at(width), &info);
        if (!s && s.code() != StatusCode::kNoValidCandidate) {
          r.failed = true;
          r.error = s.message();
          return;
        }
        held_width = width;
      }
      r.candidates.emplace_back();
      r.cut_short.push_back(info.candidates < k && info.beam_pruned);
      r.scores.clear();
      r.removed += info.rejected_by_constraints;
      for (int c = 0; c < std::min(k, info.candidates); ++c) {
        r.candidates.back().emplace_back(out[c].values, out[c].values + out[c].length);
        r.scores.push_back(out[c].score);
        ++r.returned;
        if (has_constraints &&
            !check_candidate(model, evaluated[i].problem, out[c].values, out[c].length, nullptr)) {
          ++r.invalid;
        }
      }
    }
  });
  for (const ProblemResult& r : results) {
    if (r.failed) return fail(Status::error(StatusCode::kInvalidArgument, "prediction failed: %s", r.error.c_str()));
  }

  if (args.has("candidates")) {
    std::string lines;
    for (size_t i = 0; i < evaluated.size(); ++i) {
      const std::vector<ParamVector>& cands = results[i].candidates.back();
      const auto hit = std::find(cands.begin(), cands.end(), evaluated[i].params);
      char problem_args[512];  // the --problem form, to replay a problem with `tunecast predict`
      format_problem(evaluated[i].problem, problem_args, sizeof problem_args);
      nlohmann::json line = {
          {"config_id", evaluated[i].config_id},
          {"problem", perf_db_descriptor(evaluated[i].problem)},
          {"problem_args", problem_args},
          {"split", codegen::split_name(codegen::split_of(evaluated[i].problem, seed))},
          {"tuned", evaluated[i].params},
          {"rank", hit == cands.end() ? 0 : hit - cands.begin() + 1},
          {"candidates", nlohmann::json::array()}};
      for (size_t c = 0; c < cands.size(); ++c) {
        line["candidates"].push_back({{"values", cands[c]}, {"score", results[i].scores[c]}});
      }
      lines += json_text(line) + "\n";
    }
    status = codegen::write_file_atomic(args.get("candidates"), lines);
    if (!status) return fail(status);
  }

  Scores model_scores(ks);
  std::vector<double> cut_short(ks.size(), 0.0);
  int64_t returned = 0, invalid = 0, removed = 0;
  for (size_t i = 0; i < evaluated.size(); ++i) {
    for (size_t k = 0; k < ks.size(); ++k) cut_short[k] += results[i].cut_short[k];
    model_scores.add(evaluated[i].params, [&](size_t k_index) -> const std::vector<ParamVector>& {
      return results[i].candidates[k_index];
    });
    returned += results[i].returned;
    invalid += results[i].invalid;
    removed += results[i].removed;
  }

  nlohmann::json j;
  j["model"] = args.positional()[0];
  j["perfdb"] = args.get("perfdb");
  // The evaluated problems' archs: the file name's or --arch.
  const std::set<std::string> archs = archs_of(evaluated, [](const PerfDbRow& r) -> const Problem& { return r.problem; });
  j["archs"] = archs;
  j["solver"] = args.get("solver");
  j["precisions"] = precisions;
  j["split"] = split;
  j["search_width"] = search_width;
  j["n"] = model_scores.n;
  j["perfect"] = model_scores.to_json(model_scores.perfect);
  j["average"] = model_scores.to_json(model_scores.average);
  j["top1"] = model_scores.to_json(model_scores.top1);
  j["cut_short"] = model_scores.to_json(cut_short);
  j["invalid_rate"] = has_constraints && returned ? static_cast<double>(invalid) / returned : 0.0;
  j["constraints_checked"] = has_constraints;
  j["removed_by_constraints"] = removed;
  j["in_sample_splits"] = in_sample;
  j["in_sample_problems"] = in_sample_known ? nlohmann::json(in_sample_count) : nlohmann::json(nullptr);
  j["in_sample_basis"] = in_sample.empty() ? "none"  // the model's metadata claims no evaluated split
                         : !in_sample_known          ? "unknown"
                         : args.has("train-perfdb")  ? "train_perfdb"
                                                     : "evaluated_db_assumed_own";
  j["not_applicable_problems"] = inapplicable;
  j["not_applicable_by_condition"] = inapplicable_by_condition;
  j["out_of_range_problems"] = out_of_range;
  j["out_of_range_by_field"] = out_of_range_by_field;

  Scores frequent_scores(ks), nearest_scores(ks);
  const bool baselines = !args.has("no-baselines");
  size_t train_count = 0;
  if (baselines) {
    const std::vector<PerfDbRow>& source = args.has("train-perfdb") ? train_rows : rows;
    std::vector<Problem> train_problems;
    std::vector<ParamVector> train_params;
    for (const PerfDbRow& r : source) {
      if (!baseline_splits.count(codegen::split_name(codegen::split_of(r.problem, seed)))) continue;
      if (evaluated_descriptors.count(perf_db_descriptor(r.problem))) continue;
      train_problems.push_back(r.problem);
      train_params.push_back(r.params);
    }
    train_count = train_problems.size();
    const std::set<std::string> train_archs = archs_of(train_problems, [](const Problem& p) -> const Problem& { return p; });
    if (!train_archs.empty() && !archs.empty() && train_archs != archs) {
      std::fprintf(stderr,
                   "eval: note: the baselines learn from %s tunings (%s), the evaluated problems are %s: "
                   "they answer with another GPU's vectors\n",
                   joined(train_archs).c_str(), args.get("train-perfdb").c_str(), joined(archs).c_str());
    }
    if (train_count == 0) {
      std::fprintf(stderr,
                   "eval: note: no baselines: no %s rows of %s are left once the evaluated problems are "
                   "set aside (%s)\n",
                   baselines_fit_on.c_str(), (args.has("train-perfdb") ? args.get("train-perfdb") : args.get("perfdb")).c_str(),
                   args.has("train-perfdb") ? "another --train-perfdb or --baselines-fit-on"
                                            : "evaluate --split test, or pass --train-perfdb");
    }
    if (train_count > 0) {
      const std::vector<ParamVector> frequent = codegen::most_frequent(train_params);
      const codegen::NearestNeighbours nearest(train_problems, train_params);
      for (const PerfDbRow& r : evaluated) {
        frequent_scores.add(r.params, [&](size_t) -> const std::vector<ParamVector>& { return frequent; });
        const std::vector<ParamVector> near = nearest.query(r.problem, static_cast<size_t>(max_k));
        nearest_scores.add(r.params, [&](size_t) -> const std::vector<ParamVector>& { return near; });
      }
      j["baselines"] = {
          {"train_rows", train_count},
          {"fit_on", baselines_fit_on},
          {"most_frequent",
           {{"perfect", frequent_scores.to_json(frequent_scores.perfect)},
            {"average", frequent_scores.to_json(frequent_scores.average)}}},
          {"nearest",
           {{"perfect", nearest_scores.to_json(nearest_scores.perfect)},
            {"average", nearest_scores.to_json(nearest_scores.average)}}}};
    }
  }

  if (args.has("plot")) {
    const std::string json_path = args.get("plot") + ".json";
    status = codegen::write_file_atomic(json_path, json_text(j, 2));
    if (!status) return fail(status);
    const std::string command = "/usr/bin/python3 " + shell_quoted(TUNECAST_TOOLS_DIR "/plot_eval.py") + " " +
                                shell_quoted(json_path) + " " + shell_quoted(args.get("plot"));
    if (std::system(command.c_str()) != 0) {
      return fail(Status::error(StatusCode::kIoError,
                                "plotting failed (the results are in %s; plot_eval.py said why above): %s",
                                json_path.c_str(), command.c_str()));
    }
  }

  if (args.has("json")) {
    std::printf("%s\n", json_text(j, 2).c_str());
    return 0;
  }
  std::printf("%s on %s: %s %s, split %s, %d problems\n", args.positional()[0].c_str(),
              args.get("perfdb").c_str(), args.get("solver").c_str(), args.get("precision", "all").c_str(),
              split.c_str(), model_scores.n);
  if (search_width > 1) {
    std::printf("search width %d%s: k candidates are the first k of a beam of max(k, %d)\n", search_width,
                args.has("search-width") ? "" : " (the model's metadata search_width)", search_width);
  }
  std::printf("%-16s", "perfect@k (%)");
  for (int k : ks) std::printf(" %7d", k);
  std::printf("   avg@%d\n", ks[0]);
  char extra[128];
  std::snprintf(extra, sizeof extra, "invalid %.4f%%, constraints removed %lld expansions",
                has_constraints && returned ? 100.0 * invalid / returned : 0.0, static_cast<long long>(removed));
  print_row("tunecast", model_scores, has_constraints ? extra : "(model has no constraints)");
  std::printf("%-16s", "  top1 of beam k");
  for (size_t i = 0; i < ks.size(); ++i) {
    std::printf(" %7.1f", model_scores.percent(model_scores.top1, i));
  }
  std::printf("\n");
  if (*std::max_element(cut_short.begin(), cut_short.end()) > 0) {
    std::printf("%-16s", "  cut short");
    for (size_t i = 0; i < ks.size(); ++i) std::printf(" %7.1f", model_scores.percent(cut_short, i));
    std::printf("   (fewer than k candidates while the beam dropped hypotheses)\n");
  }
  if (baselines && train_count > 0) {
    print_row("most frequent", frequent_scores, "");
    print_row("nearest", nearest_scores,
              "(" + std::to_string(train_count) + " rows of " + baselines_fit_on + ")");
  }
  if (args.has("plot")) std::printf("plot: %s\n", args.get("plot").c_str());
  return 0;
}

}  // namespace tunecast::cli
