// `tunecast eval-search`: tuning strategies side by side on recorded exhaustive measurements, each
// at each benchmark budget, scored by the speed the user gets (optimum / found time). One function
// per strategy over one problem; SearchEvaluation gathers them (docs/search.md lists the
// strategies). Host-only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tunecast/codegen/timing_db.h"
#include "tunecast/model.h"
#include "tunecast/search.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// One problem with its recording; configs go to the recording through `positions`
// (map_parameters(); empty: the model's order).
struct SearchCase {
  Problem problem;
  ProblemTimings timings;
  std::vector<int> positions;
};

struct SearchEvalOptions {
  std::vector<int> budgets;             // benchmark budgets, ascending
  int search_width = 1;                 // top-1 and top-B: the first B distinct of a beam of max(B, width)
  SearchOptions search;                 // predictor + coordinate descent, and default + coordinate descent (budget set per B)
  std::vector<int64_t> default_config;  // the kernel's default, model order; empty: no default + coordinate descent
  int random_runs = 10;                 // random search and the model-free search: runs (seeds) averaged
  std::vector<std::vector<int64_t>> config_list;  // a kernel's own autotune list (model order); empty: none
  std::vector<std::vector<int64_t>> prior_configs;  // the model-free search's first configs (model order, best first)
  uint64_t seed = 0;                    // random search and exhaustive search's orders
  std::vector<std::string> strategies;  // only these (names of search_strategy_names()); empty: all
  bool with_predictor = true;           // false: a kernel definition alone (the predictor strategies are left out)
};

// The strategies, in report order.
inline constexpr const char* kPredictorTop1 = "predictor_top1";
inline constexpr const char* kPredictorTopB = "predictor_top_b";
inline constexpr const char* kPredictorSearch = "predictor_search";
inline constexpr const char* kDefaultSearch = "default_search";
inline constexpr const char* kFreeSearch = "free_search";
inline constexpr const char* kConfigList = "config_list";
inline constexpr const char* kRandom = "random";
inline constexpr const char* kExhaustive = "exhaustive";
const std::vector<std::string>& search_strategy_names();

// One strategy at one budget over the problems added so far.
struct StrategyCell {
  std::vector<std::vector<double>> speeds;  // [run][problem]: optimum / found time (<= 1)
  double benchmarks = 0.0;                  // summed over runs and problems
  int64_t invalid = 0;                      // benchmarked configs that break the model's constraints
  int64_t failed = 0;                       // benchmarks of failed or unrecorded configs
  int64_t none_found = 0;                   // (run, problem) pairs where nothing ran: charged the slowest recorded time
  double overhead_seconds = 0.0;            // search time without the benchmarks (model strategies)
  double overhead_benchmarks = 0.0;         // benchmarks over which that overhead was spent

  double geomean_speed() const;             // mean over runs of the geometric mean over problems
  double p10_speed() const;                 // mean over runs of the 10th percentile (linear interpolation)
  double mean_benchmarks() const;
  // Overhead per benchmark in microseconds (0 when nothing was measured).
  double overhead_us_per_benchmark() const;
};

class SearchEvaluation {
 public:
  explicit SearchEvaluation(SearchEvalOptions options);

  // Runs every strategy at every budget on one problem (its timings must have an optimum).
  // `index` varies the random orders from problem to problem.
  Status add(const Model& model, const SearchCase& c, size_t index);

  int problems() const { return problems_; }
  // strategy name -> one cell per budget (options.budgets order). A strategy that cannot run (no
  // default config) is absent.
  const std::map<std::string, std::vector<StrategyCell>>& cells() const { return cells_; }
  const SearchEvalOptions& options() const { return options_; }
  // Configs the recording lacks that some strategy asked for (answered as failures).
  int64_t unrecorded() const { return unrecorded_; }

 private:
  SearchEvalOptions options_;
  std::map<std::string, std::vector<StrategyCell>> cells_;
  int problems_ = 0;
  int64_t unrecorded_ = 0;
};

}  // namespace tunecast::codegen
