// The tuning search (tunecast/search.h): one engine over a space of per-parameter sorted value
// lists, shared by the search from a model (explore with the beam, space from the vocabulary,
// validity from the constraints) and the model-free search (a given space and start config).
// Configs are index vectors into the value lists; measured and failed ones live in an
// open-addressing table carved from the caller's scratch.
#include "tunecast/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace tunecast {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kAlign = 64;

// Carves the caller's scratch; with no memory (base null) it only counts bytes.
class Carver {
 public:
  Carver(void* base, size_t size) : base_(static_cast<unsigned char*>(base)), size_(size) {
    const size_t skew = base_ ? reinterpret_cast<uintptr_t>(base_) % kAlign : 0;
    offset_ = skew ? kAlign - skew : 0;
  }
  template <typename T>
  T* take(size_t count) {
    const size_t bytes = (count * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    if (base_ == nullptr || offset_ + bytes > size_) {
      overflow_ = overflow_ || base_ != nullptr;
      offset_ += bytes;
      return nullptr;
    }
    T* p = reinterpret_cast<T*>(base_ + offset_);
    offset_ += bytes;
    return p;
  }
  bool overflow() const { return overflow_; }
  size_t used() const { return offset_; }

 private:
  unsigned char* base_;
  size_t size_;
  size_t offset_ = 0;
  bool overflow_ = false;
};

// splitmix64: a seeded stream for the model-free explore (deterministic, no state beyond 8 bytes).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

// Worst initial misalignment included.
size_t with_alignment_slack(size_t bytes) { return bytes + kAlign; }


// A measured (or failed) config.
struct Entry {
  uint16_t index[kMaxParameters];
  double estimate;   // median of its samples
  uint8_t state;     // kEmpty, kMeasured, kFailed
};
constexpr uint8_t kEmpty = 0, kMeasured = 1, kFailed = 2;

// Table slots for a budget: a power of two at least twice the budget (each entry costs at least
// one benchmark, so the table is never more than half full).
size_t table_slots(int budget) {
  size_t slots = 16;
  while (slots < 2 * static_cast<size_t>(std::max(budget, 1))) slots *= 2;
  return slots;
}

// The model-free search's surrogate (docs/search.md, "Without a predictor"): a Gaussian process
// over the measured configs' normalized positions, fitted to their log-times, proposing the
// config of largest expected improvement. Its arrays live in the caller's scratch.
constexpr int kGpMaxPoints = 64;    // the best measured configs the model is fitted to
constexpr int kGpStartPool = 256;   // random valid configs the maximin start picks from
constexpr int kGpDraws = 256;       // random valid configs scored per proposal (plus the best ones' neighbours)
constexpr int kGpLocal = 3;         // the best measured configs whose neighbours are scored
constexpr double kGpLocalFrom = 0.4;  // share of the budget after which only the best config's neighbours are scored
constexpr int kGpRefitEvery = 5;    // benchmarks between length-scale fits, once kGpRefitEachBelow are measured
constexpr int kGpRefitEachBelow = 20;  // below this many measured configs, a fit after every benchmark
constexpr int kGpStall = 20;          // local benchmarks without a gain before a restart
constexpr double kGpRegroup = 0.1;    // share of the budget in the global phase after a restart
constexpr int kGpTabuRadius = 2;      // a restart's tabu region: configs within this many changed parameters
constexpr int kGpCentreRadius = 3;    // after a restart no local centre within this many of a tabu centre
constexpr int kGpMaxTabu = 8;         // restarts per search
struct GpScratch {
  double* features = nullptr;       // [kGpMaxPoints][kMaxParameters]
  double* y = nullptr;              // [kGpMaxPoints]
  double* chol = nullptr;           // [kGpMaxPoints][kGpMaxPoints]: the kernel matrix's Cholesky factor
  double* alpha = nullptr;          // [kGpMaxPoints]
  double* work = nullptr;           // [kGpMaxPoints]
  uint16_t* pool = nullptr;         // [kGpStartPool][kMaxParameters]: the start's maximin pool
  double* pool_distance = nullptr;  // [kGpStartPool]
};

void carve_gp(Carver* carver, GpScratch* out) {
  out->features = carver->take<double>(static_cast<size_t>(kGpMaxPoints) * kMaxParameters);
  out->y = carver->take<double>(kGpMaxPoints);
  out->chol = carver->take<double>(static_cast<size_t>(kGpMaxPoints) * kGpMaxPoints);
  out->alpha = carver->take<double>(kGpMaxPoints);
  out->work = carver->take<double>(kGpMaxPoints);
  out->pool = carver->take<uint16_t>(static_cast<size_t>(kGpStartPool) * kMaxParameters);
  out->pool_distance = carver->take<double>(kGpStartPool);
}

struct Space {
  int count = 0;
  const int64_t* values[kMaxParameters] = {};
  int sizes[kMaxParameters] = {};
};

// The validity of a complete config, whichever search asked.
struct Validity {
  // Search from a model.
  const Model* model = nullptr;
  const Problem* problem = nullptr;
  bool use_constraints = false;
  Validator validator;
  // Model-free.
  const SearchSpace* space = nullptr;

  bool operator()(const int64_t* values) const {
    if (model != nullptr) {
      if (use_constraints && !check_candidate(*model, *problem, values, model->parameter_count(), nullptr)) {
        return false;
      }
      if (validator) {
        // The Validator sees prefixes in decode order; a whole config passes every step's check.
        for (int step = 0; step < model->parameter_count(); ++step) {
          if (!validator.check(validator.context, problem, model->decode_position(step), values)) return false;
        }
      }
      return true;
    }
    return space->valid == nullptr || space->valid(space->context, values, space->parameter_count);
  }
};

Status check_options(const SearchOptions& options, int parameter_count) {
  if (options.budget < 1 || options.budget > kMaxSearchBudget) {
    return Status::error(StatusCode::kInvalidArgument, "search budget %d is outside 1..%d", options.budget,
                         kMaxSearchBudget);
  }
  if (!(options.time_limit >= 0.0) || !std::isfinite(options.time_limit)) {
    return Status::error(StatusCode::kInvalidArgument, "search time limit must be 0 (none) or a positive number of seconds");
  }
  if (options.max_radius < 0) {
    return Status::error(StatusCode::kInvalidArgument, "search max_radius %d is negative (0: the widest the space allows)",
                         options.max_radius);
  }
  if (options.max_moved < 1 || options.max_moved > kMaxParameters) {
    return Status::error(StatusCode::kInvalidArgument, "search max_moved %d is outside 1..%d", options.max_moved,
                         kMaxParameters);
  }
  if (options.recheck_runs < 0 || options.recheck_runs > kMaxRecheckRuns) {
    return Status::error(StatusCode::kInvalidArgument, "search recheck_runs %d is outside 0..%d", options.recheck_runs,
                         kMaxRecheckRuns);
  }
  if (!(options.recheck_ratio >= 1.0) || !std::isfinite(options.recheck_ratio)) {
    return Status::error(StatusCode::kInvalidArgument, "search recheck_ratio must be a finite number >= 1");
  }
  if (parameter_count < 1 || parameter_count > kMaxParameters) {
    return Status::error(StatusCode::kInvalidArgument, "a search space needs 1..%d parameters, not %d", kMaxParameters,
                         parameter_count);
  }
  return Status::ok();
}

double median(double* samples, int count) {
  std::sort(samples, samples + count);
  return count % 2 ? samples[count / 2] : 0.5 * (samples[count / 2 - 1] + samples[count / 2]);
}

// Outcome of proposing one config.
enum class Proposal { kVisited, kInvalid, kMeasured, kStopped };

class Engine {
 public:
  Engine(const Space& space, const Validity& validity, const SearchOptions& options, Benchmark benchmark,
         Entry* table, size_t slots, SearchTrial* history, int history_capacity, SearchResult* result,
         Clock::time_point start)
      : space_(space), validity_(validity), options_(options), benchmark_(benchmark), table_(table),
        slots_(slots), history_(history), history_capacity_(history_capacity), result_(result), start_(start) {
    std::memset(table_, 0, slots_ * sizeof(Entry));
    result_->parameter_count = space_.count;
    max_radius_ = options_.max_radius;
    if (max_radius_ == 0) {
      for (int p = 0; p < space_.count; ++p) max_radius_ = std::max(max_radius_, space_.sizes[p] - 1);
      max_radius_ = std::max(max_radius_, 1);
    }
    max_moved_ = std::min(options_.max_moved, space_.count);
    for (int p = 0; p < space_.count; ++p) {
      if (space_.sizes[p] <= 2 || space_.values[p][0] <= 0) continue;  // two values, or an enum from 0
      int powers = 0;
      for (int v = 0; v < space_.sizes[p]; ++v) powers += power_of_two(space_.values[p][v]);
      if (powers > 0 && powers < space_.sizes[p]) pow2_params_[pow2_count_++] = p;
      const int64_t step = space_.values[p][1] - space_.values[p][0];
      bool even = step >= 2;
      for (int v = 2; even && v < space_.sizes[p]; ++v) even = space_.values[p][v] - space_.values[p][v - 1] == step;
      if (even && powers > 0 && 2 * powers < space_.sizes[p]) {  // a thread-count grid: its powers of two start
        for (int v = 0; v < space_.sizes[p]; ++v) {
          if (power_of_two(space_.values[p][v])) grid_powers_[grid_count_][grid_power_counts_[grid_count_]++] = v;
        }
        grid_params_[grid_count_++] = p;
      }
    }
  }

