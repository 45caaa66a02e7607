#include "tunecast/codegen/search_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "tunecast/predict.h"

namespace tunecast::codegen {
namespace {

using Clock = std::chrono::steady_clock;
using Config = std::vector<int64_t>;

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A seeded permutation of 0..n-1 (Fisher-Yates; splitmix64, so every platform draws the same).
std::vector<size_t> permutation(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  uint64_t state = seed;
  for (size_t i = 0; i + 1 < n; ++i) {
    const size_t j = i + static_cast<size_t>(splitmix64(&state) % (n - i));
    std::swap(order[i], order[j]);
  }
  return order;
}

// What one strategy got on one problem at one budget.
struct Outcome {
  bool found = false;
  double best = 0.0;
  int benchmarks = 0;
  int failed = 0;
  int invalid = 0;
};

}  // namespace

const std::vector<std::string>& search_strategy_names() {
  static const std::vector<std::string> names = {kPredictorTop1, kPredictorTopB, kPredictorSearch, kDefaultSearch,
                                                 kFreeSearch,    kConfigList,     kRandom,          kExhaustive};
  return names;
}

double StrategyCell::geomean_speed() const {
  double total = 0.0;
  for (const std::vector<double>& run : speeds) {
    double logs = 0.0;
    for (double s : run) logs += std::log(s);
    total += run.empty() ? 0.0 : std::exp(logs / static_cast<double>(run.size()));
  }
  return speeds.empty() ? 0.0 : total / static_cast<double>(speeds.size());
}

double StrategyCell::p10_speed() const {
  double total = 0.0;
  for (const std::vector<double>& run : speeds) {
    if (run.empty()) continue;
    std::vector<double> sorted = run;
    std::sort(sorted.begin(), sorted.end());
    const double position = 0.1 * static_cast<double>(sorted.size() - 1);
    const size_t low = static_cast<size_t>(position);
    const size_t high = std::min(low + 1, sorted.size() - 1);
    total += sorted[low] + (position - static_cast<double>(low)) * (sorted[high] - sorted[low]);
  }
  return speeds.empty() ? 0.0 : total / static_cast<double>(speeds.size());
}

double StrategyCell::mean_benchmarks() const {
  size_t samples = 0;
  for (const std::vector<double>& run : speeds) samples += run.size();
  return samples ? benchmarks / static_cast<double>(samples) : 0.0;
}

double StrategyCell::overhead_us_per_benchmark() const {
  return overhead_benchmarks > 0 ? 1e6 * overhead_seconds / overhead_benchmarks : 0.0;
}

SearchEvaluation::SearchEvaluation(SearchEvalOptions options) : options_(std::move(options)) {
  for (const std::string& name : search_strategy_names()) {
    if (name == kDefaultSearch && options_.default_config.empty()) continue;
    if (name == kConfigList && options_.config_list.empty()) continue;
    if (!options_.with_predictor && (name == kPredictorTop1 || name == kPredictorTopB || name == kPredictorSearch)) continue;
    if (!options_.strategies.empty() &&
        std::find(options_.strategies.begin(), options_.strategies.end(), name) == options_.strategies.end()) {
      continue;
    }
    const size_t runs = name == kRandom || name == kFreeSearch ? static_cast<size_t>(std::max(1, options_.random_runs)) : 1;
    cells_[name].resize(options_.budgets.size());
    for (StrategyCell& cell : cells_[name]) cell.speeds.resize(runs);
  }
}

Status SearchEvaluation::add(const Model& model, const SearchCase& c, size_t index) {
  if (!c.timings.has_optimum()) {
    return Status::error(StatusCode::kInvalidArgument, "a problem without any config that ran cannot be scored");
  }
  const int count = model.parameter_count();
  const double optimum = c.timings.optimum();
  const double slowest = c.timings.slowest();
  Replay replay{&c.timings, c.positions};
  auto valid = [&](const int64_t* v) { return check_candidate(model, c.problem, v, count, nullptr); };
  auto record = [&](const char* name, size_t b, size_t run, const Outcome& o) {
    StrategyCell& cell = cells_.at(name)[b];
    cell.speeds[run].push_back(optimum / (o.found ? o.best : slowest));
    cell.benchmarks += o.benchmarks;
    cell.failed += o.failed;
    cell.invalid += o.invalid;
    cell.none_found += !o.found;
  };
  // A tunecast::search run's outcome and its overhead.
  auto record_search = [&](const char* name, size_t b, size_t run, const SearchResult& result,
                           const std::vector<SearchTrial>& history) {
    Outcome o;
    o.found = result.found;
    o.best = result.best_time;
    o.benchmarks = result.benchmarks;
    o.failed = result.failed_benchmarks;
    for (int i = 0; i < result.trials; ++i) o.invalid += !valid(history[i].values);
    record(name, b, run, o);
    StrategyCell& cell = cells_.at(name)[b];
    cell.overhead_seconds += result.seconds - result.benchmark_seconds;
    cell.overhead_benchmarks += result.benchmarks;
  };
  // Measures `configs` (model order) in turn, at most `budget` of them.
  auto measure_list = [&](const std::vector<Config>& configs, const std::vector<size_t>& order, size_t budget) {
    Outcome o;
    for (size_t i = 0; i < order.size() && i < budget; ++i) {
      const Config& v = configs[order[i]];
      o.invalid += !valid(v.data());
      double time = 0.0;
      ++o.benchmarks;
      if (replay(v.data(), count, &time) != BenchmarkStatus::kOk) {
        ++o.failed;
      } else if (!o.found || time < o.best) {
        o.found = true;
        o.best = time;
      }
    }
    return o;
  };

  // The predictor's distinct candidates of each beam width the budgets need.
  std::map<int, std::vector<Config>> candidates;
  std::map<int, double> predict_seconds;
  auto predicted = [&](int width) -> Status {
    width = std::max(1, std::min(width, kMaxBeamWidth));
    if (candidates.count(width)) return Status::ok();
    std::vector<unsigned char> scratch(model.scratch_bytes(width));
    std::vector<Candidate> out(static_cast<size_t>(width));
    PredictOptions po;
    po.beam_width = width;
    po.use_model_constraints = options_.search.use_model_constraints;
    PredictInfo info;
    const Clock::time_point start = Clock::now();
    const Status s = predict(model, c.problem, po, scratch.data(), scratch.size(), out.data(), width, &info);
    predict_seconds[width] = std::chrono::duration<double>(Clock::now() - start).count();
    if (!s && s.code() != StatusCode::kNoValidCandidate) return s;
    std::vector<Config>& list = candidates[width];
    for (int i = 0; s && i < info.candidates; ++i) {
      Config v(out[i].values, out[i].values + count);
      if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(std::move(v));
    }
    return Status::ok();
  };
  auto width_of = [&](int budget) { return std::max(1, std::min(std::max(budget, options_.search_width), kMaxBeamWidth)); };

  // Recorded configs in the model's order; the valid ones (random and exhaustive search).
  std::vector<Config> valid_configs;
  for (const Config& r : c.timings.configs()) {
    Config v(static_cast<size_t>(count));
    for (int p = 0; p < count; ++p) v[p] = r[c.positions.empty() ? static_cast<size_t>(p) : c.positions[p]];
    if (valid(v.data())) valid_configs.push_back(std::move(v));
  }
  const uint64_t problem_seed = options_.seed * 0x100000001b3ull + index * 0x9e3779b97f4a7c15ull;
  const std::vector<size_t> exhaustive_order = permutation(valid_configs.size(), problem_seed ^ 0xe4a05717e4a05717ull);
  const size_t random_runs = cells_.count(kRandom) ? cells_.at(kRandom)[0].speeds.size() : 0;
  std::vector<std::vector<size_t>> random_orders;
  for (size_t r = 0; r < random_runs; ++r) random_orders.push_back(permutation(valid_configs.size(), problem_seed + r + 1));

  // The default config's space: each parameter's recorded values.
  std::vector<std::vector<int64_t>> space_values(static_cast<size_t>(count));
  SearchSpace space;
  space.parameter_count = count;
  for (int p = 0; p < count; ++p) {
    space_values[p] = c.timings.values_of(c.positions.empty() ? static_cast<size_t>(p) : c.positions[p]);
    space.values[p] = space_values[p].data();
    space.value_counts[p] = static_cast<int>(space_values[p].size());
  }

  // The model-free search's space: the definition's domains when the model carries them (a
  // definition, or a model compiled with one), else the recorded values; the model's rules.
  std::vector<std::vector<int64_t>> free_values(static_cast<size_t>(count));
  SearchSpace free_space;
  free_space.parameter_count = count;
  struct FreeRule {
    const Model* model;
    const Problem* problem;
  } free_rule{&model, &c.problem};
  free_space.context = &free_rule;
  free_space.valid = [](void* context, const int64_t* values, int n) {
    const FreeRule& r = *static_cast<const FreeRule*>(context);
    return check_candidate(*r.model, *r.problem, values, n, nullptr);
  };
  for (int p = 0; p < count; ++p) {
    const int64_t* domain = nullptr;
    int size = 0;
    if (model.parameter_domain(p, &domain, &size)) {
      free_values[p].assign(domain, domain + size);
    } else {
      free_values[p] = space_values[p];
    }
    free_space.values[p] = free_values[p].data();
    free_space.value_counts[p] = static_cast<int>(free_values[p].size());
  }

  if (cells_.count(kPredictorTop1)) TUNECAST_RETURN_IF_ERROR(predicted(options_.search_width));
  for (size_t b = 0; b < options_.budgets.size(); ++b) {
    const int budget = options_.budgets[b];

    // Predictor top-1: no benchmark; the recorded time of the first candidate.
    if (cells_.count(kPredictorTop1)) {
      const std::vector<Config>& list = candidates[width_of(options_.search_width)];
      Outcome o;
      if (!list.empty()) {
        o.invalid = !valid(list[0].data());
        const ProblemTimings::Timing* t = replay.find(list[0].data(), count);
        o.found = t != nullptr && t->ok;
        o.best = o.found ? t->time : 0.0;
        unrecorded_ += b == 0 && t == nullptr;
      }
      record(kPredictorTop1, b, 0, o);
      StrategyCell& cell = cells_.at(kPredictorTop1)[b];
      cell.overhead_seconds += predict_seconds[width_of(options_.search_width)];
    }

    // Predictor top-B: the first B distinct candidates of a beam of max(B, search width).
    if (cells_.count(kPredictorTopB)) {
      TUNECAST_RETURN_IF_ERROR(predicted(width_of(budget)));
      const std::vector<Config>& list = candidates[width_of(budget)];
      std::vector<size_t> order(list.size());
      std::iota(order.begin(), order.end(), size_t{0});
      const int before = replay.unrecorded;
      const Outcome o = measure_list(list, order, static_cast<size_t>(budget));
      unrecorded_ += replay.unrecorded - before;
      record(kPredictorTopB, b, 0, o);
      StrategyCell& cell = cells_.at(kPredictorTopB)[b];
      cell.overhead_seconds += predict_seconds[width_of(budget)];
      cell.overhead_benchmarks += o.benchmarks;
    }

    // Predictor + coordinate descent (tunecast::search), and coordinate descent from the default.
    for (const char* name : {kPredictorSearch, kDefaultSearch}) {
      if (!cells_.count(name)) continue;
      SearchOptions so = options_.search;
      so.budget = budget;
      so.observer = SearchObserver();
      if (so.explore > so.beam_width) so.explore = so.beam_width;
      const bool from_model = name == std::string(kPredictorSearch);
      std::vector<unsigned char> scratch(from_model ? search_scratch_bytes(model, so) : search_scratch_bytes(space, so));
      std::vector<SearchTrial> history(static_cast<size_t>(budget));
      SearchResult result;
      const int before = replay.unrecorded;
      const Status s = from_model ? search(model, c.problem, so, Benchmark::from(replay), scratch.data(), scratch.size(),
                                           history.data(), budget, &result)
                                  : search(space, options_.default_config.data(), so, Benchmark::from(replay),
                                           scratch.data(), scratch.size(), history.data(), budget, &result);
      if (!s && !(from_model && s.code() == StatusCode::kNoValidCandidate)) {
        return Status::error(s.code(), "%s: %s", name, s.message());
      }
      unrecorded_ += replay.unrecorded - before;
      record_search(name, b, 0, result, history);
    }

    // The model-free search (tunecast::search with no predictor), one run per seed.
    if (cells_.count(kFreeSearch)) {
      std::vector<int64_t> prior;  // row-major, as SearchOptions::first_configs reads them
      for (const std::vector<int64_t>& config : options_.prior_configs) prior.insert(prior.end(), config.begin(), config.end());
      StrategyCell& cell = cells_.at(kFreeSearch)[b];
      for (size_t r = 0; r < cell.speeds.size(); ++r) {
        SearchOptions so = options_.search;
        so.budget = budget;
        so.observer = SearchObserver();
        so.explore = -1;
        so.seed = problem_seed + r;
        so.first_configs = prior.empty() ? nullptr : prior.data();
        so.first_config_count = static_cast<int>(options_.prior_configs.size());
        std::vector<unsigned char> scratch(search_scratch_bytes(free_space, so));
        std::vector<SearchTrial> history(static_cast<size_t>(budget));
        SearchResult result;
        const int before = replay.unrecorded;
        const Status s = search(free_space, nullptr, so, Benchmark::from(replay), scratch.data(), scratch.size(),
                                history.data(), budget, &result);
        if (!s) return Status::error(s.code(), "%s: %s", kFreeSearch, s.message());
        unrecorded_ += replay.unrecorded - before;
        record_search(kFreeSearch, b, r, result, history);
      }
    }

    // The kernel's own autotune list, in its order, truncated at B (what its users benchmark).
    if (cells_.count(kConfigList)) {
      std::vector<size_t> order(options_.config_list.size());
      std::iota(order.begin(), order.end(), size_t{0});
      const int before = replay.unrecorded;
      record(kConfigList, b, 0, measure_list(options_.config_list, order, static_cast<size_t>(budget)));
      unrecorded_ += replay.unrecorded - before;
    }

    // Random search (runs averaged) and exhaustive search in random order (one seeded order, as
    // MIOpen's GenericSearch runs once), over the valid recorded configs, truncated at B.
    for (size_t r = 0; r < random_runs; ++r) {
      record(kRandom, b, r, measure_list(valid_configs, random_orders[r], static_cast<size_t>(budget)));
    }
    if (cells_.count(kExhaustive)) {
      record(kExhaustive, b, 0, measure_list(valid_configs, exhaustive_order, static_cast<size_t>(budget)));
    }
  }
  ++problems_;
  return Status::ok();
}

}  // namespace tunecast::codegen
