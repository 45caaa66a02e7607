// eval's loop: the runtime's predictions over the evaluated problems, their scores, and the
// baselines' on the same problems.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "eval.h"
#include "tunecast/codegen/baselines.h"
#include "tunecast/codegen/dataset_split.h"
#include "tunecast/predict.h"

namespace tunecast::cli::eval {
namespace {

// The archs (symbols) of `rows`' problems; rows of a DB named without one give none.
template <typename Rows, typename ProblemOf>
std::set<std::string> archs_of_rows(const Rows& rows, ProblemOf problem_of) {
  std::set<std::string> archs;
  for (const auto& row : rows) {
    const Problem& p = problem_of(row);
    if (p.has(ProblemField::kArch)) archs.insert(problem_symbol_name(ProblemField::kArch, p.get(ProblemField::kArch)));
  }
  return archs;
}

}  // namespace

std::set<std::string> archs_of(const std::vector<PerfDbRow>& rows) {
  return archs_of_rows(rows, [](const PerfDbRow& r) -> const Problem& { return r.problem; });
}

nlohmann::json Scores::to_json(const std::vector<double>& sums) const {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < ks.size(); ++i) j[std::to_string(ks[i])] = percent(sums, i);
  return j;
}

Status predict_problems(const Options& options, const Model& model, int search_width, bool has_constraints,
                        const std::vector<PerfDbRow>& evaluated, std::vector<ProblemResult>* out) {
  // Runtime predictions, problems spread over threads. Each k takes the first k candidates of a
  // beam of max(k, search width): the ks that share a width share one search, run once with room
  // for the largest of them (the output capacity only cuts the list).
  const std::vector<int>& ks = options.ks;
  const int max_k = *std::max_element(ks.begin(), ks.end());
  std::map<int, int> capacity_of_width;
  for (int k : ks) {
    int& capacity = capacity_of_width[std::max(k, search_width)];
    capacity = std::max(capacity, k);
  }
  const bool use_constraints = !options.args.has("no-constraints");
  std::vector<ProblemResult>& results = *out;
  results.assign(evaluated.size(), ProblemResult());
  predict_in_parallel(model, std::max(max_k, search_width), evaluated.size(), options.threads, "eval",
                      options.args.has("json"), [&](size_t i, PredictBuffers& buffers) {
    ProblemResult& r = results[i];
    const Candidate* candidates = buffers.out.data();
    int held_width = 0;  // the search whose candidates buffers.out holds
    PredictInfo info;
    for (int k : ks) {
      const int width = std::max(k, search_width);
      if (width != held_width) {
        PredictOptions predict_options;
        predict_options.beam_width = width;
        predict_options.use_model_constraints = use_constraints;
        info = PredictInfo();
        const Status s = predict(model, evaluated[i].problem, predict_options, buffers.scratch.data(),
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
        r.candidates.back().emplace_back(candidates[c].values, candidates[c].values + candidates[c].length);
        r.scores.push_back(candidates[c].score);
        ++r.returned;
        if (has_constraints &&
            !check_candidate(model, evaluated[i].problem, candidates[c].values, candidates[c].length, nullptr)) {
          ++r.invalid;
        }
      }
    }
  });
  for (const ProblemResult& r : results) {
    if (r.failed) return Status::error(StatusCode::kInvalidArgument, "prediction failed: %s", r.error.c_str());
  }
  return Status::ok();
}

void score_results(const Options& options, const Problems& problems, const std::vector<ProblemResult>& results,
                   Report* report) {
  const std::vector<PerfDbRow>& evaluated = problems.evaluated;
  const std::vector<int>& ks = options.ks;
  report->model = Scores(ks);
  report->cut_short.assign(ks.size(), 0.0);
  for (size_t i = 0; i < evaluated.size(); ++i) {
    for (size_t k = 0; k < ks.size(); ++k) report->cut_short[k] += results[i].cut_short[k];
    report->model.add(evaluated[i].params, [&](size_t k_index) -> const std::vector<ParamVector>& {
      return results[i].candidates[k_index];
    });
    report->returned += results[i].returned;
    report->invalid += results[i].invalid;
    report->removed += results[i].removed;
  }
}

Baselines run_baselines(const Options& options, const Problems& problems, const std::set<std::string>& archs,
                        const InSample& in_sample) {
  const Args& args = options.args;
  const std::vector<int>& ks = options.ks;
  Baselines b;
  b.frequent = Scores(ks);
  b.nearest = Scores(ks);
  b.ran = !args.has("no-baselines");
  if (!b.ran) return b;
  if (in_sample.any()) {
    // The baselines never see the evaluated problems; a model that learned them is not compared
    // with them on equal terms (fit on them too, nearest neighbour would be trivially perfect).
    b.ran = false;
    b.omitted = in_sample.known
                    ? std::to_string(in_sample.count) + " of the " + std::to_string(problems.evaluated.size()) +
                          " evaluated problems are in-sample for the model, and the baselines never see them; "
                          "evaluate held-out problems (--split test of a model fit on train or train+val, or an "
                          "independent DB with the model's own as --train-perfdb) to compare"
                    : "which evaluated problems the model learned is unknown";
    std::fprintf(stderr, "eval: note: no baselines beside these figures: %s\n", b.omitted.c_str());
    return b;
  }
  const std::vector<PerfDbRow>& source = args.has("train-perfdb") ? problems.train_rows : problems.rows;
  std::vector<Problem> train_problems;
  std::vector<ParamVector> train_params;
  for (const PerfDbRow& r : source) {
    if (!options.baseline_splits.count(codegen::split_name(codegen::split_of(r.problem, options.seed)))) continue;
    if (problems.evaluated_descriptors.count(perf_db_descriptor(r.problem))) continue;
    train_problems.push_back(r.problem);
    train_params.push_back(r.params);
  }
  b.train_count = train_problems.size();
  const std::set<std::string> train_archs =
      archs_of_rows(train_problems, [](const Problem& p) -> const Problem& { return p; });
  if (!train_archs.empty() && !archs.empty() && train_archs != archs) {
    std::fprintf(stderr,
                 "eval: note: the baselines learn from %s tunings (%s), the evaluated problems are %s: "
                 "they answer with another GPU's vectors\n",
                 joined(train_archs).c_str(), args.get("train-perfdb").c_str(), joined(archs).c_str());
  }
  if (b.train_count == 0) {
    std::fprintf(stderr,
                 "eval: note: no baselines: no %s rows of %s are left once the evaluated problems are "
                 "set aside (%s)\n",
                 options.baselines_fit_on.c_str(),
                 (args.has("train-perfdb") ? args.get("train-perfdb") : args.get("perfdb")).c_str(),
                 args.has("train-perfdb") ? "another --train-perfdb or --baselines-fit-on"
                                          : "evaluate --split test, or pass --train-perfdb");
    return b;
  }
  const int max_k = *std::max_element(ks.begin(), ks.end());
  const std::vector<ParamVector> frequent = codegen::most_frequent(train_params);
  const codegen::NearestNeighbours nearest(train_problems, train_params);
  for (const PerfDbRow& r : problems.evaluated) {
    b.frequent.add(r.params, [&](size_t) -> const std::vector<ParamVector>& { return frequent; });
    const std::vector<ParamVector> near = nearest.query(r.problem, static_cast<size_t>(max_k));
    b.nearest.add(r.params, [&](size_t) -> const std::vector<ParamVector>& { return near; });
  }
  return b;
}

}  // namespace tunecast::cli::eval
