// Peak resident set (VmHWM) of this process, for the memory probes the benchmark runs as
// processes of their own.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tunecast::bench {

// VmHWM of this process in KiB, or -1.
inline long peak_rss_kb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::strtol(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return kb;
}

}  // namespace tunecast::bench