  // The values of config `index`.
  void values_of(const uint16_t* index, int64_t* values) const {
    for (int p = 0; p < space_.count; ++p) values[p] = space_.values[p][index[p]];
  }
  // The index vector of `values`; false when a value is not in its list.
  bool index_of(const int64_t* values, uint16_t* index) const {
    for (int p = 0; p < space_.count; ++p) {
      const int64_t* begin = space_.values[p];
      const int64_t* end = begin + space_.sizes[p];
      const int64_t* it = std::lower_bound(begin, end, values[p]);
      if (it == end || *it != values[p]) return false;
      index[p] = static_cast<uint16_t>(it - begin);
    }
    return true;
  }

  // Checks, measures and compares one config. kStopped: the budget or time limit ends the search
  // (nothing measured), or an error is pending (error()).
  Proposal propose(const uint16_t* index, SearchPhase phase) {
    pending_count_ = 0;
    improved_ = false;  // improved() speaks of this proposal only (the restarts read it)
    const Proposal proposal = propose_and_compare(index, phase);
    notify();
    return proposal;
  }

  // Coordinate descent from the best config (or from `from` when nothing has run successfully).
  void exploit(const uint16_t* from) {
    uint16_t x[kMaxParameters];
    std::copy(from, from + space_.count, x);
    if (found_) std::copy(best_, best_ + space_.count, x);
    int step[kMaxParameters] = {};
    bool have_step = false;
    int radius = 1;
    while (!stopped_) {
      result_->radius = radius;
      // The step that last improved, again first (Droplet's direction speculation).
      if (have_step && try_move(x, step, SearchPhase::kExploit)) {
        radius = 1;
        continue;
      }
      bool moved = false;
      int combo[kMaxParameters];
      for (int k = 1; k <= max_moved_ && !moved && !stopped_; ++k) {
        for (int i = 0; i < k; ++i) combo[i] = i;
        for (;;) {
          for (uint32_t signs = 0; signs < (1u << k) && !moved && !stopped_; ++signs) {
            int delta[kMaxParameters] = {};
            for (int i = 0; i < k; ++i) delta[combo[i]] = (signs >> i) & 1u ? radius : -radius;
            if (try_move(x, delta, SearchPhase::kExploit)) {
              std::copy(delta, delta + space_.count, step);
              have_step = true;
              moved = true;
            }
          }
          if (moved || stopped_ || !next_combination(combo, k, space_.count)) break;
        }
      }
      if (stopped_) return;
      if (moved) {
        radius = 1;
        continue;
      }
      if (++radius > max_radius_) {
        result_->stop = SearchStop::kConverged;
        return;
      }
    }
  }

  // Draws configs uniformly from the space and proposes them until `count` were measured (or the
  // budget ends); draws the rules reject or that were measured already cost no benchmark. Gives
  // up after a bounded number of draws (a space almost entirely invalid). Returns the measured.
  int explore_random(int count, Rng* rng) {
    int measured = 0;
    long long attempts = 0;
    const long long max_attempts = 1000 + 200LL * count;
    while (measured < count && !stopped_ && attempts++ < max_attempts) {
      uint16_t index[kMaxParameters];
      for (int p = 0; p < space_.count; ++p) index[p] = static_cast<uint16_t>(rng->below(space_.sizes[p]));
      measured += propose(index, SearchPhase::kExplore) == Proposal::kMeasured;
    }
    return measured;
  }

  // Tells the benchmark of the configs about to be proposed (Benchmark::prepare): those of
  // `configs` (index vectors) that are valid, unvisited and distinct, at most `limit`.
  void announce(const uint16_t* configs, int config_count, int limit) {
    if (benchmark_.prepare == nullptr || limit <= 0 || stopped_) return;
    int64_t values[kMaxPrepared * kMaxParameters];
    int n = 0;
    for (int i = 0; i < config_count && n < limit && n < kMaxPrepared; ++i) {
      const uint16_t* index = configs + static_cast<size_t>(i) * kMaxParameters;
      if (find(index) != nullptr) continue;
      int64_t* v = values + static_cast<size_t>(n) * space_.count;
      values_of(index, v);
      bool repeated = false;
      for (int j = 0; j < n && !repeated; ++j) {
        repeated = std::equal(v, v + space_.count, values + static_cast<size_t>(j) * space_.count);
      }
      if (repeated || !validity_(v)) continue;
      ++n;
    }
    if (n > 0) {
      benchmark_.prepare(benchmark_.prepare_context ? benchmark_.prepare_context : benchmark_.context, values, n,
                         space_.count);
    }
  }
  static constexpr int kMaxPrepared = 64;  // configs announced at once

  // The surrogate's scratch (search without a predictor); absent: random draws and descent.
  void set_surrogate(const GpScratch& gp) { gp_ = gp; }

  // Without a predictor, with the surrogate: a space-filling start (maximin over random valid
  // configs), then each benchmark on the config of largest expected improvement under a Gaussian
  // process fitted to the measured log-times (docs/search.md, "Without a predictor").
  void run_surrogate(Rng* rng) {
    const int n0 = options_.explore > 0 ? std::min(options_.explore, options_.budget) : default_free_start(options_.budget);
    const int prior = first_configs(n0);
    restarts_ = prior == 0;  // a prior's region is where the search should stay
    maximin_start(n0 - prior, rng);
    while (!stopped_) {
      if (!propose_by_improvement(rng) && explore_random(1, rng) == 0) {  // nothing left to propose
        result_->stop = SearchStop::kConverged;  // every valid config it reaches is measured: not the budget
        return;
      }
    }
  }

