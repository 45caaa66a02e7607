// MIOpen's own runtime for its KTNs, frugally-deep (Keras JSON, header-only, with Eigen and
// FunctionalPlus), as the benchmark's peer: issue 22 asks tunecast's in-process greedy to be >= 5x
// faster than frugally-deep at MIOpen's pin measured on the same machine. frugally-deep is not a
// Debian package, so the peer is built only when -DTUNECAST_FDEEP_DIR names a folder holding
// frugally-deep/include and FunctionalPlus/include checkouts (docs/benchmarks.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tunecast::bench {

class FdeepPeer {
 public:
  virtual ~FdeepPeer() = default;
  // MIOpen's procedure with the validity check left out: the encoder once on the problem's
  // rows x cols features, then one decoder step per position fed the previous token and the
  // four LSTM states, each taking the best-scoring token that `allowed[step][token]` permits.
  virtual std::vector<int> greedy(const std::vector<float>& features, int rows, int cols,
                                  const std::vector<std::vector<bool>>& allowed) = 0;
};

// Loads `prefix`_encoder.ktn.model and _decoder.ktn.model as MIOpen does (fdeep::load_model with
// its test-vector check on). nullptr and *why when the peer is not built in or loading fails.
std::unique_ptr<FdeepPeer> load_fdeep_peer(const std::string& prefix, std::string* why);

// "frugally-deep 0.15.20" or why it is absent.
std::string fdeep_description();

}  // namespace tunecast::bench
