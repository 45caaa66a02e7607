// The trivial predictors every model is measured against (docs/training.md defines them; the
// Python versions in tools/tunecast_train/baselines.py give the same candidates).
#pragma once

#include <cstdint>
#include <vector>

#include "tunecast/problem.h"

namespace tunecast::codegen {

using ParamVector = std::vector<int64_t>;

// Distinct training vectors by descending count, ties by first occurrence.
std::vector<ParamVector> most_frequent(const std::vector<ParamVector>& train);

// Nearest neighbours on standardized features (log2(max(v,1)) of n c k h w y x pad_h pad_w
// stride_h stride_w g, then dir raw; training mean and population std, std 0 -> 1): for each
// query, the distinct tuned vectors of training problems by ascending distance, ties by training
// order, at most `kmax`.
class NearestNeighbours {
 public:
  NearestNeighbours(const std::vector<Problem>& train_problems, const std::vector<ParamVector>& train_params);
  std::vector<ParamVector> query(const Problem& problem, size_t kmax) const;

 private:
  std::vector<std::vector<double>> features_;
  std::vector<ParamVector> params_;
  std::vector<double> mean_, std_;
  std::vector<double> standardize(const Problem& problem) const;
};

}  // namespace tunecast::codegen