  // Without a predictor: `explore` random valid configs, coordinate descent from the best, and
  // while budget is left after it converges, further draws, descending again from any that
  // improves on the best.
  void run_free(int explore, Rng* rng) {
    if (gp_.features != nullptr) {
      run_surrogate(rng);
      return;
    }
    if (benchmark_.prepare != nullptr) {  // the same draws explore_random makes next, announced first
      Rng preview = *rng;
      uint16_t drawn[kMaxPrepared * kMaxParameters];
      const int n = std::min(kMaxPrepared, explore * 4);
      for (int i = 0; i < n; ++i) {
        for (int p = 0; p < space_.count; ++p) {
          drawn[i * kMaxParameters + p] = static_cast<uint16_t>(preview.below(space_.sizes[p]));
        }
      }
      announce(drawn, n, explore);
    }
    explore_random(explore, rng);
    if (!found_ || stopped_) return;
    exploit(best_);
    while (!stopped_ && result_->stop == SearchStop::kConverged) {
      if (explore_random(1, rng) == 0) return;  // nothing valid left to draw
      if (improved_) exploit(best_);
    }
  }

  // Proposes x + delta; on an improvement x becomes it and true is returned.
  bool try_move(uint16_t* x, const int* delta, SearchPhase phase) {
    uint16_t n[kMaxParameters];
    for (int p = 0; p < space_.count; ++p) {
      const int v = x[p] + delta[p];
      if (v < 0 || v >= space_.sizes[p]) return false;
      n[p] = static_cast<uint16_t>(v);
    }
    if (propose(n, phase) != Proposal::kMeasured || !improved_) return false;
    std::copy(n, n + space_.count, x);
    return true;
  }

  void finish() {
    result_->seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    result_->benchmark_seconds = benchmark_seconds_;
  }

  bool stopped() const { return stopped_; }
  // Whether the last proposal measured a new best.
  bool improved() const { return improved_; }
  const Status& error() const { return error_; }

 private:
  Proposal propose_and_compare(const uint16_t* index, SearchPhase phase) {
    if (stopped_) return Proposal::kStopped;
    if (find(index) != nullptr) {
      ++result_->skipped_visited;
      return Proposal::kVisited;
    }
    int64_t values[kMaxParameters];
    values_of(index, values);
    if (!validity_(values)) {
      ++result_->skipped_invalid;
      return Proposal::kInvalid;
    }
    double samples[kMaxRecheckRuns + 1];
    int count = 0;
    bool ok = false;
    if (!measure(values, phase, false, &samples[0], &ok)) return Proposal::kStopped;
    count = 1;
    Entry* entry = insert(index);
    if (!ok) {
      entry->state = kFailed;
      return Proposal::kMeasured;
    }
    // MIOpen's rule: close to the best, measure again and compare medians, the best topped up to
    // as many samples.
    if (found_ && options_.recheck_runs > 0 && samples[0] < best_estimate_ * options_.recheck_ratio) {
      while (ok && count < 1 + options_.recheck_runs && measure(values, phase, true, &samples[count], &ok)) {
        if (ok) ++count;
      }
      if (!ok) {  // a config that fails once is a failed config
        entry->state = kFailed;
        return Proposal::kMeasured;
      }
      int64_t best_values[kMaxParameters];
      values_of(best_, best_values);
      bool best_ok = true;
      while (best_ok && best_count_ < count &&
             measure(best_values, phase, true, &best_samples_[best_count_], &best_ok)) {
        if (best_ok) ++best_count_;
      }
      if (!best_ok) {  // the best failed on a re-run: it is failed, this config takes its place
        find(best_)->state = kFailed;
        found_ = false;
      } else {
        double sorted[kMaxRecheckRuns + 1];
        std::copy(best_samples_, best_samples_ + best_count_, sorted);
        best_estimate_ = median(sorted, best_count_);
        find(best_)->estimate = best_estimate_;
      }
    }
    double sorted[kMaxRecheckRuns + 1];
    std::copy(samples, samples + count, sorted);
    entry->state = kMeasured;
    entry->estimate = median(sorted, count);
    if (!found_ || entry->estimate < best_estimate_) {
      found_ = true;
      improved_ = true;
      std::copy(index, index + space_.count, best_);
      best_estimate_ = entry->estimate;
      std::copy(samples, samples + count, best_samples_);
      best_count_ = count;
      write_result_best();
    }
    return Proposal::kMeasured;
  }

  // -- the surrogate
  // The normalized position of every parameter with more than one value; with `powers`, then
  // whether each size parameter's value is a power of two (pow2_params_).
  int features_of(const uint16_t* index, double* f, bool powers) const {
    int d = 0;
    for (int p = 0; p < space_.count; ++p) {
      if (space_.sizes[p] > 1) f[d++] = static_cast<double>(index[p]) / (space_.sizes[p] - 1);
    }
    for (int i = 0; powers && i < pow2_count_ && d < kMaxParameters; ++i) {
      f[d++] = power_of_two(space_.values[pow2_params_[i]][index[pow2_params_[i]]]) ? 1.0 : 0.0;
    }
    return d;
  }
  static bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

  // A random valid config (64 tries). With `grid_powers` (the start's pool) each thread-count grid
  // (a size parameter evenly spaced by 2 or more, mostly not powers of two: 16, 32, 48, ..., 256)
  // takes one of its powers of two: on a GPU the values between them rarely win (convolution_milo
  // on MI250X: the best config with a block size of 48, 80, 96, ... runs at 0.09 of the optimum),
  // and a uniform start spends most of its benchmarks on them. Factors (tile sizes 1-4, 1, 2, 4,
  // 6, ..., 20) keep every value: a tile of 3 can win (A100's optimum). When no such config is
  // found, any valid one.
  bool draw_valid(Rng* rng, uint16_t* index, bool grid_powers = false) {
    grid_powers = grid_powers && grid_count_ > 0;
    int64_t values[kMaxParameters];
    for (int attempt = 0; attempt < 64; ++attempt) {
      for (int p = 0; p < space_.count; ++p) index[p] = static_cast<uint16_t>(rng->below(space_.sizes[p]));
      for (int g = 0; grid_powers && g < grid_count_; ++g) {
        index[grid_params_[g]] = grid_powers_[g][rng->below(grid_power_counts_[g])];
      }
      values_of(index, values);
      if (validity_(values)) return true;
    }
    return grid_powers && draw_valid(rng, index);
  }

  // Measures the given first configs (SearchOptions::first_configs), at most `limit` of those in
  // the space that the rules accept; returns how many were proposed.
  int first_configs(int limit) {
    uint16_t chosen[Engine::kMaxPrepared * kMaxParameters];
    int n = 0;
    for (int i = 0; i < options_.first_config_count && n < std::min(limit, static_cast<int>(kMaxPrepared)); ++i) {
      const int64_t* values = options_.first_configs + static_cast<size_t>(i) * space_.count;
      uint16_t* index = chosen + static_cast<size_t>(n) * kMaxParameters;
      if (!index_of(values, index) || !validity_(values)) continue;
      bool repeated = false;
      for (int j = 0; j < n && !repeated; ++j) {
        repeated = std::equal(index, index + space_.count, chosen + static_cast<size_t>(j) * kMaxParameters);
      }
      if (!repeated) ++n;
    }
    announce(chosen, n, n);
    for (int c = 0; c < n && !stopped_; ++c) propose(chosen + static_cast<size_t>(c) * kMaxParameters, SearchPhase::kExplore);
    return n;
  }

