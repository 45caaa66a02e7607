// The smallest integrator of the runtime: map a blob, load it, predict once, print the best
// vector. It links the runtime library and nothing else, so it is what the benchmark measures
// for peak memory (a process of its own, no compiler or libtorch mapped) and for code size.
//
//   tunecast_min_predict MODEL.tcm BEAM "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1"
//
// Prints "rss_kb <at start> <peak> scratch <bytes> blob <bytes>" on stderr for the benchmark.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "peak_rss.h"
#include "tunecast/predict.h"

using tunecast::bench::peak_rss_kb;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.tcm BEAM PROBLEM\n", argv[0]);
    return 2;
  }
  const long rss_start = peak_rss_kb();
  const int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    std::fprintf(stderr, "cannot open %s\n", argv[1]);
    return 1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (data == MAP_FAILED) return 1;

  tunecast::Model model;
  tunecast::Status status = tunecast::Model::load(data, size, &model);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message());
    return 1;
  }
  tunecast::Problem problem;
  status = tunecast::parse_problem(argv[3], &problem);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message());
    return 2;
  }
  tunecast::PredictOptions options;
  options.beam_width = std::atoi(argv[2]);
  const size_t scratch_size = model.scratch_bytes(options.beam_width);
  // Static storage, not the heap: an integrator embedding the runtime would do the same.
  static unsigned char scratch[64 << 20];
  static tunecast::Candidate out[tunecast::kMaxBeamWidth];
  if (scratch_size > sizeof scratch) return 1;
  tunecast::PredictInfo info;
  status = tunecast::predict(model, problem, options, scratch, scratch_size, out,
                             tunecast::kMaxBeamWidth, &info);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message());
    return 3;
  }
  for (int p = 0; p < out[0].length; ++p) std::printf("%lld ", static_cast<long long>(out[0].values[p]));
  std::printf("\n");
  std::fprintf(stderr, "rss_kb %ld %ld scratch %zu blob %zu\n", rss_start, peak_rss_kb(),
               scratch_size, size);
  munmap(data, size);
  return 0;
}
