#include "tunecast/codegen/baselines.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace tunecast::codegen {
namespace {

constexpr ProblemField kLog2Fields[] = {
    ProblemField::kN,    ProblemField::kC,    ProblemField::kK,       ProblemField::kH,
    ProblemField::kW,    ProblemField::kY,    ProblemField::kX,       ProblemField::kPadH,
    ProblemField::kPadW, ProblemField::kStrideH, ProblemField::kStrideW, ProblemField::kG};

std::vector<double> raw_features(const Problem& p) {
  std::vector<double> f;
  for (ProblemField field : kLog2Fields) {
    f.push_back(std::log2(static_cast<double>(std::max<int64_t>(p.get(field), 1))));
  }
  f.push_back(static_cast<double>(p.get(ProblemField::kDir)));
  return f;
}

}  // namespace

std::vector<ParamVector> most_frequent(const std::vector<ParamVector>& train) {
  std::map<ParamVector, std::pair<size_t, size_t>> stats;  // vector -> (count, first index)
  for (size_t i = 0; i < train.size(); ++i) {
    auto [it, inserted] = stats.try_emplace(train[i], 0, i);
    ++it->second.first;
  }
  std::vector<std::pair<ParamVector, std::pair<size_t, size_t>>> order(stats.begin(), stats.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.first != b.second.first ? a.second.first > b.second.first
                                            : a.second.second < b.second.second;
  });
  std::vector<ParamVector> out;
  for (auto& entry : order) out.push_back(entry.first);
  return out;
}

NearestNeighbours::NearestNeighbours(const std::vector<Problem>& problems,
                                     const std::vector<ParamVector>& params)
    : params_(params) {
  for (const Problem& p : problems) features_.push_back(raw_features(p));
  const size_t dims = features_.empty() ? 0 : features_[0].size();
  mean_.assign(dims, 0.0);
  std_.assign(dims, 0.0);
  for (const auto& f : features_) {
    for (size_t d = 0; d < dims; ++d) mean_[d] += f[d];
  }
  for (double& m : mean_) m /= std::max<size_t>(features_.size(), 1);
  for (const auto& f : features_) {
    for (size_t d = 0; d < dims; ++d) std_[d] += (f[d] - mean_[d]) * (f[d] - mean_[d]);
  }
  for (double& s : std_) {
    s = std::sqrt(s / std::max<size_t>(features_.size(), 1));
    if (s == 0.0) s = 1.0;
  }
  for (auto& f : features_) {
    for (size_t d = 0; d < dims; ++d) f[d] = (f[d] - mean_[d]) / std_[d];
  }
}

std::vector<double> NearestNeighbours::standardize(const Problem& problem) const {
  std::vector<double> f = raw_features(problem);
  for (size_t d = 0; d < f.size(); ++d) f[d] = (f[d] - mean_[d]) / std_[d];
  return f;
}

std::vector<ParamVector> NearestNeighbours::query(const Problem& problem, size_t kmax) const {
  const std::vector<double> q = standardize(problem);
  std::vector<double> distance(features_.size());
  for (size_t i = 0; i < features_.size(); ++i) {
    double d = 0.0;
    for (size_t j = 0; j < q.size(); ++j) d += (features_[i][j] - q[j]) * (features_[i][j] - q[j]);
    distance[i] = d;
  }
  std::vector<size_t> order(features_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return distance[a] < distance[b]; });
  std::vector<ParamVector> out;
  std::set<ParamVector> seen;
  for (size_t i : order) {
    if (seen.insert(params_[i]).second) {
      out.push_back(params_[i]);
      if (out.size() == kmax) break;
    }
  }
  return out;
}

}  // namespace tunecast::codegen