  // The first config of a pool of random valid ones (draw_valid with grid_powers), then each time
  // the pool's config farthest from those chosen (normalized positions): computed before any
  // benchmark, so announced first.
  void maximin_start(int n0, Rng* rng) {
    int pool = 0;
    for (int i = 0; i < kGpStartPool; ++i) {
      if (draw_valid(rng, gp_.pool + static_cast<size_t>(pool) * kMaxParameters, true)) ++pool;
    }
    if (pool == 0) return;
    uint16_t chosen[Engine::kMaxPrepared * kMaxParameters];
    const int wanted = std::min({n0, pool, static_cast<int>(kMaxPrepared)});
    for (int i = 0; i < pool; ++i) gp_.pool_distance[i] = std::numeric_limits<double>::infinity();
    int k = 0;
    int n = 0;  // chosen: fewer than wanted when the pool holds fewer distinct configs (a small space)
    for (int c = 0; c < wanted; ++c) {
      if (c > 0) {  // the farthest from those chosen (first on ties)
        k = -1;
        for (int i = 0; i < pool; ++i) {
          if (gp_.pool_distance[i] > 0.0 && (k < 0 || gp_.pool_distance[i] > gp_.pool_distance[k])) k = i;
        }
        if (k < 0) break;
      }
      ++n;
      const uint16_t* pick = gp_.pool + static_cast<size_t>(k) * kMaxParameters;
      std::copy(pick, pick + space_.count, chosen + static_cast<size_t>(c) * kMaxParameters);
      double fk[kMaxParameters];
      const int d = features_of(pick, fk, false);
      for (int i = 0; i < pool; ++i) {
        double fi[kMaxParameters];
        features_of(gp_.pool + static_cast<size_t>(i) * kMaxParameters, fi, false);
        double dist = 0.0;
        for (int j = 0; j < d; ++j) dist += (fi[j] - fk[j]) * (fi[j] - fk[j]);
        gp_.pool_distance[i] = std::min(gp_.pool_distance[i], dist);
      }
    }
    announce(chosen, n, n);
    for (int c = 0; c < n && !stopped_; ++c) propose(chosen + static_cast<size_t>(c) * kMaxParameters, SearchPhase::kExplore);
  }

  static double matern52(const double* a, const double* b, const double* ls, int d) {
    double r2 = 0.0;
    for (int j = 0; j < d; ++j) r2 += (a[j] - b[j]) * (a[j] - b[j]) / (ls[j] * ls[j]);
    const double s5 = std::sqrt(5.0 * r2);
    return (1.0 + s5 + 5.0 / 3.0 * r2) * std::exp(-s5);
  }

