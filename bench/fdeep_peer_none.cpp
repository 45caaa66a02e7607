// Built without -DTUNECAST_FDEEP_DIR: the benchmark reports the frugally-deep goal as not measured.
#include "fdeep_peer.h"

namespace tunecast::bench {

std::unique_ptr<FdeepPeer> load_fdeep_peer(const std::string&, std::string* why) {
  *why = "not built in (cmake -DTUNECAST_FDEEP_DIR=DIR with frugally-deep/ and FunctionalPlus/ in DIR)";
  return nullptr;
}

std::string fdeep_description() { return "frugally-deep: not built in"; }

}  // namespace tunecast::bench
