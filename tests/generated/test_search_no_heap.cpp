// The tuning search allocates nothing: every parity model (shipped predictors, MIOpen's KTN when
// present, the PyTorch fixtures) searched with a synthetic benchmark while the allocation counter
// is armed (tests/test_search.cpp checks what the search finds).
#include <doctest.h>

#include <cmath>
#include <vector>

#include "alloc_counter.h"
#include "parity_models.h"
#include "tunecast/search.h"

namespace {

// A smooth function of the values, failing now and then (a failed config is a result).
tunecast::BenchmarkStatus synthetic(const int64_t* values, int count, double* time) {
  double t = 1.0;
  int64_t sum = 0;
  for (int i = 0; i < count; ++i) {
    const double d = std::log2(static_cast<double>(values[i] > 0 ? values[i] : 1)) - 2.0;
    t += d * d * (1.0 + 0.25 * i);
    sum += values[i];
  }
  if (sum % 7 == 3) return tunecast::BenchmarkStatus::kFailed;
  *time = t;
  return tunecast::BenchmarkStatus::kOk;
}

void check_search_no_heap(const char* name, const unsigned char* blob, size_t size) {
  CAPTURE(name);
  tunecast::Model model;
  REQUIRE(tunecast::Model::load(blob, size, &model).is_ok());
  tunecast::Problem problem;
  REQUIRE(tunecast::parse_problem("dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906", &problem).is_ok());
  tunecast::SearchOptions options;
  options.budget = 60;
  options.recheck_runs = 2;
  tunecast::Benchmark benchmark;
  benchmark.run = [](void*, const int64_t* values, int count, double* time) { return synthetic(values, count, time); };
  std::vector<unsigned char> scratch(tunecast::search_scratch_bytes(model, options));
  std::vector<tunecast::SearchTrial> history(60);
  tunecast::SearchResult result;
  alloc_counter::arm();
  const tunecast::Status status = tunecast::search(model, problem, options, benchmark, scratch.data(), scratch.size(),
                                                   history.data(), 60, &result);
  const long allocations = alloc_counter::disarm();
  if (status.code() == tunecast::StatusCode::kNoValidCandidate) return;  // nothing to search from
  REQUIRE_MESSAGE(status.is_ok(), status.message());
  CHECK(result.benchmarks > 0);
  CHECK(allocations == 0);

  // Model-free, over the value lists of the best config's neighbourhood.
  static const int64_t values[] = {1, 2, 4, 8, 16, 32, 64};
  tunecast::SearchSpace space;
  space.parameter_count = 5;
  for (int p = 0; p < 5; ++p) {
    space.values[p] = values;
    space.value_counts[p] = 7;
  }
  const int64_t start[5] = {1, 1, 1, 1, 1};
  std::vector<unsigned char> free_scratch(tunecast::search_scratch_bytes(space, options));
  alloc_counter::arm();
  const tunecast::Status free_status = tunecast::search(space, start, options, benchmark, free_scratch.data(),
                                                        free_scratch.size(), history.data(), 60, &result);
  CHECK(alloc_counter::disarm() == 0);
  CHECK(free_status.is_ok());
}

}  // namespace

#define TUNECAST_SEARCH_NO_HEAP_TEST(name)                                                       \
  TEST_CASE("tuning search over " #name " allocates nothing") {                                  \
    check_search_no_heap(#name, parity::name##_blob_data(), parity::name##_blob_size());         \
  }
TUNECAST_PARITY_MODELS(TUNECAST_SEARCH_NO_HEAP_TEST)