  // Cholesky of K = matern52 + noise I over the n points, alpha = K^-1 y; the negative log marginal
  // likelihood (up to a constant) in *nll. False when K is not positive definite.
  bool gp_fit(int n, int d, const double* ls, double* nll) {
    double* L = gp_.chol;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) {
        double v = matern52(gp_.features + static_cast<size_t>(i) * kMaxParameters,
                            gp_.features + static_cast<size_t>(j) * kMaxParameters, ls, d);
        if (i == j) v += kGpNoise;
        for (int k = 0; k < j; ++k) v -= L[i * kGpMaxPoints + k] * L[j * kGpMaxPoints + k];
        if (i == j) {
          if (!(v > 0.0)) return false;
          L[i * kGpMaxPoints + i] = std::sqrt(v);
        } else {
          L[i * kGpMaxPoints + j] = v / L[j * kGpMaxPoints + j];
        }
      }
    }
    double logdet = 0.0;
    for (int i = 0; i < n; ++i) {  // forward: L z = y
      double v = gp_.y[i];
      for (int k = 0; k < i; ++k) v -= L[i * kGpMaxPoints + k] * gp_.work[k];
      gp_.work[i] = v / L[i * kGpMaxPoints + i];
      logdet += std::log(L[i * kGpMaxPoints + i]);
    }
    double fit = 0.0;
    for (int i = 0; i < n; ++i) fit += gp_.work[i] * gp_.work[i];
    for (int i = n - 1; i >= 0; --i) {  // backward: L^T alpha = z
      double v = gp_.work[i];
      for (int k = i + 1; k < n; ++k) v -= L[k * kGpMaxPoints + i] * gp_.alpha[k];
      gp_.alpha[i] = v / L[i * kGpMaxPoints + i];
    }
    *nll = 0.5 * fit + logdet;
    return true;
  }

  // Expected improvement (minimizing) of a config under the fitted process.
  double improvement(const uint16_t* index, int n, int d, const double* ls, double y_best) {
    double f[kMaxParameters];
    features_of(index, f, gp_powers_);
    double mu = 0.0;
    const double* L = gp_.chol;
    for (int i = 0; i < n; ++i) {
      const double k = matern52(f, gp_.features + static_cast<size_t>(i) * kMaxParameters, ls, d);
      mu += k * gp_.alpha[i];
      double v = k;  // forward solve L v = k, in work
      for (int j = 0; j < i; ++j) v -= L[i * kGpMaxPoints + j] * gp_.work[j];
      gp_.work[i] = v / L[i * kGpMaxPoints + i];
    }
    double var = 1.0;
    for (int i = 0; i < n; ++i) var -= gp_.work[i] * gp_.work[i];
    const double sigma = std::sqrt(std::max(var, 1e-12));
    const double z = (y_best - mu) / sigma;
    return (y_best - mu) * 0.5 * std::erfc(-z / std::sqrt(2.0)) + sigma * std::exp(-0.5 * z * z) * 0.3989422804014327;  // 1/sqrt(2 pi)
  }

  // The length scales of largest marginal likelihood over the n fitted points: an isotropic grid,
  // then (from 8 points) one sweep over the features (each x 0.33, x 3 or x 100). Returns the
  // negative log likelihood, infinite when no trial could be fitted.
  double fit_length_scales(int n, int d, double* best) {
    double best_nll = std::numeric_limits<double>::infinity();
    double nll = 0.0;
    for (double g : {0.1, 0.2, 0.35, 0.6, 1.0}) {
      double trial[kMaxParameters];
      std::fill(trial, trial + d, g * std::sqrt(static_cast<double>(d)));
      if (gp_fit(n, d, trial, &nll) && nll < best_nll) {
        best_nll = nll;
        std::copy(trial, trial + d, best);
      }
    }
    if (!std::isfinite(best_nll) || n < 8) return best_nll;
    for (int j = 0; j < d; ++j) {
      const double base = best[j];
      for (double m : {0.33, 3.0, 100.0}) {
        double trial[kMaxParameters];
        std::copy(best, best + d, trial);
        trial[j] = std::min(base * m, 100.0);
        if (gp_fit(n, d, trial, &nll) && nll < best_nll - 1e-9) {
          best_nll = nll;
          std::copy(trial, trial + d, best);
        }
      }
    }
    return best_nll;
  }

  // Fits the process to the best measured configs and proposes the unvisited valid config of
  // largest expected improvement among random draws and the best config's neighbours. False when
  // nothing could be proposed.
  bool propose_by_improvement(Rng* rng) {
    // The measured configs: log-time; a failed one the worst + half a spread; above the median
    // flattened once 10 are measured (the model's variance goes to the good region).
    int measured = 0, ok = 0;
    double worst = -std::numeric_limits<double>::infinity(), sum = 0.0, sum2 = 0.0;
    for (size_t slot = 0; slot < slots_; ++slot) {
      const Entry& e = table_[slot];
      if (e.state == kEmpty) continue;
      ++measured;
      if (e.state != kMeasured) continue;
      const double y = std::log(std::max(e.estimate, 1e-300));
      ++ok;
      worst = std::max(worst, y);
      sum += y;
      sum2 += y * y;
    }
    if (ok == 0) return false;
    double spread = ok > 1 ? std::sqrt(std::max(sum2 / ok - (sum / ok) * (sum / ok), 0.0)) : 1.0;
    if (!(spread > 1e-9)) spread = 1.0;
    const double failed_y = worst + 0.5 * spread;
    double cap = std::numeric_limits<double>::infinity();
    if (measured >= 10 && ok >= 4) {  // the median of the ok log-times: the n/2-th smallest
      double lo = -std::numeric_limits<double>::infinity();
      for (int rank = 0; rank <= (ok - 1) / 2; ++rank) {  // ok is small (<= budget); selection by scans
        double next = std::numeric_limits<double>::infinity();
        for (size_t slot = 0; slot < slots_; ++slot) {
          const Entry& e = table_[slot];
          if (e.state != kMeasured) continue;
          const double y = std::log(std::max(e.estimate, 1e-300));
          if (y > lo && y < next) next = y;
        }
        lo = next;
      }
      cap = lo;
    }
    // The kGpMaxPoints best (smallest y), kept sorted by insertion.
    int n = 0;
    int d = 0;
    const uint16_t* points[kGpMaxPoints];  // their index vectors (the features are refilled when refitting)
    for (size_t slot = 0; slot < slots_; ++slot) {
      const Entry& e = table_[slot];
      if (e.state == kEmpty) continue;
      const double y = std::min(e.state == kMeasured ? std::log(std::max(e.estimate, 1e-300)) : failed_y, cap);
      int at = n;
      while (at > 0 && gp_.y[at - 1] > y) --at;
      if (at >= kGpMaxPoints) continue;
      const int last = std::min(n, kGpMaxPoints - 1);
      for (int i = last; i > at; --i) {
        points[i] = points[i - 1];
        gp_.y[i] = gp_.y[i - 1];
        std::copy(gp_.features + static_cast<size_t>(i - 1) * kMaxParameters,
                  gp_.features + static_cast<size_t>(i) * kMaxParameters,
                  gp_.features + static_cast<size_t>(i) * kMaxParameters);
      }
      gp_.y[at] = y;
      points[at] = e.index;
      d = features_of(e.index, gp_.features + static_cast<size_t>(at) * kMaxParameters, gp_powers_);
      n = std::min(n + 1, kGpMaxPoints);
    }
    if (d == 0) return false;  // a space of one config
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < n; ++i) mean += gp_.y[i] / n;
    for (int i = 0; i < n; ++i) var += (gp_.y[i] - mean) * (gp_.y[i] - mean) / n;
    const double sd = var > 1e-18 ? std::sqrt(var) : 1.0;
    for (int i = 0; i < n; ++i) gp_.y[i] = (gp_.y[i] - mean) / sd;

    // Length scales by marginal likelihood, refit after every benchmark while fewer than
    // kGpRefitEachBelow configs are measured (each one moves the fit most then, and such a fit is
    // cheap), then every kGpRefitEvery. Where a size parameter mixes powers of two with other
    // values (pow2_params_), the fit is made without and with their power-of-two features, and the
    // likelier model is kept until the next refit: a block size of 48 can run a hundred times slower
    // than 32 and 64 beside it, which no smooth function of the position learns (docs/search.md,
    // "Without a predictor").
    double nll = 0.0;
    const int refit_after = measured < kGpRefitEachBelow ? 1 : kGpRefitEvery;
    if (ls_points_ == 0 || measured - ls_points_ >= refit_after) {
      double best_nll = std::numeric_limits<double>::infinity();
      double best[kMaxParameters];
      bool best_powers = false, filled_powers = gp_powers_;
      for (const bool powers : {false, true}) {
        if (powers && pow2_count_ == 0) break;
        if (powers != filled_powers) {
          for (int i = 0; i < n; ++i) d = features_of(points[i], gp_.features + static_cast<size_t>(i) * kMaxParameters, powers);
          filled_powers = powers;
        }
        double scales[kMaxParameters];
        const double fitted = fit_length_scales(n, d, scales);
        if (fitted < best_nll) {
          best_nll = fitted;
          best_powers = powers;
          std::copy(scales, scales + d, best);
        }
      }
      if (!std::isfinite(best_nll)) return false;
      if (best_powers != filled_powers) {  // the features of the likelier model, again
        for (int i = 0; i < n; ++i) d = features_of(points[i], gp_.features + static_cast<size_t>(i) * kMaxParameters, best_powers);
      }
      gp_powers_ = best_powers;
      std::copy(best, best + d, ls_);
      ls_points_ = measured;
    }
    if (!gp_fit(n, d, ls_, &nll)) return false;
    const double y_best = gp_.y[0];

    // Candidates: random valid draws, and the best configs' neighbours (one parameter to any value, two +-1).
    uint16_t choice[kMaxParameters];
    double choice_ei = -1.0;
    bool choice_local = false, considering_local = false;  // the phase a benchmark is labelled with
    auto consider = [&](const uint16_t* index) {
      if (find(index) != nullptr || in_tabu(index, kGpTabuRadius)) return;
      int64_t values[kMaxParameters];
      values_of(index, values);
      if (!validity_(values)) return;
      const double ei = improvement(index, n, d, ls_, y_best);
      if (ei > choice_ei) {
        choice_ei = ei;
        choice_local = considering_local;
        std::copy(index, index + space_.count, choice);
      }
    };
    auto consider_draws = [&] {
      considering_local = false;
      for (int i = 0; i < kGpDraws; ++i) {
        uint16_t index[kMaxParameters];
        if (draw_valid(rng, index)) consider(index);
      }
    };
    // Late in the budget, only the best config's neighbourhood (random draws when it is spent),
    // except for a regroup after a restart.
    const int regroup = static_cast<int>(kGpRegroup * options_.budget);
    bool local_phase = measured >= kGpLocalFrom * options_.budget && measured >= tabu_at_ + regroup;
    if (!local_phase) consider_draws();
    // The local_count best configs that ran, farther than kGpCentreRadius from the tabu regions'
    // centres (smallest estimates, first found on ties); when the best of them improves, the
    // restart's stall count starts again.
    const Entry* local[kGpLocal] = {};
    int locals = 0;
    auto pick_centres = [&](int local_count) {
      locals = 0;
      for (size_t slot = 0; slot < slots_; ++slot) {
        const Entry& e = table_[slot];
        if (e.state != kMeasured || in_tabu(e.index, kGpCentreRadius)) continue;
        int at = locals;
        while (at > 0 && local[at - 1]->estimate > e.estimate) --at;
        if (at >= local_count) continue;
        for (int i = std::min(locals, local_count - 1); i > at; --i) local[i] = local[i - 1];
        local[at] = &e;
        locals = std::min(locals + 1, local_count);
      }
      if (locals > 0 && local[0]->estimate < region_best_) {
        region_best_ = local[0]->estimate;
        region_best_at_ = measured;
      }
    };
    pick_centres(local_phase ? 1 : kGpLocal);
    // Restart: kGpStall local benchmarks without a gain and the best config's region becomes tabu
    // (no config within kGpTabuRadius parameters of it is proposed again; the best found stays the
    // result), and the global phase resumes for a regroup. A run that settled on a local optimum
    // no change of one to three parameters improves (convolution_milo A100: read_only = 0, 0.68 of
    // the optimum) gets out of it. Not after a prior: it bars the region the prior pointed to (gemm
    // at budget 100 with the other GPUs' best configs: 1.000 without restarts, 0.950-0.968 with them).
    if (restarts_ && local_phase && locals > 0 && measured - std::max(region_best_at_, tabu_at_ + regroup) >= kGpStall &&
        tabu_count_ < kGpMaxTabu) {
      std::copy(local[0]->index, local[0]->index + space_.count, tabu_[tabu_count_++]);
      tabu_at_ = measured;
      region_best_ = std::numeric_limits<double>::infinity();
      local_phase = false;
      consider_draws();
      pick_centres(kGpLocal);
    }
    considering_local = true;
    for (int l = 0; l < locals; ++l) {
      const uint16_t* center = local[l]->index;
      for (int a = 0; a < space_.count; ++a) {
        // Every other value of one parameter: a parameter whose good values are not adjacent
        // (block sizes of 64 and 128, every multiple of 16 between them slow) stays reachable.
        for (int v = 0; v < space_.sizes[a]; ++v) {
          if (v == center[a] || v == center[a] - 1 || v == center[a] + 1) continue;
          uint16_t index[kMaxParameters];
          std::copy(center, center + space_.count, index);
          index[a] = static_cast<uint16_t>(v);
          consider(index);
        }
        for (int sa : {-1, 1}) {
          uint16_t index[kMaxParameters];
          std::copy(center, center + space_.count, index);
          if (index[a] + sa < 0 || index[a] + sa >= space_.sizes[a]) continue;
          index[a] = static_cast<uint16_t>(index[a] + sa);
          consider(index);
          for (int b = a + 1; b < space_.count; ++b) {
            for (int sb : {-1, 1}) {
              if (index[b] + sb < 0 || index[b] + sb >= space_.sizes[b]) continue;
              uint16_t pair[kMaxParameters];
              std::copy(index, index + space_.count, pair);
              pair[b] = static_cast<uint16_t>(pair[b] + sb);
              consider(pair);
            }
          }
        }
      }
    }
    if (choice_ei < 0.0 && local_phase) consider_draws();
    if (choice_ei < 0.0) return false;
    // A best config's neighbour is exploitation, a random draw exploration (the history's phase).
    propose(choice, choice_local ? SearchPhase::kExploit : SearchPhase::kExplore);
    return true;
  }

  static bool next_combination(int* combo, int k, int n) {
    int i = k - 1;
    while (i >= 0 && combo[i] == n - k + i) --i;
    if (i < 0) return false;
    ++combo[i];
    for (int j = i + 1; j < k; ++j) combo[j] = combo[j - 1] + 1;
    return true;
  }

  // One benchmark call, after the budget and time checks; false when the search must stop.
  bool measure(const int64_t* values, SearchPhase phase, bool repeat, double* time, bool* ok) {
    if (result_->benchmarks >= options_.budget) {
      stop(SearchStop::kBudget);
      return false;
    }
    const Clock::time_point before = Clock::now();
    if (options_.time_limit > 0.0 && std::chrono::duration<double>(before - start_).count() >= options_.time_limit) {
      stop(SearchStop::kTimeLimit);
      return false;
    }
    double t = 0.0;
    const BenchmarkStatus status = benchmark_.run(benchmark_.context, values, space_.count, &t);
    benchmark_seconds_ += std::chrono::duration<double>(Clock::now() - before).count();
    if (status == BenchmarkStatus::kAbort) {
      error_ = Status::error(StatusCode::kAborted, "the benchmark stopped the search after %d benchmarks",
                             result_->benchmarks);
      stopped_ = true;
      return false;
    }
    if (status != BenchmarkStatus::kOk && status != BenchmarkStatus::kFailed) {
      error_ = Status::error(StatusCode::kInvalidArgument, "the benchmark returned an unknown status %d",
                             static_cast<int>(status));
      stopped_ = true;
      return false;
    }
    if (status == BenchmarkStatus::kOk && !(t >= 0.0 && std::isfinite(t))) {
      error_ = Status::error(StatusCode::kInvalidArgument,
                             "the benchmark returned time %g (a time must be finite and >= 0; report a failed "
                             "config as BenchmarkStatus::kFailed)",
                             t);
      stopped_ = true;
      return false;
    }
    *ok = status == BenchmarkStatus::kOk;
    *time = *ok ? t : 0.0;
    ++result_->benchmarks;
    result_->explore_benchmarks += phase == SearchPhase::kExplore;
    result_->failed_benchmarks += !*ok;
    result_->repeats += repeat;
    SearchTrial trial;
    std::copy(values, values + space_.count, trial.values);
    trial.time = *time;
    trial.failed = !*ok;
    trial.repeat = repeat;
    trial.phase = phase;
    if (result_->trials < history_capacity_) history_[result_->trials++] = trial;
    if (options_.observer.trial != nullptr && pending_count_ < kMaxPending) pending_[pending_count_++] = trial;
    return true;
  }

  // Tells the observer of the trials of the last proposal, with the best as it now stands.
  void notify() {
    if (options_.observer.trial == nullptr) return;
    int64_t best_values[kMaxParameters];
    if (found_) values_of(best_, best_values);
    const int first = result_->benchmarks - pending_count_;
    for (int i = 0; i < pending_count_; ++i) {
      options_.observer.trial(options_.observer.context, pending_[i], first + i + 1, found_ ? best_values : nullptr,
                              found_ ? best_estimate_ : 0.0);
    }
    pending_count_ = 0;
  }

  void stop(SearchStop why) {
    stopped_ = true;
    result_->stop = why;
  }

  void write_result_best() {
    result_->found = found_;
    values_of(best_, result_->best);
    result_->best_time = best_estimate_;
  }

  uint64_t hash(const uint16_t* index) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (int p = 0; p < space_.count; ++p) {
      h = (h ^ index[p]) * 1099511628211ull;
      h = (h ^ (index[p] >> 8)) * 1099511628211ull;
    }
    return h ^ (h >> 29);
  }
  Entry* find(const uint16_t* index) {
    for (size_t slot = hash(index) & (slots_ - 1);; slot = (slot + 1) & (slots_ - 1)) {
      Entry& e = table_[slot];
      if (e.state == kEmpty) return nullptr;
      if (std::equal(index, index + space_.count, e.index)) return &e;
    }
  }
  Entry* insert(const uint16_t* index) {
    size_t slot = hash(index) & (slots_ - 1);
    while (table_[slot].state != kEmpty) slot = (slot + 1) & (slots_ - 1);
    Entry& e = table_[slot];
    std::copy(index, index + space_.count, e.index);
    e.state = kFailed;  // until measured; never left empty, so the probe chains stay intact
    e.estimate = 0.0;
    return &e;
  }

  const Space& space_;
  const Validity& validity_;
  const SearchOptions& options_;
  Benchmark benchmark_;
  Entry* table_;
  size_t slots_;
  SearchTrial* history_;
  int history_capacity_;
  SearchResult* result_;
  Clock::time_point start_;
  double benchmark_seconds_ = 0.0;
  int max_radius_ = 1;
  int max_moved_ = 1;
  bool stopped_ = false;
  bool improved_ = false;
  Status error_;
  bool found_ = false;
  uint16_t best_[kMaxParameters] = {};
  double best_estimate_ = 0.0;
  double best_samples_[kMaxRecheckRuns + 1] = {};
  int best_count_ = 0;
  // Trials of the proposal under way, for the observer: one measurement, then at most
  // recheck_runs more of it and as many of the best.
  static constexpr int kMaxPending = 1 + 2 * kMaxRecheckRuns;
  SearchTrial pending_[kMaxPending];
  int pending_count_ = 0;
  // The surrogate (search without a predictor).
  static constexpr double kGpNoise = 1e-3;
  GpScratch gp_;
  double ls_[kMaxParameters] = {};
  int ls_points_ = 0;  // configs measured when the length scales were last fitted
  bool gp_powers_ = false;  // whether the fitted model has the power-of-two features
  bool restarts_ = true;  // off when a prior (SearchOptions::first_configs) started the search
  // The restarts' tabu regions (centres), when the last began, and the best config outside them.
  uint16_t tabu_[kGpMaxTabu][kMaxParameters] = {};
  int tabu_count_ = 0;
  int tabu_at_ = -kMaxSearchBudget;
  double region_best_ = std::numeric_limits<double>::infinity();
  int region_best_at_ = 0;
  // Whether `index` is within `radius` changed parameters of a restart's tabu centre.
  bool in_tabu(const uint16_t* index, int radius) const {
    for (int t = 0; t < tabu_count_; ++t) {
      int changed = 0;
      for (int p = 0; p < space_.count; ++p) changed += index[p] != tabu_[t][p];
      if (changed <= radius) return true;
    }
    return false;
  }
  int pow2_params_[kMaxParameters] = {};  // the size parameters that mix powers of two with other values
  int pow2_count_ = 0;
  // The thread-count grids (draw_valid's grid_powers) and the positions of their powers of two
  // (distinct positive int64 values hold at most 63 of them).
  int grid_params_[kMaxParameters] = {};
  int grid_count_ = 0;
  uint16_t grid_powers_[kMaxParameters][63] = {};
  int grid_power_counts_[kMaxParameters] = {};
};

