// The benchmark process of the blocked GEMM (blocked_gemm.h) for `tunecast tune --bench-cmd`
// (docs/search.md, "--bench-cmd"; docs/byo_kernel.md):
//   - the problem comes once, in TUNECAST_PROBLEM ("m=96,n=64,k=128"), the parameter names in
//     TUNECAST_PARAMS ("tile_m,tile_n,tile_k,unroll": the order of the values on each line);
//   - then one candidate per line on stdin ("16,64,32,4"); the answer is one line: the median time
//     in microseconds, or `fail` when the config cannot run or computes a wrong C.
// Anything it cannot understand is an error on stderr and exit status 2 (tune then stops and says so).
//
//   gemm_bench               the line protocol (GEMM_BENCH_REPS timed runs per candidate, default 5)
//   gemm_bench --self-test   every config of a few tiles on a few problems against the naive loop
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "blocked_gemm.h"

namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "gemm_bench: %s\n", message.c_str());
  std::exit(2);
}

// Splits "a=1,b=2" (separators ',', ';', ' ') or "1,2,3" into items.
std::vector<std::string> split(const std::string& text, const char* separators) {
  std::vector<std::string> items;
  std::string item;
  for (char ch : text) {
    if (std::strchr(separators, ch) != nullptr) {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else if (ch != '\r' && ch != '\n') {
      item += ch;
    }
  }
  if (!item.empty()) items.push_back(item);
  return items;
}

bool parse_int(const std::string& text, long long* value) {
  char* end = nullptr;
  errno = 0;
  *value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0' && errno == 0;
}

struct Problem {
  int m = 0, n = 0, k = 0;
};

Problem parse_problem(const char* text) {
  if (text == nullptr) die("TUNECAST_PROBLEM is not set (run me from `tunecast tune --bench-cmd`)");
  Problem problem;
  for (const std::string& item : split(text, ", ;")) {
    const size_t equals = item.find('=');
    long long value = 0;
    if (equals == std::string::npos || !parse_int(item.substr(equals + 1), &value) || value < 1 || value > 4096)
      die("TUNECAST_PROBLEM item '" + item + "' is not name=value with a value in 1..4096");
    const std::string name = item.substr(0, equals);
    if (name == "m")
      problem.m = static_cast<int>(value);
    else if (name == "n")
      problem.n = static_cast<int>(value);
    else if (name == "k")
      problem.k = static_cast<int>(value);
    else
      die("TUNECAST_PROBLEM has an unknown field '" + name + "' (this kernel knows m, n, k)");
  }
  if (problem.m == 0 || problem.n == 0 || problem.k == 0)
    die(std::string("TUNECAST_PROBLEM '") + text + "' lacks one of m, n, k");
  return problem;
}

// Where each parameter sits on a candidate line, from TUNECAST_PARAMS.
struct Layout {
  int tile_m = 0, tile_n = 1, tile_k = 2, unroll = 3, count = 4;
};

Layout parse_layout(const char* text) {
  Layout layout;
  if (text == nullptr) return layout;  // the definition's order
  const std::vector<std::string> names = split(text, ",");
  layout = {-1, -1, -1, -1, static_cast<int>(names.size())};
  for (int i = 0; i < layout.count; ++i) {
    if (names[i] == "tile_m")
      layout.tile_m = i;
    else if (names[i] == "tile_n")
      layout.tile_n = i;
    else if (names[i] == "tile_k")
      layout.tile_k = i;
    else if (names[i] == "unroll")
      layout.unroll = i;
    else
      die("TUNECAST_PARAMS names an unknown parameter '" + names[i] + "'");
  }
  if (layout.tile_m < 0 || layout.tile_n < 0 || layout.tile_k < 0 || layout.unroll < 0)
    die(std::string("TUNECAST_PARAMS '") + text + "' lacks one of tile_m, tile_n, tile_k, unroll");
  return layout;
}

// Inputs in [-1, 1] from a fixed linear congruential generator, and the reference product.
struct Data {
  Problem problem;
  std::vector<float> a, b, c, reference;
  explicit Data(const Problem& p) : problem(p) {
    unsigned state = 12345;
    auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
    };
    a.resize(static_cast<size_t>(p.m) * p.k);
    b.resize(static_cast<size_t>(p.k) * p.n);
    c.resize(static_cast<size_t>(p.m) * p.n);
    reference.resize(c.size());
    for (float& x : a) x = next();
    for (float& x : b) x = next();
    byo::naive_gemm(p.m, p.n, p.k, a.data(), b.data(), reference.data());
  }
};

