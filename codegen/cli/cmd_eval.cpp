// eval: the paper's metrics, computed by the real runtime (constrained beam search) over every
// problem of a solver in a perf DB, next to the trivial baselines. This file holds the options and
// the order of the steps; the steps are in eval_problems.cpp, eval_loop.cpp and eval_output.cpp
// (eval.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "eval.h"
#include "tunecast/predict.h"

namespace tunecast::cli {
namespace eval {
namespace {

// Whether matplotlib (tools/plot_eval.py) can write `path` by its extension.
bool has_plot_extension(const std::string& path) {
  for (const char* ext : {".png", ".svg", ".pdf", ".PNG", ".SVG", ".PDF"}) {
    const size_t n = std::strlen(ext);
    if (path.size() > n && path.compare(path.size() - n, n, ext) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<int> parse_options(const std::vector<std::string>& argv, Options* out) {
  Args& args = out->args;
  Status status = args.parse(
      argv, {"perfdb", "solver", "precision", "beam", "split", "split-seed", "train-perfdb", "baselines-fit-on", "plot",
             "limit", "threads", "search-width", "candidates", "arch"},
      {"json", "no-baselines", "no-constraints"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast eval MODEL.tcm --perfdb DB [--solver S] [--precision P[,P...]]\n"
        "                     [--beam 1,10,30,50,100] [--split all|train|val|test] [--split-seed N]\n"
        "                     [--train-perfdb DB] [--baselines-fit-on train|train+val|all]\n"
        "                     [--search-width W] [--no-baselines] [--no-constraints]\n"
        "                     [--plot FILE.png] [--candidates FILE.jsonl] [--json] [--limit N]\n"
        "                     [--threads N] [--arch A]\n\n"
        "Runs the runtime's constrained beam search at each beam width over every problem of\n"
        "solver S (and the given precisions) in DB and reports the paper's metrics. S defaults to\n"
        "the model's metadata solver and must agree with it (another solver's rows, even with as\n"
        "many parameters, are not what the model predicts); a model without one needs --solver.\n"
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
        "e.g. when DB is an independent holdout), else taking DB for the model's own. Such\n"
        "figures are in-sample: the table's first line, the JSON (\"in_sample\": true,\n"
        "\"in_sample_problems\") and the plot's title say so, and no baselines are shown beside\n"
        "them (they never see the evaluated problems: \"baselines_omitted\" says why). A shipped\n"
        "refit (fit_on all) is in-sample on every split of its own DBs, --split test included.\n"
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
  if (args.positional().size() != 1 || !args.has("perfdb")) {
    return usage_error("eval", "expected MODEL and --perfdb DB");
  }
  std::vector<std::string> beam_texts;
  status = parse_list(args.get("beam", "1,10,30,50,100"), "--beam", &beam_texts);
  if (status) status = parse_list(args.get("precision", "FP32,FP16,BF16,INT8"), "--precision", &out->precisions);
  if (!status) return usage_error("eval", status.message());
  std::vector<int>& ks = out->ks;
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
  for (const std::string& p : out->precisions) {
    int64_t value;
    if (!find_problem_symbol(ProblemField::kDtype, p, &value)) {
      return usage_error("eval", "unknown precision '" + p + "' (FP32, FP16, BF16, INT8)");
    }
    if (!out->dtypes.insert(value).second) return usage_error("eval", "precision " + p + " is given twice");
  }
  out->split = args.get("split", "all");
  const std::string& split = out->split;
  if (split != "all" && split != "train" && split != "val" && split != "test") {
    return usage_error("eval", "--split must be all, train, val or test");
  }
  out->baselines_fit_on = args.get("baselines-fit-on", "train");
  out->baseline_splits = fit_splits(out->baselines_fit_on);
  if (out->baseline_splits.empty()) {
    return usage_error("eval", "--baselines-fit-on must be train, train+val or all");
  }
  out->threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  status = args.get_int("split-seed", 0, &out->seed);
  if (status) status = args.get_int("limit", 0, &out->limit);
  if (status) status = args.get_int("threads", out->threads, &out->threads);
  if (!status) return usage_error("eval", status.message());
  if (out->limit < 0) return usage_error("eval", "--limit must be 0 (every problem) or more");
  if (out->threads < 1) return usage_error("eval", "--threads must be at least 1");
  if (args.has("arch")) {
    int64_t value = 0;
    if (!find_problem_symbol(ProblemField::kArch, args.get("arch"), &value)) {
      return usage_error("eval", "unknown arch '" + args.get("arch") + "'");
    }
    out->arch = value;
  }
  if (args.has("plot") && !has_plot_extension(args.get("plot"))) {
    return usage_error("eval", "--plot " + args.get("plot") + ": the plot's name must end with .png, .svg or .pdf");
  }
  // Output files are checked before the work, so that a long evaluation is not lost to a typo.
  const std::vector<std::string> inputs = {args.positional()[0], args.get("perfdb"), args.get("train-perfdb")};
  for (const char* option : {"plot", "candidates"}) {
    if (args.has(option)) {
      status = prepare_output(args.get(option), inputs, false);
      if (status && std::string(option) == "plot") status = prepare_output(args.get(option) + ".json", inputs, false);
      if (!status) return fail(status);
    }
  }
  return std::nullopt;
}

}  // namespace eval

int cmd_eval(const std::vector<std::string>& argv) {
  eval::Options options;
  if (const std::optional<int> exit_code = eval::parse_options(argv, &options)) return *exit_code;
  const Args& args = options.args;

  LoadedModel loaded;
  Status status = load_model_file(args.positional()[0], &loaded);
  if (!status) return fail(status);
  const Model& model = loaded.model;
  if (!model.is_seq2seq() || model.root()->encoding() == nullptr) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "%s needs a feature encoding to be evaluated from a perf DB",
                              args.positional()[0].c_str()));
  }
  // The solver: the model's own (its metadata), which --solver may repeat but not contradict.
  const char* model_solver = model.metadata("solver");
  options.solver = args.get("solver", model_solver ? model_solver : "");
  if (options.solver.empty()) {
    return usage_error("eval", args.positional()[0] + " names no solver in its metadata: pass --solver S");
  }
  if (model_solver != nullptr && *model_solver != '\0' && options.solver != model_solver) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "--solver %s: %s predicts %s's parameters (its metadata solver); evaluate it on %s rows "
                              "(or leave --solver out)",
                              options.solver.c_str(), args.positional()[0].c_str(), model_solver, model_solver));
  }
  eval::Report report;
  report.has_constraints = model.root()->constraints() && model.root()->constraints()->size() > 0;
  status = model_search_width(model, &report.search_width);
  if (!status) return fail(status);
  status = args.get_int("search-width", report.search_width, &report.search_width);
  if (status) status = check_beam_width("search width", report.search_width);
  if (!status) return usage_error("eval", status.message());
  eval::ModelSplits splits;
  status = eval::model_splits(model, options, &splits);
  if (!status) return fail(status);
  report.in_sample_splits = splits.in_sample;

  eval::Problems problems;
  if (const std::optional<int> exit_code = eval::read_problems(options, model, &problems)) return *exit_code;
  report.in_sample = eval::note_in_sample(options, model, splits, problems);
  report.notes = eval::note_problems(model, problems.evaluated);

  std::vector<eval::ProblemResult> results;
  status = eval::predict_problems(options, model, report.search_width, report.has_constraints, problems.evaluated,
                                  &results);
  if (!status) return fail(status);
  if (args.has("candidates")) {
    status = eval::write_candidates(options, problems, results);
    if (!status) return fail(status);
  }
  eval::score_results(options, problems, results, &report);
  report.archs = eval::archs_of(problems.evaluated);
  report.baselines = eval::run_baselines(options, problems, report.archs, report.in_sample);

  const nlohmann::json json = eval::report_json(options, report);
  if (args.has("plot")) {
    status = eval::plot(options, json);
    if (!status) return fail(status);
  }
  if (args.has("json")) {
    std::printf("%s\n", json_text(json, 2).c_str());
    return 0;
  }
  eval::print_report(options, report);
  return 0;
}

}  // namespace tunecast::cli