// The regions of a search from a model.
struct ModelScratch {
  unsigned char* predict = nullptr;  // predict()'s scratch
  size_t predict_bytes = 0;
  Candidate* candidates = nullptr;   // beam_width
  int64_t* values = nullptr;         // every position's value list, one after another
  Entry* table = nullptr;
  GpScratch gp;                      // a model without a predictor: the surrogate
};

// Values a position can take: tokens the vocabulary allows there, end tokens excepted.
int allowed_value_count(const Model& model) {
  int count = 0;
  for (int p = 0; p < model.parameter_count(); ++p) {
    for (int t = 0; t < model.token_count(); ++t) count += model.token_allowed(p, t) && !model.is_end_token(t);
  }
  return count;
}

void carve_model_scratch(const Model& model, const SearchOptions& options, Carver* carver, ModelScratch* out) {
  const int beam = model.has_predictor() ? std::max(1, std::min(options.beam_width, kMaxBeamWidth)) : 0;
  out->predict_bytes = beam ? model.scratch_bytes(beam) : 0;
  out->predict = carver->take<unsigned char>(out->predict_bytes);
  out->candidates = carver->take<Candidate>(static_cast<size_t>(beam));
  out->values = carver->take<int64_t>(static_cast<size_t>(allowed_value_count(model)));
  out->table = carver->take<Entry>(table_slots(options.budget));
  if (!model.has_predictor()) carve_gp(carver, &out->gp);
}

