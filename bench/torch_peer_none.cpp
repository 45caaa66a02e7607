// Built when find_package(Torch) fails: the benchmark reports the libtorch column as absent.
#include "torch_peer.h"

namespace tunecast::bench {

std::unique_ptr<TorchPeer> make_torch_peer(const ir::Model&, std::string* why) {
  *why = "libtorch not found at configure time (Debian: libtorch-dev)";
  return nullptr;
}

std::string torch_description() { return "libtorch: not built in"; }

}  // namespace tunecast::bench
