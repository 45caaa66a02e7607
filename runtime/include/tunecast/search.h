// Tuning search: the predictor proposes, the caller measures. A few benchmarks of the constrained
// beam's best distinct candidates (explore), then coordinate descent from the best measured config
// over each parameter's ordered values (exploit), every proposal checked against the model's
// constraints before it is measured. Like predict(): all state in the caller's scratch (no heap),
// errors as values, and the benchmark is a C-style callback the search calls once per measurement
// (the shape of TVM's tuners: propose, let someone else measure, update). docs/search.md describes
// the algorithm and its options.
//
//   tunecast::SearchOptions options;            // budget 100 benchmarks, beam 10
//   std::vector<unsigned char> scratch(tunecast::search_scratch_bytes(model, options));
//   std::vector<tunecast::SearchTrial> history(options.budget);
//   tunecast::SearchResult result;
//   status = tunecast::search(model, problem, options, tunecast::Benchmark::from(my_timer),
//                             scratch.data(), scratch.size(), history.data(), options.budget, &result);
//
// Deterministic: the same timings give the same proposals (no random numbers anywhere).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tunecast/model.h"
#include "tunecast/predict.h"
#include "tunecast/problem.h"
#include "tunecast/status.h"

namespace tunecast {

constexpr int kMaxSearchBudget = 1 << 20;  // benchmark calls of one search
constexpr int kMaxRecheckRuns = 15;        // re-measurements of one config (SearchOptions)

enum class BenchmarkStatus : int {
  kOk = 0,   // *time holds the measurement: finite, >= 0, any consistent unit (microseconds by convention)
  kFailed,   // the config does not run (compile or launch failure, out of resources, wrong result):
             // a result, the search goes on
  kAbort,    // stop the search now: search() returns kAborted
};

// The caller's measurement: values[0..count) in the model's parameter order (as Candidate::values).
struct Benchmark {
  BenchmarkStatus (*run)(void* context, const int64_t* values, int count, double* time) = nullptr;
  void* context = nullptr;
  // Optional: told of configs the search will benchmark next, before the first of them is run
  // (the explore batch: the beam's candidates, or the model-free draws), `config_count` configs of
  // `count` values each, back to back; so a benchmark process can compile them in parallel and
  // time them one by one. Some may not be run (the budget or time limit ends first); each that is
  // run still comes through `run`.
  void (*prepare)(void* context, const int64_t* configs, int config_count, int count) = nullptr;

  explicit operator bool() const { return run != nullptr; }
  // Wraps any callable `BenchmarkStatus(const int64_t* values, int count, double* time)` that
  // outlives the Benchmark.
  template <typename Callable>
  static Benchmark from(Callable& callable) {
    Benchmark b;
    b.context = &callable;
    b.run = [](void* context, const int64_t* values, int count, double* time) {
      return (*static_cast<Callable*>(context))(values, count, time);
    };
    return b;
  }
  // Wraps a callable as from(), plus a `prepare` callable `void(const int64_t* configs, int
  // config_count, int count)`; both must outlive the Benchmark.
  template <typename Callable, typename Prepare>
  static Benchmark from(Callable& callable, Prepare& prepare_callable) {
    Benchmark b = from(callable);
    b.prepare_context = &prepare_callable;
    b.prepare = [](void* context, const int64_t* configs, int config_count, int count) {
      (*static_cast<Prepare*>(context))(configs, config_count, count);
    };
    return b;
  }
  void* prepare_context = nullptr;  // prepare's context (from(callable, prepare)); null: `context`
};

enum class SearchPhase : uint8_t { kExplore = 0, kExploit = 1 };

// One benchmark call.
struct SearchTrial {
  int64_t values[kMaxParameters] = {};
  double time = 0.0;         // the measurement; 0 when failed
  bool failed = false;       // BenchmarkStatus::kFailed
  bool repeat = false;       // a re-measurement of a config already measured (the recheck rule)
  SearchPhase phase = SearchPhase::kExplore;
};

// Told of every benchmark as it completes (progress lines, logs). `best` is null while nothing has
// run successfully; best_time is then 0.
struct SearchObserver {
  void (*trial)(void* context, const SearchTrial& trial, int benchmarks, const int64_t* best,
                double best_time) = nullptr;
  void* context = nullptr;
};

struct SearchOptions {
  // Budget: the search stops before a benchmark call that would exceed either limit.
  int budget = 100;             // benchmark calls, re-measurements included (1..kMaxSearchBudget)
  double time_limit = 0.0;      // seconds since the search started (steady clock); 0 = none

  // Explore (search from a model): the beam's distinct candidates, best first.
  // The predictor's beam (1..kMaxBeamWidth): its first `explore` distinct candidates are
  // benchmarked before the descent, the rest restart it once it converges with budget left.
  int beam_width = 32;
  int explore = -1;             // candidates benchmarked before exploiting; -1: default_explore(beam_width, budget)

  // Exploit: coordinate descent over each parameter's sorted values. A neighbour at radius r moves
  // 1..max_moved parameters by exactly r positions each (every sign combination); single moves
  // come first. The first neighbour that improves is taken (then the same step is tried again
  // first); when none does, r grows, back to 1 after a move.
  int max_radius = 0;           // widest r; 0: the longest value list's length - 1
  int max_moved = 2;            // parameters changed at once (1: one parameter at a time; <= kMaxParameters)

  // Acceptance beyond noise (MIOpen's rule, off by default): a config measured within
  // recheck_ratio of the best is measured recheck_runs more times, and the best is topped up to as
  // many samples; both are then compared by their medians. A config that fails any of its runs is
  // a failed config.
  int recheck_runs = 0;         // 0..kMaxRecheckRuns
  double recheck_ratio = 1.10;  // >= 1

