// Issue 22's side-by-side measurement of the product kernels the predictors run, before choosing
// how the runtime dispatches: tunecast's own kernels (tunecast::layers::dense, level forced with
// set_simd_level), Eigen 3.4 compiled once per level (kernel_candidates_eigen.cpp) and Highway
// with its own run-time dispatch (kernel_candidates_hwy.cpp), at every SIMD level this CPU runs.
//
//   tunecast_kernel_candidates [--quick]
//
// Shapes: one row (greedy decoding: x[1][depth] . W[depth][cols], an LSTM's 4*units gates, the
// weights streamed from L2 on every call) and a batch (a beam-100 decoder step). Per candidate:
// the median time of a call over many calls (candidates interleaved in rounds, so drift on a
// shared machine hits them alike), multiply-adds per ns, time relative to tunecast's kernels at
// the same level, max |difference| from their output and whether every bit matches, the error
// against an fp64 product, heap allocations per call; then the code each approach adds (.text
// of its objects, `size -A`). docs/benchmarks.md, "Kernel candidates", holds a run.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <hwy/targets.h>

#include "kernel_candidates.h"
#include "malloc_counter.h"
#include "tunecast/kernel_types.h"
#include "tunecast/layers.h"
#include "tunecast/simd.h"

// --- heap accounting: every malloc-family call of the process (malloc_counter.h), and Eigen's own
// no-malloc guard routed to a counter ----------------------------------------------------------------
namespace {
std::atomic<long> g_eigen_assert_failures{0};
const char* g_eigen_assert_first = nullptr;
}  // namespace

