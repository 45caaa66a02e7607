// An empty C++ program (libstdc++ loaded, nothing else): the baseline of the benchmark's peak-RSS
// figures. Prints "rss_kb <at start> <peak>" on stderr, like the probes that predict.
#include <string>

#include "peak_rss.h"

int main(int argc, char** argv) {
  const std::string self = argc > 0 ? argv[0] : "";  // uses libstdc++, as any C++ program does
  const long kb = tunecast::bench::peak_rss_kb();
  std::fprintf(stderr, "rss_kb %ld %ld (%zu)\n", kb, tunecast::bench::peak_rss_kb(), self.size());
  return 0;
}