  // Validity (search from a model): proposals pass the model's constraints and the Validator (as in
  // predict) before they are benchmarked; values are those the model's vocabulary can emit.
  bool use_model_constraints = true;
  Validator validator;

  // Searching without a predictor (a kernel definition alone, or a SearchSpace with no start): the
  // seed of the space-filling start and of the surrogate's candidate draws (`explore`, when set, is
  // the start's length). Same seed, same timings: same proposals.
  uint64_t seed = 0;
  // Configs to measure first without a predictor, best first (first_config_count rows of
  // parameter_count values): e.g. the best configs of the same kernel's recorded timings on other
  // GPUs or problems (tune --prior). They take the space-filling start's place; values outside the
  // space and configs the rules reject are skipped. Not read by the search from a model.
  const int64_t* first_configs = nullptr;
  int first_config_count = 0;

  SearchObserver observer;
};

enum class SearchStop : uint8_t {
  kBudget = 0,   // options.budget benchmark calls made
  kTimeLimit,    // options.time_limit reached
  kConverged,    // no neighbour up to the widest radius improves (or every one is visited or invalid)
};

struct SearchResult {
  int parameter_count = 0;
  int64_t best[kMaxParameters] = {};  // the best config (valid when found)
  double best_time = 0.0;             // its time (the median of its samples)
  bool found = false;                 // some config ran successfully
  int benchmarks = 0;                 // benchmark calls made
  int explore_benchmarks = 0;         // of which in the explore phase
  int failed_benchmarks = 0;          // calls that returned kFailed
  int repeats = 0;                    // re-measurements (the recheck rule)
  int trials = 0;                     // trials written to history: min(benchmarks, history_capacity)
  int distinct_candidates = 0;        // distinct vectors in the beam (search from a model)
  int64_t skipped_invalid = 0;        // proposals the constraints or validity rule removed before benchmarking
  int64_t skipped_visited = 0;        // proposals already measured (or failed)
  int radius = 0;                     // the exploit radius when the search stopped
  SearchStop stop = SearchStop::kBudget;
  double seconds = 0.0;               // wall time of the whole search
  double benchmark_seconds = 0.0;     // of which inside Benchmark::run (the rest is the search's overhead)
  // As PredictInfo (search from a model): problem fields outside the training ranges, and the first
  // applicability condition the problem fails (-1: none). Reported, not enforced, as in predict.
  uint32_t out_of_range_fields = 0;
  int not_applicable = -1;
};

// The explore phase's default length: 0.7 of the budget (rounded, at least 1), at most the beam.
// Chosen on the val split of the H100 timing DB (docs/search.md, "How the defaults were chosen").
inline int default_explore(int beam_width, int budget) {
  const long long share = (static_cast<long long>(budget) * 7 + 5) / 10;
  return static_cast<int>(share < 1 ? 1 : share < beam_width ? share : beam_width);
}

// The model-free search's default start: configs of the space-filling start before the surrogate
// proposes (docs/search.md, "Without a predictor"): 0.3 of the budget, at least 4 (from 3, budget 10
// read exactly random search on convolution_milo MI250X: docs/search.md), at most the budget.
inline int default_free_start(int budget) {
  const long long share = (static_cast<long long>(budget) * 3 + 5) / 10;
  const long long n = share < 4 ? 4 : share;
  return static_cast<int>(n < budget ? n : budget);
}

// Bytes of scratch a search from `model` with `options` needs (predict's scratch for the beam, the
// candidates, the value lists and the visited-config table, sized from options.budget).
size_t search_scratch_bytes(const Model& model, const SearchOptions& options);

// Explore with the model's beam, then exploit; or, for a model without a predictor (a kernel
// definition alone), the surrogate-guided search (SearchOptions::seed; docs/search.md). The space is each
// parameter's definition domain when the model carries one (values the predictor never emits stay
// reachable), else its vocabulary's values. Writes min(benchmarks, history_capacity) trials to
// `history` (may be null when the capacity is 0) and fills `result`, also when it returns an error
// after some benchmarks. Errors: kInvalidArgument (options, arguments, a time that is negative or
// not finite), kBufferTooSmall, predict's errors (kNoValidCandidate: nothing to start from), and
// kAborted when the benchmark returned kAbort. A failed benchmark is not an error.
Status search(const Model& model, const Problem& problem, const SearchOptions& options,
              Benchmark benchmark, void* scratch, size_t scratch_size, SearchTrial* history,
              int history_capacity, SearchResult* result);

// A space without a model (e.g. a Kernel Tuner cache): per parameter its values, sorted ascending
// and distinct, and an optional validity rule for a whole config (null: every config is valid).
// The arrays must outlive the search.
struct SearchSpace {
  int parameter_count = 0;
  const int64_t* values[kMaxParameters] = {};
  int value_counts[kMaxParameters] = {};
  bool (*valid)(void* context, const int64_t* values, int count) = nullptr;
  void* context = nullptr;
};

size_t search_scratch_bytes(const SearchSpace& space, const SearchOptions& options);

// Coordinate descent from `start` (parameter_count values, each one of its parameter's values;
// benchmarked first, in the explore phase), with the same exploit and acceptance as the search from
// a model. `start` null: the surrogate-guided search: a space-filling start (options.explore or
// default_free_start configs), then the config of largest expected improvement under a Gaussian
// process fitted to the measured log-times, every proposal passing `valid` (options.seed).
// options.beam_width, use_model_constraints and validator are not used.
Status search(const SearchSpace& space, const int64_t* start, const SearchOptions& options,
              Benchmark benchmark, void* scratch, size_t scratch_size, SearchTrial* history,
              int history_capacity, SearchResult* result);

// "budget", "time limit", "converged".
const char* search_stop_name(SearchStop stop);

}  // namespace tunecast