namespace tunecast::bench::candidates {

void eigen_assert_failed(const char* what) {
  if (g_eigen_assert_failures.fetch_add(1) == 0) g_eigen_assert_first = what;
}

namespace {

using Clock = std::chrono::steady_clock;
using kernels::kPanelWidth;

struct Shape {
  const char* what;
  size_t rows, depth, cols;
};

// A matrix of floats on a 64-byte boundary (allocated before any timing).
struct Buffer {
  explicit Buffer(size_t n) : n(n) {
    data = static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
    std::fill(data, data + n, 0.0f);
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* data;
  size_t n;
};

size_t padded(size_t n) { return (n + kPanelWidth - 1) / kPanelWidth * kPanelWidth; }

// The operands of one shape in every layout the candidates take.
struct Operands {
  explicit Operands(const Shape& s)
      : shape(s),
        x_stride(padded(s.depth)),
        y_stride(padded(s.cols)),
        x(s.rows * x_stride),
        w(s.depth * s.cols),
        wt(s.cols * s.depth),
        packed(kernels::packed_size(s.depth, s.cols)),
        zero_bias(padded(s.cols)) {
    uint32_t state = 12345u + static_cast<uint32_t>(s.rows * 7 + s.depth * 3 + s.cols);
    auto next = [&state] {  // xorshift32: the same operands on every run
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      return static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;  // [-1, 1)
    };
    for (size_t r = 0; r < s.rows; ++r) {
      for (size_t k = 0; k < s.depth; ++k) x.data[r * x_stride + k] = next();
    }
    for (size_t i = 0; i < s.depth * s.cols; ++i) w.data[i] = 0.125f * next();
    for (size_t k = 0; k < s.depth; ++k) {
      for (size_t j = 0; j < s.cols; ++j) {
        const float v = w.data[k * s.cols + j];
        wt.data[j * s.depth + k] = v;
        packed.data[(j / kPanelWidth) * s.depth * kPanelWidth + k * kPanelWidth + j % kPanelWidth] = v;
      }
    }
    for (size_t r = 0; r < s.rows; ++r) {
      for (size_t j = 0; j < s.cols; ++j) {
        double sum = 0;
        for (size_t k = 0; k < s.depth; ++k) {
          sum += static_cast<double>(x.data[r * x_stride + k]) * w.data[k * s.cols + j];
        }
        reference_fp64.push_back(sum);
      }
    }
  }
  Shape shape;
  size_t x_stride, y_stride;
  Buffer x, w, wt, packed, zero_bias;
  std::vector<double> reference_fp64;
};

struct Candidate {
  Candidate(std::string level, std::string name, std::function<void()> prepare,
            std::function<void()> finish, std::function<void(const Operands&, float*)> call)
      : level(std::move(level)), name(std::move(name)), prepare(std::move(prepare)),
        finish(std::move(finish)), call(std::move(call)) {}
  std::string level;  // the tunecast level it is compared with
  std::string name;
  std::function<void()> prepare;  // before a round of calls (forces the level or target)
  std::function<void()> finish;   // after it
  std::function<void(const Operands&, float* y)> call;
  std::vector<double> ns;  // one sample per call
  long heap_calls = 0, calls = 0;
  long eigen_asserts = 0;
  Buffer* y = nullptr;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int hwy_level_of(int64_t target) {
  if (target == HWY_AVX3 || target == HWY_AVX3_DL) return static_cast<int>(SimdLevel::kAvx512);
  if (target == HWY_AVX2) return static_cast<int>(SimdLevel::kAvx2);
  return static_cast<int>(SimdLevel::kSse2);  // SSE4, SSSE3, EMU128, SCALAR: no FMA, <= 4 lanes
}

// Sum of the .text sections of `path` (an object or archive), as `size -A` lists them.
long text_bytes(const std::string& path) {
  const std::string cmd = "size -A '" + path + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char line[1024];
  long sum = 0;
  while (std::fgets(line, sizeof line, p)) {
    char name[768];
    long bytes;
    if (std::sscanf(line, "%767s %ld", name, &bytes) == 2 &&
        (std::strcmp(name, ".text") == 0 || std::strncmp(name, ".text.", 6) == 0)) {
      sum += bytes;
    }
  }
  return pclose(p) == 0 ? sum : -1;
}

// Sum of the sizes of code symbols of `path` whose demangled name contains every one of `parts`
// (nm -S: the functions a feature occupies inside a larger object).
long symbol_bytes(const std::string& path, const std::vector<std::string>& parts) {
  const std::string cmd = "nm -C -S --defined-only '" + path + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string line;
  char chunk[4096];
  long sum = 0;
  while (std::fgets(chunk, sizeof chunk, p)) {
    line += chunk;
    if (line.empty() || line.back() != '\n') continue;
    unsigned long address, size;
    char type;
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%lx %lx %c %n", &address, &size, &type, &consumed) >= 3 &&
        (type == 'T' || type == 't' || type == 'W' || type == 'w')) {
      bool all = true;
      for (const auto& part : parts) all = all && line.find(part, consumed) != std::string::npos;
      if (all) sum += static_cast<long>(size);
    }
    line.clear();
  }
  pclose(p);
  return sum;
}

// Lines of `cmd`'s output (for the ODR check).
long count_lines(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char line[4096];
  long n = 0;
  while (std::fgets(line, sizeof line, p)) ++n;
  pclose(p);
  return n;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

int run(bool quick) {
  const std::vector<Shape> shapes = {
      {"1 x 128 x 512 (greedy, 256 KB fp32 weights)", 1, 128, 512},
      {"1 x 256 x 512 (greedy, 512 KB)", 1, 256, 512},
      {"1 x 256 x 1024 (greedy, 1 MB)", 1, 256, 1024},
      {"100 x 256 x 1024 (beam-100 decoder step)", 100, 256, 1024},
  };
  const SimdLevel levels[] = {SimdLevel::kSse2, SimdLevel::kAvx2, SimdLevel::kAvx512};
  const EigenLevel* eigen[3] = {&eigen_sse2(), nullptr, nullptr};
  // An object compiled for a level is not entered (not even for its description) on a CPU
  // without it.
  if (simd_level_supported(SimdLevel::kAvx2)) eigen[1] = &eigen_avx2();
  if (simd_level_supported(SimdLevel::kAvx512)) eigen[2] = &eigen_avx512();

  int64_t hwy_all[16];
  const int hwy_count = hwy_targets(hwy_all, 16);

  std::printf("tunecast kernel candidates (issue 22)\n");
  std::printf("CPU levels: sse2 %s, avx2 %s, avx512 %s (best: %s)\n",
              simd_level_supported(SimdLevel::kSse2) ? "yes" : "no",
              simd_level_supported(SimdLevel::kAvx2) ? "yes" : "no",
              simd_level_supported(SimdLevel::kAvx512) ? "yes" : "no",
              simd_level_name(best_simd_level()));
  for (int l = 0; l < 3; ++l) {
    if (eigen[l] != nullptr) {
      std::printf("Eigen %s at %s: %s\n", eigen[l]->version, eigen[l]->level, eigen[l]->simd);
    } else {
      std::printf("Eigen at %s: skipped (the CPU lacks the level)\n", simd_level_name(levels[l]));
    }
  }
  std::printf("Highway %s targets compiled and run by this CPU:", hwy_version());
  for (int i = 0; i < hwy_count; ++i) std::printf(" %s", hwy_target_name(hwy_all[i]));
  std::printf("\n");
  for (int l = 0; l < 3; ++l) {
    if (eigen[l] == nullptr) continue;
    long kc, mc, nc;
    eigen[l]->blocking(shapes.back().rows, shapes.back().depth, shapes.back().cols, &kc, &mc, &nc);
    std::printf("Eigen GEMM blocking at %s for %zu x %zu x %zu: kc %ld, mc %ld, nc %ld\n",
                eigen[l]->level, shapes.back().rows, shapes.back().depth, shapes.back().cols, kc,
                mc, nc);
  }

  struct Row {
    std::string shape, level, name;
    double median_ns, fastest_ns, macs_per_ns, ratio, max_diff, max_err;
    bool identical, have_ours;
    double heap_per_call;
    long eigen_asserts;
  };
  std::vector<Row> rows;

  for (const Shape& shape : shapes) {
    Operands ops(shape);
    const double macs = static_cast<double>(shape.rows) * shape.depth * shape.cols;
    std::vector<Candidate> cands;
    std::unique_ptr<Buffer> eigen_scratch[3];
    for (int l = 0; l < 3; ++l) {
      const SimdLevel level = levels[l];
      const std::string lname = simd_level_name(level);
      if (!simd_level_supported(level)) continue;
      cands.push_back({lname, "tunecast dense (panels)",
                       [level] { (void)set_simd_level(level); }, [] {},
                       [](const Operands& o, float* y) {
                         layers::dense(o.x.data, o.x_stride, o.shape.rows, o.shape.depth,
                                       o.packed.data, o.shape.cols, o.zero_bias.data,
                                       kernels::Act::kLinear, y, o.y_stride);
                       }});
      const EigenLevel* e = eigen[l];
      cands.push_back({lname, "Eigen Map<RowMajor W>",
                       [e] { e->set_malloc_allowed(false); },
                       [e] { e->set_malloc_allowed(true); },
                       [e](const Operands& o, float* y) {
                         e->product(o.x.data, o.x_stride, o.shape.rows, o.shape.depth, o.w.data,
                                    o.shape.cols, y, o.y_stride);
                       }});
      if (shape.rows > 1) {
        eigen_scratch[l] = std::make_unique<Buffer>(e->scratch_floats(shape.rows, shape.depth, shape.cols));
        float* scratch = eigen_scratch[l]->data;
        cands.push_back({lname, "Eigen W, internal GEMM, caller's buffers",
                         [e] { e->set_malloc_allowed(false); },
                         [e] { e->set_malloc_allowed(true); },
                         [e, scratch](const Operands& o, float* y) {
                           e->product_caller_blocking(o.x.data, o.x_stride, o.shape.rows,
                                                      o.shape.depth, o.w.data, o.shape.cols, y,
                                                      o.y_stride, scratch);
                         }});
      }
      cands.push_back({lname, "Eigen Map<RowMajor W^T>",
                       [e] { e->set_malloc_allowed(false); },
                       [e] { e->set_malloc_allowed(true); },
                       [e](const Operands& o, float* y) {
                         e->product_transposed(o.x.data, o.x_stride, o.shape.rows, o.shape.depth,
                                               o.wt.data, o.shape.cols, y, o.y_stride);
                       }});
      for (int i = 0; i < hwy_count; ++i) {
        const int64_t t = hwy_all[i];
        if (hwy_level_of(t) != l) continue;
        cands.push_back({lname, std::string("Highway ") + hwy_target_name(t) + " (panels)",
                         [t] {
                           hwy_force_target(t);
                           if (hwy_dispatched_target() != t) {
                             std::fprintf(stderr, "Highway dispatched %s, not %s\n",
                                          hwy_target_name(hwy_dispatched_target()),
                                          hwy_target_name(t));
                             std::exit(1);
                           }
                         },
                         [] { hwy_force_target(0); },
                         [](const Operands& o, float* y) {
                           hwy_product(o.x.data, o.x_stride, o.shape.rows, o.shape.depth,
                                       o.packed.data, o.shape.cols, y, o.y_stride);
                         }});
      }
    }
    std::vector<std::unique_ptr<Buffer>> outputs;
    for (auto& c : cands) {
      outputs.push_back(std::make_unique<Buffer>(shape.rows * ops.y_stride));
      c.y = outputs.back().get();
    }

    // Rounds of `calls` timed calls per candidate, one warm-up call first (the weights back in
    // cache after the other candidates' rounds).
    const bool batch = shape.rows > 1;
    const int rounds = quick ? 2 : 30;
    const int calls = quick ? 3 : (batch ? 6 : 100);
    for (auto& c : cands) c.ns.reserve(static_cast<size_t>(rounds) * calls);
    for (int round = 0; round < rounds; ++round) {
      for (auto& c : cands) {
        c.prepare();
        c.call(ops, c.y->data);
        const long heap0 = tunecast::bench::malloc_calls();
        const long asserts0 = g_eigen_assert_failures.load();
        for (int i = 0; i < calls; ++i) {
          const auto t0 = Clock::now();
          c.call(ops, c.y->data);
          const auto t1 = Clock::now();
          c.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
        }
        c.heap_calls += tunecast::bench::malloc_calls() - heap0;
        c.eigen_asserts += g_eigen_assert_failures.load() - asserts0;
        c.calls += calls;
        c.finish();
      }
    }

    // Outputs (the last call's) against tunecast's at the same level and against fp64.
    for (auto& c : cands) {
      const Candidate* ours = nullptr;
      for (const auto& o : cands) {
        if (o.level == c.level && o.name.rfind("tunecast", 0) == 0) ours = &o;
      }
      Row row{shape.what, c.level, c.name, median(c.ns), *std::min_element(c.ns.begin(), c.ns.end()),
              0, 0, 0, 0, true, ours != nullptr,
              static_cast<double>(c.heap_calls) / c.calls, c.eigen_asserts};
      row.macs_per_ns = macs / row.median_ns;
      row.ratio = ours ? row.median_ns / median(ours->ns) : 0;
      for (size_t r = 0; r < shape.rows; ++r) {
        for (size_t j = 0; j < shape.cols; ++j) {
          const float v = c.y->data[r * ops.y_stride + j];
          const float o = ours->y->data[r * ops.y_stride + j];
          row.max_diff = std::max(row.max_diff, static_cast<double>(std::fabs(v - o)));
          row.identical = row.identical && std::memcmp(&v, &o, sizeof v) == 0;
          row.max_err = std::max(row.max_err, std::fabs(v - ops.reference_fp64[r * shape.cols + j]));
        }
      }
      rows.push_back(row);
    }
  }

  std::printf("\nMedian of %s calls per candidate, in rounds across candidates; x and W in [-1, 1) "
              "and [-1/8, 1/8); tunecast with a zero bias, the others without.\n",
              quick ? "a few (--quick)" : "180 (batch) / 3000 (one row)");
  std::printf("(30 rounds; in each, every candidate makes one untimed call, then 6 (batch) or 100 timed calls.)\n");
  std::printf("| shape rows x depth x cols | level | implementation | median | MAC/ns | time / ours "
              "| fastest call | max abs diff vs ours | bits = ours | max abs err vs fp64 | heap allocs/call |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Row& r : rows) {
    auto time = [](double ns) {
      return ns >= 1e6 ? fmt("%.2f ms", ns / 1e6) : fmt("%.1f us", ns / 1e3);
    };
    std::printf("| %s | %s | %s | %s | %.1f | %.2f | %s | %.2g | %s | %.2g | %.3g |\n", r.shape.c_str(),
                r.level.c_str(), r.name.c_str(), time(r.median_ns).c_str(), r.macs_per_ns, r.ratio,
                time(r.fastest_ns).c_str(), r.max_diff, r.identical ? "yes" : "no", r.max_err,
                r.heap_per_call);
  }
  long asserts = 0;
  for (const Row& r : rows) asserts += r.eigen_asserts;
  std::printf("\nEigen with set_is_malloc_allowed(false) (EIGEN_RUNTIME_NO_MALLOC) during the timed "
              "calls: %ld failed eigen_assert%s%s\n",
              asserts, asserts ? ", first: " : "", asserts ? g_eigen_assert_first : "");

  // --- code each approach adds -------------------------------------------------------------
  std::printf("\n.text bytes (size -A, every .text section; nm -S for functions inside a larger object)\n");
  std::printf("| approach | level / target | .text bytes | what is counted |\n| --- | --- | --- | --- |\n");
  const std::string archive = KC_RUNTIME_ARCHIVE;
  for (const char* l : {"sse2", "avx2", "avx512"}) {
    const long product = symbol_bytes(archive, {std::string("kernels::") + l + "::matmul", "<float>"}) +
                         symbol_bytes(archive, {std::string("layers::") + l + "::dense<float>"});
    std::printf("| tunecast | %s | %ld | dense<float> + matmul / matmul_few_rows / matmul_sparse_rows<float> "
                "(all its layers: %ld) |\n",
                l, product, symbol_bytes(archive, {std::string("::") + l + "::"}));
  }
  const std::string eigen_objects[3] = {KC_EIGEN_OBJECT_SSE2, KC_EIGEN_OBJECT_AVX2,
                                        KC_EIGEN_OBJECT_AVX512};
  const char* eigen_names[3] = {"sse2", "avx2", "avx512"};
  for (int l = 0; l < 3; ++l) {
    std::printf("| Eigen | %s | %ld | the whole object: gemv + GEMM, both layouts, internal GEMM "
                "(the W product alone: -DKC_EIGEN_SIZE_PROBE, docs/benchmarks.md) |\n",
                eigen_names[l], text_bytes(eigen_objects[l]));
  }
  const std::string hwy_object = KC_HWY_OBJECT;
  const long hwy_text = text_bytes(hwy_object);
  const struct {
    const char* target;
    const char* ns;
  } hwy_ns[] = {{"SCALAR", "N_SCALAR"}, {"EMU128", "N_EMU128"}, {"SSSE3", "N_SSSE3"},
                {"SSE4", "N_SSE4"},     {"AVX2", "N_AVX2"},     {"AVX3", "N_AVX3"}};
  for (const auto& h : hwy_ns) {
    const long bytes = symbol_bytes(hwy_object, {std::string("::") + h.ns + "::"});
    if (bytes == 0) continue;  // not compiled
    std::printf("| Highway | %s | %ld | Product in namespace %s |\n", h.target, bytes, h.ns);
  }
  std::printf("| Highway | all | %ld | the whole object (targets + dispatch tables) |\n", hwy_text);
  std::printf("| Highway | libhwy.so | %ld | %s (target detection; shared library only in Debian) |\n",
              text_bytes(KC_HWY_LIBRARY), KC_HWY_LIBRARY);

  // ODR check: Eigen symbols that escaped the per-level renaming (would be merged by the linker).
  long escaped = 0;
  for (int l = 0; l < 3; ++l) {
    escaped += count_lines("nm -C --defined-only '" + eigen_objects[l] +
                           "' | grep -E ' [TWVu] ' | grep -E '(^|[^_a-z])Eigen::'");
  }
  std::printf("\nEigen symbols left unrenamed in the level objects (linker-merged across levels): %ld\n",
              escaped);
  return 0;
}

}  // namespace
}  // namespace tunecast::bench::candidates

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  return tunecast::bench::candidates::run(quick);
}
