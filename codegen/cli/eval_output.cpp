// eval's outputs: the per-problem candidates file, the JSON report (--json, and the plot's input),
// the plot (tools/plot_eval.py) and the text table.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "eval.h"
#include "tunecast/codegen/dataset_split.h"

namespace tunecast::cli::eval {
namespace {

// `text` as one word for /bin/sh: in single quotes, each ' written as '\''.
std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void print_row(const char* label, const Scores& s, const std::string& extra) {
  std::printf("%-16s", label);
  for (size_t i = 0; i < s.ks.size(); ++i) std::printf(" %7.1f", s.percent(s.perfect, i));
  std::printf("   %6.1f %s\n", s.percent(s.average, 0), extra.c_str());
}

}  // namespace

Status write_candidates(const Options& options, const Problems& problems,
                        const std::vector<ProblemResult>& results) {
  const std::vector<PerfDbRow>& evaluated = problems.evaluated;
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
        {"split", codegen::split_name(codegen::split_of(evaluated[i].problem, options.seed))},
        {"tuned", evaluated[i].params},
        {"rank", hit == cands.end() ? 0 : hit - cands.begin() + 1},
        {"candidates", nlohmann::json::array()}};
    for (size_t c = 0; c < cands.size(); ++c) {
      line["candidates"].push_back({{"values", cands[c]}, {"score", results[i].scores[c]}});
    }
    lines += json_text(line) + "\n";
  }
  return write_output(options.args.get("candidates"), lines);
}

nlohmann::json report_json(const Options& options, const Report& report) {
  const Args& args = options.args;
  const Scores& model_scores = report.model;
  nlohmann::json j;
  j["model"] = args.positional()[0];
  j["perfdb"] = args.get("perfdb");
  // The evaluated problems' archs: the file name's or --arch.
  j["archs"] = report.archs;
  j["solver"] = options.solver;
  j["precisions"] = options.precisions;
  j["split"] = options.split;
  j["search_width"] = report.search_width;
  j["n"] = model_scores.n;
  j["perfect"] = model_scores.to_json(model_scores.perfect);
  j["average"] = model_scores.to_json(model_scores.average);
  j["top1"] = model_scores.to_json(model_scores.top1);
  j["cut_short"] = model_scores.to_json(report.cut_short);
  j["invalid_rate"] =
      report.has_constraints && report.returned ? static_cast<double>(report.invalid) / report.returned : 0.0;
  j["constraints_checked"] = report.has_constraints;
  j["removed_by_constraints"] = report.removed;
  j["in_sample_splits"] = report.in_sample_splits;
  // Whether the figures are in-sample (the model learned some evaluated problems): null when the
  // model learned from an evaluated split and which problems is unknown.
  j["in_sample"] = report.in_sample_splits.empty() ? nlohmann::json(false)
                   : report.in_sample.known        ? nlohmann::json(report.in_sample.count > 0)
                                                   : nlohmann::json(nullptr);
  j["in_sample_problems"] = report.in_sample.known ? nlohmann::json(report.in_sample.count) : nlohmann::json(nullptr);
  j["in_sample_basis"] = report.in_sample_splits.empty() ? "none"  // the model's metadata claims no evaluated split
                         : !report.in_sample.known          ? "unknown"
                         : args.has("train-perfdb")         ? "train_perfdb"
                                                            : "evaluated_db_assumed_own";
  j["not_applicable_problems"] = report.notes.inapplicable;
  j["not_applicable_by_condition"] = report.notes.inapplicable_by_condition;
  j["out_of_range_problems"] = report.notes.out_of_range;
  j["out_of_range_by_field"] = report.notes.out_of_range_by_field;
  const Baselines& b = report.baselines;
  if (!b.omitted.empty()) j["baselines_omitted"] = b.omitted;
  if (b.ran && b.train_count > 0) {
    j["baselines"] = {
        {"train_rows", b.train_count},
        {"fit_on", options.baselines_fit_on},
        {"most_frequent",
         {{"perfect", b.frequent.to_json(b.frequent.perfect)}, {"average", b.frequent.to_json(b.frequent.average)}}},
        {"nearest",
         {{"perfect", b.nearest.to_json(b.nearest.perfect)}, {"average", b.nearest.to_json(b.nearest.average)}}}};
  }
  return j;
}