Status check_common(const SearchOptions& options, Benchmark benchmark, SearchTrial* history, int history_capacity,
                    SearchResult* result, int parameter_count) {
  if (result == nullptr) return Status::error(StatusCode::kInvalidArgument, "search needs a SearchResult");
  if (!benchmark) return Status::error(StatusCode::kInvalidArgument, "search needs a Benchmark (its run is null)");
  if (history_capacity < 0 || (history_capacity > 0 && history == nullptr)) {
    return Status::error(StatusCode::kInvalidArgument, "search history: capacity %d with %s array", history_capacity,
                         history ? "an" : "no");
  }
  return check_options(options, parameter_count);
}

}  // namespace

const char* search_stop_name(SearchStop stop) {
  switch (stop) {
    case SearchStop::kBudget: return "budget";
    case SearchStop::kTimeLimit: return "time limit";
    case SearchStop::kConverged: return "converged";
  }
  return "?";
}

size_t search_scratch_bytes(const Model& model, const SearchOptions& options) {
  if (!model.loaded() || (model.has_predictor() && !model.is_seq2seq()) || model.parameter_count() == 0) return 0;
  Carver counter(nullptr, 0);
  ModelScratch unused;
  carve_model_scratch(model, options, &counter, &unused);
  return with_alignment_slack(counter.used());
}

size_t search_scratch_bytes(const SearchSpace& /*space*/, const SearchOptions& options) {
  Carver counter(nullptr, 0);
  counter.take<Entry>(table_slots(options.budget));
  GpScratch unused;
  carve_gp(&counter, &unused);
  return with_alignment_slack(counter.used());
}

