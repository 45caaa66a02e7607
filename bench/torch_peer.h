// The same network in libtorch (one thread), built from the compiler's IR weights: the
// benchmark's reference point for "what a general framework costs". Kept behind this header so
// only torch_peer.cpp sees the torch headers (and builds only when find_package(Torch) succeeds).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tunecast/codegen/model_ir.h"

namespace tunecast::bench {

class TorchPeer {
 public:
  virtual ~TorchPeer() = default;

  // Encoder once, then positions decoder steps at batch 1, each picking the best-scoring token
  // whose `allowed[position][token]` is true (the runtime's vocabulary restriction, no
  // constraints). Returns the token indices.
  virtual std::vector<int> greedy(const std::vector<float>& features,
                                  const std::vector<std::vector<bool>>& allowed) = 0;

  // One decoder step over `batch` rows (states prepared by prepare_step).
  virtual void prepare_step(int batch) = 0;
  virtual void step() = 0;
};

// nullptr (and *why) when libtorch is not built in or the model uses a layer the peer lacks.
std::unique_ptr<TorchPeer> make_torch_peer(const ir::Model& model, std::string* why);

// "libtorch 1.13.1, 1 thread" or why it is absent.
std::string torch_description();

}  // namespace tunecast::bench
