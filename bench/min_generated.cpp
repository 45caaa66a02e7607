// The smallest integrator of a generated predictor: MIOpen's gfx908 ConvAsm1x1U KTN emitted as
// C++ (`tunecast emit-cpp`, weights in the executable, max beam 100) and linked with the runtime
// library. It predicts once, so the benchmark can compare its peak RSS with an empty C++ program.
//
//   tunecast_min_generated BEAM "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1"
//
// Prints "rss_kb <at start> <peak>" on stderr for the benchmark.
#include <cstdio>
#include <cstdlib>

#include "gfx908_ConvAsm1x1U.h"
#include "peak_rss.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s BEAM PROBLEM\n", argv[0]);
    return 2;
  }
  using Predictor = probe::gfx908_ConvAsm1x1U;
  const long rss_start = tunecast::bench::peak_rss_kb();
  tunecast::Problem problem;
  tunecast::Status status = tunecast::parse_problem(argv[2], &problem);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message());
    return 2;
  }
  tunecast::PredictOptions options;
  options.beam_width = std::atoi(argv[1]);
  static Predictor::Scratch scratch;  // static storage, as an integrator would hold it
  static tunecast::Candidate out[Predictor::kMaxBeam];
  status = Predictor::predict(problem, options, &scratch, out, Predictor::kMaxBeam, nullptr);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message());
    return 3;
  }
  for (int p = 0; p < out[0].length; ++p) std::printf("%lld ", static_cast<long long>(out[0].values[p]));
  std::printf("\n");
  std::fprintf(stderr, "rss_kb %ld %ld\n", rss_start, tunecast::bench::peak_rss_kb());
  return 0;
}