Status plot(const Options& options, const nlohmann::json& report) {
  const std::string json_path = options.args.get("plot") + ".json";
  TUNECAST_RETURN_IF_ERROR(codegen::write_file_atomic(json_path, json_text(report, 2)));
  const std::string command = "/usr/bin/python3 " + shell_quoted(tool_script("plot_eval.py")) + " " +
                              shell_quoted(json_path) + " " + shell_quoted(options.args.get("plot"));
  if (std::system(command.c_str()) != 0) {
    return Status::error(StatusCode::kIoError,
                         "plotting failed (the results are in %s; plot_eval.py said why above): %s",
                         json_path.c_str(), command.c_str());
  }
  return Status::ok();
}

void print_report(const Options& options, const Report& report) {
  const Args& args = options.args;
  const Scores& model_scores = report.model;
  const std::vector<int>& ks = options.ks;
  std::printf("%s on %s: %s %s, split %s, %d problems\n", args.positional()[0].c_str(),
              args.get("perfdb").c_str(), options.solver.c_str(), args.get("precision", "all").c_str(),
              options.split.c_str(), model_scores.n);
  if (!report.in_sample_splits.empty() && report.in_sample.any()) {
    if (report.in_sample.known) {
      std::printf("IN-SAMPLE: the model learned %zu of these %d problems (it was fitted on the evaluated %s): "
                  "the figures measure recall, not accuracy on new problems\n",
                  report.in_sample.count, model_scores.n, joined(report.in_sample_splits).c_str());
    } else {
      std::printf("IN-SAMPLE (maybe): the model learned from the evaluated splits (%s) and which of these problems "
                  "it saw is unknown\n",
                  joined(report.in_sample_splits).c_str());
    }
  }
  if (report.search_width > 1) {
    std::printf("search width %d%s: k candidates are the first k of a beam of max(k, %d)\n", report.search_width,
                args.has("search-width") ? "" : " (the model's metadata search_width)", report.search_width);
  }
  std::printf("%-16s", "perfect@k (%)");
  for (int k : ks) std::printf(" %7d", k);
  std::printf("   avg@%d\n", ks[0]);
  char extra[128];
  std::snprintf(extra, sizeof extra, "invalid %.4f%%, constraints removed %lld expansions",
                report.has_constraints && report.returned ? 100.0 * report.invalid / report.returned : 0.0,
                static_cast<long long>(report.removed));
  print_row("tunecast", model_scores, report.has_constraints ? extra : "(model has no constraints)");
  std::printf("%-16s", "  top1 of beam k");
  for (size_t i = 0; i < ks.size(); ++i) {
    std::printf(" %7.1f", model_scores.percent(model_scores.top1, i));
  }
  std::printf("\n");
  if (*std::max_element(report.cut_short.begin(), report.cut_short.end()) > 0) {
    std::printf("%-16s", "  cut short");
    for (size_t i = 0; i < ks.size(); ++i) std::printf(" %7.1f", model_scores.percent(report.cut_short, i));
    std::printf("   (fewer than k candidates while the beam dropped hypotheses)\n");
  }
  const Baselines& b = report.baselines;
  if (!b.omitted.empty()) std::printf("baselines: not shown: %s\n", b.omitted.c_str());
  if (b.ran && b.train_count > 0) {
    print_row("most frequent", b.frequent, "");
    print_row("nearest", b.nearest,
              "(" + std::to_string(b.train_count) + " rows of " + options.baselines_fit_on + ")");
  }
  if (args.has("plot")) {  // status, not a result: stderr
    std::fprintf(stderr, "eval: wrote %s (its figures: %s.json)\n", args.get("plot").c_str(), args.get("plot").c_str());
  }
}

}  // namespace tunecast::cli::eval