Status search(const Model& model, const Problem& problem, const SearchOptions& options, Benchmark benchmark,
              void* scratch, size_t scratch_size, SearchTrial* history, int history_capacity, SearchResult* result) {
  if (result != nullptr) *result = SearchResult();
  const bool predictor = model.loaded() && model.has_predictor();
  if (!model.loaded() || model.parameter_count() == 0 ||
      (predictor && (!model.is_seq2seq() || model.root()->encoding() == nullptr))) {
    return Status::error(StatusCode::kInvalidArgument,
                         "search needs a sequence-to-sequence model with a feature encoding, or a kernel definition");
  }
  TUNECAST_RETURN_IF_ERROR(check_common(options, benchmark, history, history_capacity, result, model.parameter_count()));
  if (options.beam_width < 1 || options.beam_width > kMaxBeamWidth) {
    return Status::error(StatusCode::kInvalidArgument, "search beam width %d is outside 1..%d", options.beam_width,
                         kMaxBeamWidth);
  }
  if (predictor && (options.explore < -1 || options.explore == 0 || options.explore > options.beam_width)) {
    return Status::error(StatusCode::kInvalidArgument,
                         "search explore %d is outside 1..%d (the beam width), or -1 for min(beam width, 0.7 budget)",
                         options.explore, options.beam_width);
  }
  if (!predictor && (options.explore < -1 || options.explore == 0)) {  // the start's configs: any count
    return Status::error(StatusCode::kInvalidArgument, "search explore %d must be positive, or -1 for the default start",
                         options.explore);
  }
  const size_t needed = search_scratch_bytes(model, options);
  if (scratch == nullptr || scratch_size < needed) {
    return Status::error(StatusCode::kBufferTooSmall, "search scratch holds %zu bytes, %zu needed",
                         scratch ? scratch_size : 0, needed);
  }
  Carver carver(scratch, scratch_size);
  ModelScratch layout;
  carve_model_scratch(model, options, &carver, &layout);
  if (carver.overflow()) return Status::error(StatusCode::kBufferTooSmall, "search scratch buffer too small");

  // The space: each position's definition domain, else its vocabulary values, sorted, distinct.
  Space space;
  space.count = model.parameter_count();
  int64_t* next = layout.values;
  for (int p = 0; p < space.count; ++p) {
    const int64_t* domain = nullptr;
    int domain_size = 0;
    if (model.parameter_domain(p, &domain, &domain_size)) {
      space.values[p] = domain;
      space.sizes[p] = domain_size;
      if (domain_size > 65535) {
        return Status::error(StatusCode::kUnsupported, "parameter %d (%s) has %d values (1..65535 searchable)", p,
                             model.parameter_name(p), domain_size);
      }
      continue;
    }
    int64_t* list = next;
    for (int t = 0; t < model.token_count(); ++t) {
      if (model.token_allowed(p, t) && !model.is_end_token(t)) *next++ = model.token_value(t);
    }
    std::sort(list, next);
    next = std::unique(list, next);
    space.values[p] = list;
    space.sizes[p] = static_cast<int>(next - list);
    if (space.sizes[p] == 0 || space.sizes[p] > 65535) {
      return Status::error(StatusCode::kUnsupported, "parameter %d (%s) has %d values in the vocabulary (1..65535 searchable)",
                           p, model.parameter_name(p), space.sizes[p]);
    }
  }

  Validity validity;
  validity.model = &model;
  validity.problem = &problem;
  validity.use_constraints = options.use_model_constraints;
  validity.validator = options.validator;

  if (!predictor) {  // a kernel definition alone: explore by drawing from the space
    const Clock::time_point start = Clock::now();
    int failed_condition = -1;
    if (!check_applicability(model, problem, &failed_condition)) result->not_applicable = failed_condition;
    result->out_of_range_fields = model.fields_out_of_range(problem);
    Engine engine(space, validity, options, benchmark, layout.table, table_slots(options.budget), history,
                  history_capacity, result, start);
    engine.set_surrogate(layout.gp);
    Rng rng(options.seed);
    engine.run_free(options.explore > 0 ? options.explore : default_free_start(options.budget), &rng);
    engine.finish();
    return engine.error();
  }

  const int beam = options.beam_width;
  PredictOptions predict_options;
  predict_options.beam_width = beam;
  predict_options.use_model_constraints = options.use_model_constraints;
  predict_options.validator = options.validator;
  PredictInfo info;
  const Clock::time_point start = Clock::now();
  Status status = predict(model, problem, predict_options, layout.predict, layout.predict_bytes, layout.candidates,
                          beam, &info);
  result->out_of_range_fields = info.out_of_range_fields;
  result->not_applicable = info.not_applicable;
  if (!status) return status;

  Engine engine(space, validity, options, benchmark, layout.table, table_slots(options.budget), history,
                history_capacity, result, start);

  // Explore: the beam's distinct candidates, best first.
  const Candidate* candidates = layout.candidates;
  for (int i = 0; i < info.candidates; ++i) {
    bool repeated = false;
    for (int j = 0; j < i && !repeated; ++j) {
      repeated = std::equal(candidates[i].values, candidates[i].values + space.count, candidates[j].values);
    }
    result->distinct_candidates += !repeated;
  }
  const int explore = options.explore > 0 ? options.explore : default_explore(beam, options.budget);
  if (benchmark.prepare != nullptr) {
    uint16_t listed[Engine::kMaxPrepared * kMaxParameters];
    int n = 0;
    for (int i = 0; i < info.candidates && n < Engine::kMaxPrepared; ++i) {
      if (engine.index_of(candidates[i].values, listed + n * kMaxParameters)) ++n;
    }
    engine.announce(listed, n, std::min(explore, options.budget));
  }
  uint16_t first[kMaxParameters] = {};
  bool have_first = false;
  int explored = 0;
  int unproposed = 0;  // the first beam candidate not proposed yet
  for (; unproposed < info.candidates && explored < explore && !engine.stopped(); ++unproposed) {
    uint16_t index[kMaxParameters];
    if (!engine.index_of(candidates[unproposed].values, index)) continue;  // cannot happen: beam values come from the vocabulary
    if (!have_first) {
      std::copy(index, index + space.count, first);
      have_first = true;
    }
    explored += engine.propose(index, SearchPhase::kExplore) == Proposal::kMeasured;
  }
  if (have_first && !engine.stopped()) engine.exploit(first);
  // Converged with budget left: the beam's unproposed candidates, best first; one that beats the best
  // restarts the descent from it (Droplet restarts from its unproposed sample the same way).
  for (; unproposed < info.candidates && !engine.stopped() && result->stop == SearchStop::kConverged; ++unproposed) {
    uint16_t index[kMaxParameters];
    if (!engine.index_of(candidates[unproposed].values, index)) continue;
    if (engine.propose(index, SearchPhase::kExplore) == Proposal::kMeasured && engine.improved()) {
      engine.exploit(index);
    }
  }
  engine.finish();  // its clock started before predict: the predictor's time is the search's too
  return engine.error();
}

Status search(const SearchSpace& space_in, const int64_t* start, const SearchOptions& options, Benchmark benchmark,
              void* scratch, size_t scratch_size, SearchTrial* history, int history_capacity, SearchResult* result) {
  if (result != nullptr) *result = SearchResult();
  TUNECAST_RETURN_IF_ERROR(check_common(options, benchmark, history, history_capacity, result, space_in.parameter_count));
  Space space;
  space.count = space_in.parameter_count;
  for (int p = 0; p < space.count; ++p) {
    const int n = space_in.value_counts[p];
    if (space_in.values[p] == nullptr || n < 1 || n > 65535) {
      return Status::error(StatusCode::kInvalidArgument, "search space parameter %d has %d values (1..65535)", p, n);
    }
    for (int i = 1; i < n; ++i) {
      if (!(space_in.values[p][i - 1] < space_in.values[p][i])) {
        return Status::error(StatusCode::kInvalidArgument,
                             "search space parameter %d: values must be sorted ascending and distinct (item %d)", p, i);
      }
    }
    space.values[p] = space_in.values[p];
    space.sizes[p] = n;
  }
  if (options.explore < -1 || options.explore == 0) {
    return Status::error(StatusCode::kInvalidArgument, "search explore %d must be positive, or -1 for the default",
                         options.explore);
  }
  const size_t needed = search_scratch_bytes(space_in, options);
  if (scratch == nullptr || scratch_size < needed) {
    return Status::error(StatusCode::kBufferTooSmall, "search scratch holds %zu bytes, %zu needed",
                         scratch ? scratch_size : 0, needed);
  }
  Carver carver(scratch, scratch_size);
  Entry* table = carver.take<Entry>(table_slots(options.budget));
  GpScratch gp;
  carve_gp(&carver, &gp);
  if (carver.overflow()) return Status::error(StatusCode::kBufferTooSmall, "search scratch buffer too small");

  Validity validity;
  validity.space = &space_in;
  Engine engine(space, validity, options, benchmark, table, table_slots(options.budget), history, history_capacity,
                result, Clock::now());
  if (start == nullptr) {  // no start: the surrogate-guided search
    engine.set_surrogate(gp);
    Rng rng(options.seed);
    engine.run_free(options.explore > 0 ? options.explore : default_free_start(options.budget), &rng);
    engine.finish();
    return engine.error();
  }
  uint16_t index[kMaxParameters];
  if (!engine.index_of(start, index)) {
    for (int p = 0; p < space.count; ++p) {
      if (!std::binary_search(space.values[p], space.values[p] + space.sizes[p], start[p])) {
        return Status::error(StatusCode::kInvalidArgument, "the start config's value %lld (parameter %d) is not among its values",
                             static_cast<long long>(start[p]), p);
      }
    }
    return Status::error(StatusCode::kInvalidArgument, "the start config is not in the space");
  }
  if (!validity(start)) {
    return Status::error(StatusCode::kInvalidArgument, "the start config breaks the space's validity rule");
  }
  engine.propose(index, SearchPhase::kExplore);
  if (!engine.stopped()) engine.exploit(index);
  engine.finish();
  return engine.error();
}

}  // namespace tunecast
