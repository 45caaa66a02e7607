// The frugally-deep peer (fdeep_peer.h), compiled as MIOpen compiles it: -O3, no -march.
#include "fdeep_peer.h"

#include <fdeep/fdeep.hpp>

#include <algorithm>
#include <exception>

namespace tunecast::bench {
namespace {

class Peer : public FdeepPeer {
 public:
  Peer(fdeep::model encoder, fdeep::model decoder) : encoder_(std::move(encoder)), decoder_(std::move(decoder)) {}

  std::vector<int> greedy(const std::vector<float>& features, int rows, int cols,
                          const std::vector<std::vector<bool>>& allowed) override {
    const fdeep::tensor input(fdeep::tensor_shape(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)),
                              features);
    fdeep::tensors context = encoder_.predict({input});
    std::vector<int> tokens;
    float previous = 0.0f;  // MIOpen's start token
    for (const std::vector<bool>& step_allowed : allowed) {
      fdeep::tensors inputs = {fdeep::tensor(fdeep::tensor_shape(1), std::vector<float>(1, previous))};
      inputs.insert(inputs.end(), context.begin(), context.end());
      fdeep::tensors outputs = decoder_.predict(inputs);
      const std::vector<float> scores = outputs[0].to_vector();
      int best = -1;
      for (int t = 0; t < static_cast<int>(scores.size()) && t < static_cast<int>(step_allowed.size()); ++t) {
        if (step_allowed[t] && (best < 0 || scores[t] > scores[best])) best = t;
      }
      tokens.push_back(best);
      if (best < 0) break;
      previous = static_cast<float>(best);
      context.assign(outputs.begin() + 1, outputs.end());
    }
    return tokens;
  }

 private:
  fdeep::model encoder_, decoder_;
};

}  // namespace

std::unique_ptr<FdeepPeer> load_fdeep_peer(const std::string& prefix, std::string* why) {
  try {
    fdeep::model encoder = fdeep::load_model(prefix + "_encoder.ktn.model", true, fdeep::dev_null_logger);
    fdeep::model decoder = fdeep::load_model(prefix + "_decoder.ktn.model", true, fdeep::dev_null_logger);
    return std::make_unique<Peer>(std::move(encoder), std::move(decoder));
  } catch (const std::exception& e) {
    *why = std::string("frugally-deep could not load ") + prefix + ": " + e.what();
    return nullptr;
  }
}

std::string fdeep_description() { return "frugally-deep " TUNECAST_FDEEP_VERSION ", -O3"; }

}  // namespace tunecast::bench