// Runs the config once and checks it; then times `reps` runs. Returns false for a config that
// fails (cannot run, or computes a wrong C).
bool measure(Data& data, const byo::GemmConfig& config, int reps, double* median_us, std::string* why) {
  const Problem& p = data.problem;
  std::fill(data.c.begin(), data.c.end(), 0.0f);
  const byo::GemmStatus status = byo::blocked_gemm(p.m, p.n, p.k, data.a.data(), data.b.data(), data.c.data(), config);
  if (status != byo::GemmStatus::kOk) {
    *why = byo::status_name(status);
    return false;
  }
  const double error = byo::max_error_ratio(p.m, p.n, p.k, data.c.data(), data.reference.data());
  if (!(error <= 1.0)) {
    *why = "wrong result (error " + std::to_string(error) + " x the tolerance)";
    return false;
  }
  std::vector<double> times(reps);
  for (double& time : times) {
    const auto start = std::chrono::steady_clock::now();
    byo::blocked_gemm(p.m, p.n, p.k, data.a.data(), data.b.data(), data.c.data(), config);
    time = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  *median_us = times[reps / 2];
  return true;
}

int serve() {
  const Problem problem = parse_problem(std::getenv("TUNECAST_PROBLEM"));
  const Layout layout = parse_layout(std::getenv("TUNECAST_PARAMS"));
  long long reps = 5;
  if (const char* text = std::getenv("GEMM_BENCH_REPS");
      text != nullptr && (!parse_int(text, &reps) || reps < 1 || reps > 1000))
    die(std::string("GEMM_BENCH_REPS '") + text + "' is not a count in 1..1000");
  Data data(problem);
  char line[256];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    const std::vector<std::string> items = split(line, ", ");
    if (static_cast<int>(items.size()) != layout.count) {
      std::string text = line;
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      die("candidate '" + text + "' does not have " + std::to_string(layout.count) + " values");
    }
    std::vector<int> values(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      long long value = 0;
      if (!parse_int(items[i], &value) || value < -1000000 || value > 1000000)
        die("value '" + items[i] + "' is not an integer");
      values[i] = static_cast<int>(value);
    }
    byo::GemmConfig config;
    config.tile_m = values[layout.tile_m];
    config.tile_n = values[layout.tile_n];
    config.tile_k = values[layout.tile_k];
    config.unroll = values[layout.unroll];
    double median_us = 0;
    std::string why;
    if (measure(data, config, static_cast<int>(reps), &median_us, &why))
      std::printf("%.3f\n", median_us);
    else
      std::printf("fail\n");  // why is for a person: `tune` reads only the word
    std::fflush(stdout);
  }
  return 0;
}

// Every combination of the domains of gemm.tcr on a few awkward problems: each either runs
// correctly or is refused for the reason blocked_gemm.h gives; the counts are printed.
int self_test() {
  const Problem problems[] = {{1, 1, 1}, {37, 53, 71}, {64, 64, 64}, {100, 20, 257}};
  int ok = 0, refused = 0, wrong = 0;
  for (const Problem& problem : problems) {
    Data data(problem);
    for (int tile_m : {4, 8, 16, 32, 64})
      for (int tile_n : {16, 32, 64, 128, 256})
        for (int tile_k : {16, 32, 64, 128, 256})
          for (int unroll : {1, 2, 4}) {
            const byo::GemmConfig config{tile_m, tile_n, tile_k, unroll};
            double median_us = 0;
            std::string why;
            if (measure(data, config, 1, &median_us, &why)) {
              ++ok;
            } else if (why.rfind("wrong", 0) == 0) {
              ++wrong;
              std::fprintf(stderr, "gemm_bench: m=%d,n=%d,k=%d config %d,%d,%d,%d: %s\n", problem.m, problem.n,
                           problem.k, tile_m, tile_n, tile_k, unroll, why.c_str());
            } else {
              ++refused;
            }
          }
  }
  std::printf("gemm_bench --self-test: %d runs correct, %d refused (buffers), %d wrong\n", ok, refused, wrong);
  return wrong == 0 && ok > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--self-test") == 0) return self_test();
  if (argc != 1) {
    std::fprintf(stderr, "usage: gemm_bench [--self-test]   (the line protocol of `tunecast tune --bench-cmd`)\n");
    return 2;
  }
  return serve();
}
