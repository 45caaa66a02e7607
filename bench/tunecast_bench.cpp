// tunecast's performance report: load, greedy and beam-search prediction times, memory and heap
// use of the blob runtime, each against this core's arithmetic floor and against libtorch running
// the same network, in one run. Not a test: `--smoke` runs everything once for CI and fails only
// when predict allocates or something stops working. See docs/benchmarks.md.
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "fdeep_peer.h"
#include "floors.h"
#include "generated_hook.h"
#include "malloc_counter.h"
#include "torch_peer.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/file_io.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/predict.h"
#include "tunecast/simd.h"

// --- heap accounting --------------------------------------------------------------------------
// Every operator new and every malloc-family call of the process is counted; the benchmark reads
// the counters around the runtime's calls. operator new goes through malloc, so it shows in both.
namespace {
std::atomic<long> g_new_calls{0};  // malloc-family calls: malloc_counter.h
}  // namespace


void* operator new(size_t size) {
  g_new_calls.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, std::align_val_t align) {
  g_new_calls.fetch_add(1, std::memory_order_relaxed);
  void* p = nullptr;
  if (posix_memalign(&p, std::max(sizeof(void*), static_cast<size_t>(align)), size ? size : 1) != 0) {
    throw std::bad_alloc();
  }
  return p;
}
void* operator new[](size_t size, std::align_val_t align) { return operator new(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace tunecast::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct HeapCount {
  long news = 0, mallocs = 0;
  static HeapCount now() { return {g_new_calls.load(), malloc_calls()}; }
  HeapCount operator-(const HeapCount& o) const { return {news - o.news, mallocs - o.mallocs}; }
};

struct Options {
  bool smoke = false;
  bool torch = true;
  bool ktn = true;
  std::string problem;  // --problem; empty: a typical problem of the model's solver (subject_problem)
  std::string data_dir;
  std::vector<std::string> models;
  double seconds = 0.4;  // time budget per figure (full mode)
  std::vector<SimdLevel> levels;  // --simd; empty: the active level
  std::string json;               // --json FILE: every level's headline figures
};

// One subject's headline figures at one SIMD level, for the side-by-side table at the end.
struct LevelFigures {
  std::string subject;
  SimdLevel level;
  bool ktn = false;  // the gfx908 KTN with fp32 weights (the goals' subject)
  double load_ns = 0, greedy_ns = 0, greedy_l2_floor_ns = 0, greedy_memory_floor_ns = 0, beam10_ns = 0, beam100_ns = 0,
         step100_ns = 0, step100_floor_ns = 0;
  long heap = 0;  // operator new + malloc-family calls inside predict/run_graph
};
std::vector<LevelFigures> g_level_figures;

// The problem a model is timed on: --problem, else a typical one for its solver (the KTN and the
// 1x1 forward kernels share the first).
std::string subject_problem(const Options& o, const Model& model) {
  if (!o.problem.empty()) return o.problem;
  const char* solver = model.metadata("solver");
  const std::string name = solver ? solver : "";
  if (name == "ConvAsmBwdWrW1x1") return "dir=W,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906";
  if (name == "ConvAsmBwdWrW3x3") {
    return "dir=W,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=3,x=3,pad_h=1,pad_w=1,arch=gfx906";
  }
  return "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906";
}


// --- timing -----------------------------------------------------------------------------------

struct Timing {
  double median_ns = 0, p10_ns = 0, p90_ns = 0;  // wall time per call
  double cpu_median_ns = 0;                      // this thread's CPU time per call
  int runs = 0;
};

double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// Per-call times of `f` over about `budget` seconds (at least min_runs, at most max_runs calls,
// after a few warm-up calls); one call each in smoke mode. CPU time is kept next to wall time
// because the benchmark host is shared: descheduled time inflates wall times, not CPU times.
template <typename F>
Timing measure(const Options& o, F&& f, int max_runs = 20000, int min_runs = 21) {
  if (o.smoke) max_runs = 1;
  for (int i = 0; i < (o.smoke ? 0 : 3); ++i) f();
  std::vector<double> ns, cpu;
  ns.reserve(max_runs);
  cpu.reserve(max_runs);
  const auto start = Clock::now();
  while (static_cast<int>(ns.size()) < max_runs) {
    const double c0 = thread_cpu_ns();
    const auto t0 = Clock::now();
    f();
    const auto t1 = Clock::now();
    cpu.push_back(thread_cpu_ns() - c0);
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    if (static_cast<int>(ns.size()) >= min_runs &&
        std::chrono::duration<double>(t1 - start).count() > o.seconds) {
      break;
    }
  }
  std::sort(ns.begin(), ns.end());
  std::sort(cpu.begin(), cpu.end());
  Timing t;
  t.runs = static_cast<int>(ns.size());
  t.median_ns = ns[ns.size() / 2];
  t.p10_ns = ns[ns.size() / 10];
  t.p90_ns = ns[ns.size() * 9 / 10];
  t.cpu_median_ns = cpu[cpu.size() / 2];
  return t;
}

// Wraps a call so that its heap use (and only its own) lands in *heap.
template <typename F>
auto counting(HeapCount* heap, F&& f) {
  return [heap, &f] {
    const HeapCount before = HeapCount::now();
    f();
    const HeapCount used = HeapCount::now() - before;
    heap->news += used.news;
    heap->mallocs += used.mallocs;
  };
}

std::string fmt_time(double ns) {
  char s[32];
  if (ns < 1e3) std::snprintf(s, sizeof s, "%.0f ns", ns);
  else if (ns < 1e6) std::snprintf(s, sizeof s, "%.1f us", ns / 1e3);
  else std::snprintf(s, sizeof s, "%.2f ms", ns / 1e6);
  return s;
}

// --- this core's floors: bench/floors.cpp, compiled once per SIMD level --------------------------
FmaRate measure_floor(bool smoke) {
  switch (best_simd_level()) {
    case SimdLevel::kAvx512: return measure_floor_avx512(smoke);
    case SimdLevel::kAvx2: return measure_floor_avx2(smoke);
    default: return measure_floor_sse2(smoke);
  }
}

// --- subjects ---------------------------------------------------------------------------------

// A blob in 64-byte-aligned memory (Model::load wants 32), plus its IR when we compiled it.
struct Subject {
  std::string name;
  std::string blob_path;  // a file holding the same bytes, for map + verify
  std::vector<unsigned char> storage;
  const unsigned char* bytes = nullptr;
  size_t size = 0;
  bool have_ir = false;
  bool fp16_weights = false;  // generated predictors are emitted from fp32 blobs: not this one's twin
  ir::Model ir;
  bool temp_file = false;
  // The frugally-deep peer of the KTN, timed once (report(): the same at every level).
  bool fdeep_tried = false;
  std::unique_ptr<FdeepPeer> fdeep;
  Timing fdeep_load, fdeep_greedy;
};

void hold_bytes(Subject* s, const void* data, size_t size) {
  s->storage.assign(size + 64, 0);
  unsigned char* p = s->storage.data();
  p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
  std::memcpy(p, data, size);
  s->bytes = p;
  s->size = size;
}

// The KTN compiled with `weights` storage; only the fp32 subject keeps its IR (the libtorch peer
// and the goals table are fp32 figures).
Status import_ktn_subject(const std::string& data_dir, codegen::WeightStorage weights, Subject* s) {
  const std::string prefix = data_dir + "/miopen/models/gfx908_ConvAsm1x1U";
  TUNECAST_RETURN_IF_ERROR(keras::import_ktn(prefix, &s->ir));
  TUNECAST_RETURN_IF_ERROR(codegen::attach_rules(&s->ir, TUNECAST_SOURCE_DIR "/weights/rules/ConvAsm1x1U.tcr",
                                                 TUNECAST_SOURCE_DIR "/weights/encodings/gfx908_ConvAsm1x1U.tce"));
  TUNECAST_RETURN_IF_ERROR(check_ir(s->ir));
  std::vector<uint8_t> blob;
  codegen::BlobOptions options;
  options.weights = weights;
  TUNECAST_RETURN_IF_ERROR(codegen::write_blob(s->ir, &blob, options));
  hold_bytes(s, blob.data(), blob.size());
  const bool half = weights == codegen::WeightStorage::kFp16;
  s->name = "gfx908_ConvAsm1x1U KTN" + std::string(half ? ", fp16 weights" : "") + " (imported from " + prefix + ")";
  s->have_ir = !half;
  s->fp16_weights = half;
  char path[] = "/tmp/tunecast_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) {
    const bool ok = write(fd, blob.data(), blob.size()) == static_cast<ssize_t>(blob.size());
    close(fd);
    if (ok) {
      s->blob_path = path;
      s->temp_file = true;
    } else {
      unlink(path);
    }
  }
  return Status::ok();
}

Status blob_subject(const std::string& path, Subject* s) {
  std::string contents;
  TUNECAST_RETURN_IF_ERROR(codegen::read_file(path, &contents));
  hold_bytes(s, contents.data(), contents.size());
  s->name = path;
  s->blob_path = path;
  return Status::ok();
}

// This core's L2 in bytes (glibc reads it from cpuid); 1 MiB when unknown.
long l2_cache_bytes() {
  const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? bytes : 1L << 20;
}

// --- the report for one model ---------------------------------------------------------------------

struct Failures {
  int count = 0;
  void fail(const char* what) {
    std::printf("  FAIL: %s\n", what);
    ++count;
  }
};

std::string exe_dir() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(".") : exe.parent_path().string();
}

// Runs a probe next to this binary (tunecast_min_predict: a blob and the runtime only;
// tunecast_min_generated: the KTN's generated C++; tunecast_empty_process) as a process of its
// own, with `args` already quoted; its peak RSS is what a tunecast user pays. Returns false when
// the probe is missing or fails.
bool probe_rss(const char* probe_name, const std::string& args, long* start_kb, long* peak_kb) {
  const std::string probe = exe_dir() + "/" + probe_name;
  if (access(probe.c_str(), X_OK) != 0) return false;
  const std::string cmd = "'" + probe + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char line[512];
  bool found = false;
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "rss_kb %ld %ld", start_kb, peak_kb) == 2) found = true;
  }
  return pclose(p) == 0 && found;
}

// Code of `path`, summed over an archive's members: `.text` = the bytes of its .text sections
// (instructions only: the goal's measure), `loaded` = `size`'s Berkeley text column (code plus
// read-only data and unwind tables).
bool size_of(const std::string& path, long* text, long* loaded) {
  const std::string cmd = "size -A '" + path + "' 2>/dev/null; size -t '" + path + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char line[512];
  long sum = 0, berkeley = -1;
  while (std::fgets(line, sizeof line, p)) {
    char name[256];
    long bytes, d, b;
    if (std::sscanf(line, "%255s %ld", name, &bytes) == 2 &&
        (std::strcmp(name, ".text") == 0 || std::strncmp(name, ".text.", 6) == 0)) {
      sum += bytes;
    } else if (std::sscanf(line, " %ld %ld %ld", &bytes, &d, &b) == 3) {
      berkeley = bytes;  // size -t: the last row is the total
    }
  }
  pclose(p);
  *text = sum;
  *loaded = berkeley;
  return berkeley >= 0 && sum > 0;
}

struct KtnFigures {
  bool have = false;
  Timing load, greedy, step100, beam100;
  double greedy_floor_ns = 0, greedy_stream_floor_ns = 0, step100_floor_ns = 0;
  long generated_rss_over_empty_kb = -1, generated_rss_over_empty_beam100_kb = -1;
  long heap = 0;
  Timing torch_greedy, torch_step100;
  Timing generated_greedy;  // runs 0: no generated predictor linked
  Timing fdeep_load, fdeep_greedy;  // runs 0: the frugally-deep peer is not built
};

void print_header() {
  std::printf("  %-42s %10s %10s %10s %10s %10s %7s\n", "", "median", "cpu med", "p10", "p90",
              "floor", "x floor");
}

// One timing row; `floor_ns` 0 for none. "x floor" uses the CPU-time median.
void row(const char* label, const Timing& t, double floor_ns, const std::string& extra = "") {
  std::printf("  %-42s %10s %10s %10s %10s", label, fmt_time(t.median_ns).c_str(),
              fmt_time(t.cpu_median_ns).c_str(), fmt_time(t.p10_ns).c_str(),
              fmt_time(t.p90_ns).c_str());
  if (floor_ns > 0) {
    std::printf(" %10s %7.2f", fmt_time(floor_ns).c_str(), t.cpu_median_ns / floor_ns);
  } else {
    std::printf(" %10s %7s", "", "");
  }
  std::printf("%s%s\n", extra.empty() ? "" : "  ", extra.c_str());
}

// Dense decoder-input buffers for a batch: token input 1.0, states a fixed pattern.
struct StepBuffers {
  std::vector<std::vector<float>> in, out;
  std::vector<const float*> in_ptr;
  std::vector<float*> out_ptr;
};

void make_step_buffers(const Model& model, int dec_index, int batch, StepBuffers* b) {
  const GraphInfo& dec = model.graph(dec_index);
  const uint32_t token_input = model.root()->seq2seq()->token_input();
  b->in.clear();
  b->out.clear();
  const auto& inputs = *dec.graph->inputs();
  for (uint32_t i = 0; i < inputs.size(); ++i) {
    const uint32_t id = inputs[i];
    const size_t rows = dec.value_rows[id] ? dec.value_rows[id] : static_cast<size_t>(batch);
    std::vector<float> v(rows * dec.value_cols[id]);
    for (size_t j = 0; j < v.size(); ++j) {
      v[j] = i == token_input ? 1.0f : 0.001f * static_cast<float>(j % 997) - 0.5f;
    }
    b->in.push_back(std::move(v));
  }
  for (uint32_t id : *dec.graph->outputs()) {
    const size_t rows = dec.value_rows[id] ? dec.value_rows[id] : static_cast<size_t>(batch);
    b->out.emplace_back(rows * dec.value_cols[id]);
  }
  b->in_ptr.clear();
  b->out_ptr.clear();
  for (auto& v : b->in) b->in_ptr.push_back(v.data());
  for (auto& v : b->out) b->out_ptr.push_back(v.data());
}

// Multiply-adds of a greedy prediction that are one-row products, bound by how fast weights
// stream from L2 rather than by the FMA peak: every decoder step at beam 1, and each encoder
// LSTM's recurrent product (one time step at a time; the runtime skips it at the first step
// without an initial state). The encoder's other products run over all time steps at once.
uint64_t one_row_multiply_adds(const Model& model, const GraphInfo& enc, const GraphInfo& dec) {
  uint64_t macs = uint64_t(model.parameter_count()) * dec.multiply_adds_per_row;
  for (const schema::Layer* layer : *enc.graph->layers()) {
    if (layer->type() != schema::LayerType::Lstm) continue;
    const uint64_t steps = enc.value_rows[layer->inputs()->Get(0)];
    const uint64_t recurrent_steps = layer->inputs()->size() == 3 ? steps : steps - 1;
    macs += recurrent_steps * layer->recurrent()->rows() * layer->recurrent()->cols();
  }
  return macs;
}

void report(const Options& o, const FmaRate& fma, Subject& s, Failures* failures, KtnFigures* ktn) {
  std::printf("\n== %s\n", s.name.c_str());
  Model model;
  Status status = Model::load(s.bytes, s.size, &model);
  if (!status) {
    std::printf("  load failed: %s\n", status.message());
    failures->fail("the blob does not load");
    return;
  }
  std::printf("  blob %zu bytes, %d graphs, %d parameters, %d tokens, %u constraints\n", s.size,
              model.graph_count(), model.parameter_count(), model.token_count(),
              model.root()->constraints() ? model.root()->constraints()->size() : 0u);
  print_header();

  // Load: verify only (bytes already in memory), and map + verify from the page cache.
  const Timing load = measure(o, [&] {
    Model m;
    Status st = Model::load(s.bytes, s.size, &m);
    benchmark::DoNotOptimize(st);
  });
  row("load (verify; bytes in memory)", load, 0);
  // The same with the weights checksum checked (LoadOptions::verify_checksum: one pass over every
  // weight byte); a blob that records none is refused, timed all the same.
  LoadOptions with_checksum;
  with_checksum.verify_checksum = true;
  const Timing checked_load = measure(o, [&] {
    Model m;
    Status st = Model::load(s.bytes, s.size, with_checksum, &m);
    benchmark::DoNotOptimize(st);
  });
  row(model.recorded_weights_checksum() ? "load + weights checksum (FNV-1a 64)"
                                        : "load + weights checksum (none recorded)",
      checked_load, 0);
  if (!s.blob_path.empty()) {
    const Timing map_load = measure(o, [&] {
      codegen::MappedFile file;
      Model m;
      if (file.open(s.blob_path)) {
        Status st = Model::load(file.data(), file.size(), &m);
        benchmark::DoNotOptimize(st);
      }
    }, 5000);
    row("load (mmap + verify + munmap; page cache)", map_load, 0);
  }
  if (!model.is_seq2seq()) {
    std::printf("  (not a sequence-to-sequence predictor: prediction figures skipped)\n");
    return;
  }

  Problem problem;
  const std::string problem_text = subject_problem(o, model);
  status = parse_problem(problem_text, &problem);
  if (!status) {
    std::printf("  --problem: %s\n", status.message());
    failures->fail("bad problem");
    return;
  }
  const bool has_encoding = model.root()->encoding() != nullptr;
  const schema::Seq2Seq* s2s = model.root()->seq2seq();
  const int enc_index = static_cast<int>(s2s->encoder());
  const int dec_index = static_cast<int>(s2s->decoder());
  const GraphInfo& enc = model.graph(enc_index);
  const GraphInfo& dec = model.graph(dec_index);
  const uint32_t enc_in = enc.graph->inputs()->Get(0);
  std::vector<float> features(size_t{enc.value_rows[enc_in]} * enc.value_cols[enc_in], 0.0f);
  if (has_encoding) {
    status = encode_problem(model, problem, features.data(), features.size(), nullptr);
    if (!status) {
      std::printf("  encode_problem: %s\n", status.message());
      failures->fail("problem does not encode");
      return;
    }
  }

  const int kMaxK = 128;
  std::vector<unsigned char> scratch_storage(model.scratch_bytes(kMaxK));
  unsigned char* scratch = scratch_storage.data();
  const size_t scratch_size = scratch_storage.size();
  std::vector<Candidate> out(kMaxK);
  HeapCount heap;
  PredictInfo info;
  auto run_predict = [&](int beam, bool constrained) {
    PredictOptions options;
    options.beam_width = beam;
    options.use_model_constraints = constrained;
    Status st;
    auto call = [&] {
      st = has_encoding
               ? predict(model, problem, options, scratch, scratch_size, out.data(), kMaxK, &info)
               : predict_from_features(model, features.data(), features.size(), nullptr, options,
                                       scratch, scratch_size, out.data(), kMaxK, &info);
    };
    counting(&heap, call)();
    return st;
  };

  const double mac_ns = 1.0 / fma.per_ns;  // ns per multiply-add at the measured peak
  const uint64_t greedy_macs = model.greedy_multiply_adds();
  const double greedy_floor = static_cast<double>(greedy_macs) * mac_ns;
  const uint64_t one_row_macs = one_row_multiply_adds(model, enc, dec);
  // The floor with one-row products at the measured L2 stream rate, the rest at the FMA peak.
  const double greedy_stream_floor = static_cast<double>(one_row_macs) / fma.one_row_per_ns +
                                     static_cast<double>(greedy_macs - one_row_macs) * mac_ns;
  // Weights beyond this core's L2 stream from L3 on every step: the floor at the L3 rate instead.
  const long l2_bytes = l2_cache_bytes();
  const bool fits_l2 = static_cast<long>(s.size) <= l2_bytes;
  const double greedy_memory_floor =
      fits_l2 ? greedy_stream_floor
              : static_cast<double>(one_row_macs) / fma.one_row_l3_per_ns +
                    static_cast<double>(greedy_macs - one_row_macs) * mac_ns;
  auto dec_macs = [&](int batch) {
    return static_cast<double>(dec.multiply_adds_fixed + dec.multiply_adds_per_row * batch);
  };

  // Components: encoder alone, one decoder step at several batch sizes.
  {
    std::vector<std::vector<float>> outs;
    std::vector<float*> out_ptr;
    for (uint32_t id : *enc.graph->outputs()) outs.emplace_back(size_t{std::max(1u, enc.value_rows[id])} * enc.value_cols[id]);
    for (auto& v : outs) out_ptr.push_back(v.data());
    const float* enc_inputs[1] = {features.data()};
    auto call = [&] {
      Status st = run_graph(model, enc_index, 1, enc_inputs, 1, out_ptr.data(),
                            static_cast<int>(out_ptr.size()), scratch, scratch_size);
      benchmark::DoNotOptimize(st);
    };
    row("encoder (run_graph)", measure(o, counting(&heap, call)), enc.multiply_adds_fixed * mac_ns);
  }
  Timing step100;
  double step100_floor = 0;
  for (int batch : {1, 10, 100, 128}) {
    StepBuffers b;
    make_step_buffers(model, dec_index, batch, &b);
    auto call = [&] {
      Status st = run_graph(model, dec_index, batch, b.in_ptr.data(), static_cast<int>(b.in_ptr.size()),
                            b.out_ptr.data(), static_cast<int>(b.out_ptr.size()), scratch, scratch_size);
      benchmark::DoNotOptimize(st);
    };
    const Timing t = measure(o, counting(&heap, call));
    char label[64], extra[64];
    std::snprintf(label, sizeof label, "decoder step, batch %d (run_graph)", batch);
    std::snprintf(extra, sizeof extra, "%.2f us/beam", t.cpu_median_ns / 1e3 / batch);
    row(label, t, dec_macs(batch) * mac_ns, extra);
    if (batch == 100) {
      step100 = t;
      step100_floor = dec_macs(batch) * mac_ns;
    }
  }

  // Whole predictions.
  std::vector<int> runtime_free_tokens;
  status = run_predict(1, true);
  std::string greedy_text;
  if (!status) {
    std::printf("  greedy: %s\n", status.message());
    failures->fail("greedy prediction failed");
  } else {
    for (int p = 0; p < out[0].length; ++p) greedy_text += " " + std::to_string(out[0].values[p]);
  }
  if (run_predict(1, false)) {
    // In decode order, as the peer emits them (candidates store tokens by position).
    for (int s = 0; s < out[0].length; ++s) runtime_free_tokens.push_back(out[0].tokens[model.decode_position(s)]);
  }
  const Timing greedy = measure(o, [&] { run_predict(1, true); });
  row("greedy predict (constrained)", greedy, greedy_floor, "->" + greedy_text);
  const Timing greedy_free = measure(o, [&] { run_predict(1, false); });
  row("greedy predict (constraints off)", greedy_free, greedy_floor);
  row("greedy predict (constrained) vs L2 floor", greedy, greedy_stream_floor,
      std::to_string(one_row_macs) + " one-row multiply-adds");
  if (!fits_l2) {
    char why[96];
    std::snprintf(why, sizeof why, "blob %.1f MB > L2 %.1f MB: one-row products at the L3 rate", s.size / 1048576.0,
                  l2_bytes / 1048576.0);
    row("greedy predict (constrained) vs L3 floor", greedy, greedy_memory_floor, why);
  }
  // Floor of a beam-k search: the encoder, one step at batch 1, the others at the full width (an
  // upper bound: early positions may hold fewer live beams).
  auto beam_floor = [&](int k) {
    return (static_cast<double>(enc.multiply_adds_fixed) + dec_macs(1) +
            (model.parameter_count() - 1) * dec_macs(k)) * mac_ns;
  };
  Timing beam100, beam10;
  for (int k : {1, 10, 30, 100, 128}) {
    Status st = run_predict(k, true);
    const int candidates = info.candidates;
    const Timing t = measure(o, [&] { run_predict(k, true); }, 5000, 11);
    const double floor = beam_floor(k);
    char label[64], extra[96];
    std::snprintf(label, sizeof label, "beam search k=%d (constrained)", k);
    std::snprintf(extra, sizeof extra, "%d cand.%s, scratch %zu B", candidates,
                  st ? "" : " FAILED", model.scratch_bytes(k));
    row(label, t, floor, extra);
    if (!st) failures->fail("beam search failed");
    if (k == 100) beam100 = t;
    if (k == 10) beam10 = t;
  }
  LevelFigures figures;
  figures.subject = s.name;
  figures.level = simd_level();
  figures.ktn = ktn != nullptr;
  figures.load_ns = load.cpu_median_ns;
  figures.heap = heap.news + heap.mallocs;
  figures.greedy_ns = greedy.cpu_median_ns;
  figures.greedy_l2_floor_ns = greedy_stream_floor;
  figures.greedy_memory_floor_ns = greedy_memory_floor;
  figures.beam10_ns = beam10.cpu_median_ns;
  figures.beam100_ns = beam100.cpu_median_ns;
  figures.step100_ns = step100.cpu_median_ns;
  figures.step100_floor_ns = step100_floor;
  g_level_figures.push_back(figures);
  std::printf("  arithmetic: greedy %llu multiply-adds (encoder %llu, decoder step %llu + %llu per beam)\n",
              static_cast<unsigned long long>(greedy_macs),
              static_cast<unsigned long long>(enc.multiply_adds_fixed),
              static_cast<unsigned long long>(dec.multiply_adds_fixed),
              static_cast<unsigned long long>(dec.multiply_adds_per_row));
  std::printf("  heap during predict/run_graph: %ld operator new, %ld malloc-family calls\n",
              heap.news, heap.mallocs);
  if (heap.news != 0 || heap.mallocs != 0) failures->fail("the runtime allocated on the heap");

  long rss_start = 0, rss_peak = 0;
  for (int k : {1, 100}) {
    if (!s.blob_path.empty() &&
        probe_rss("tunecast_min_predict", "'" + s.blob_path + "' " + std::to_string(k) + " '" + problem_text + "'",
                  &rss_start, &rss_peak)) {
      std::printf("  peak RSS, tunecast_min_predict beam %-3d: %.1f MB (%.1f MB at process start; "
                  "blob %.2f MB, scratch %.2f MB)\n",
                  k, rss_peak / 1024.0, rss_start / 1024.0, s.size / 1048576.0,
                  model.scratch_bytes(k) / 1048576.0);
    } else {
      std::printf("  peak RSS: probe unavailable (needs tunecast_min_predict next to this binary)\n");
      break;
    }
  }

  // The KTN's generated C++ in a process of its own, against an empty C++ program.
  long empty_start = 0, empty_peak = 0;
  if (ktn != nullptr && probe_rss("tunecast_empty_process", "", &empty_start, &empty_peak)) {
    std::printf("  peak RSS, empty C++ program: %.1f MB\n", empty_peak / 1024.0);
    for (int k : {1, 100}) {
      if (!probe_rss("tunecast_min_generated", std::to_string(k) + " '" + problem_text + "'", &rss_start,
                     &rss_peak)) {
        std::printf("  peak RSS, generated predictor: probe unavailable (tunecast_min_generated is built"
                    " when the KTN is in the shared data)\n");
        break;
      }
      std::printf("  peak RSS, tunecast_min_generated beam %-3d: %.1f MB = empty program + %.2f MB\n", k,
                  rss_peak / 1024.0, (rss_peak - empty_peak) / 1024.0);
      if (k == 1) ktn->generated_rss_over_empty_kb = rss_peak - empty_peak;
      if (k == 100) ktn->generated_rss_over_empty_beam100_kb = rss_peak - empty_peak;
    }
  }

  // Generated C++ predictor, when one for this model is linked in.
  int generated_count = 0;
  const GeneratedPredictor* generated = generated_predictors(&generated_count);
  bool generated_found = false;
  Timing generated_greedy;
  const char* model_name = model.root()->name() ? model.root()->name()->c_str() : "";
  for (int i = 0; i < generated_count && !s.fp16_weights; ++i) {
    if (std::strcmp(generated[i].name, model_name) != 0) continue;
    generated_found = true;
    std::vector<unsigned char> gscratch(generated[i].scratch_bytes(kMaxK));
    for (int k : {1, 10, 30, 100, 128}) {
      PredictOptions options;
      options.beam_width = k;
      HeapCount gheap;
      auto call = [&] {
        generated[i].predict(problem, options, gscratch.data(), gscratch.size(), out.data(), kMaxK, &info);
      };
      const Timing t = measure(o, counting(&gheap, call), 5000, 11);
      char label[64];
      std::snprintf(label, sizeof label, "generated C++ beam k=%d", k);
      row(label, t, beam_floor(k), "heap " + std::to_string(gheap.news + gheap.mallocs));
      if (gheap.news || gheap.mallocs) failures->fail("the generated predictor allocated");
      if (k == 1) generated_greedy = t;
    }
  }
  if (s.fp16_weights) {
    std::printf("  generated C++ predictor: the fp32 one is timed with the fp32 blob\n");
  } else if (!generated_found) {
    std::printf("  generated C++ predictor: none linked for '%s' (hook: bench/generated_hook.h)\n",
                model_name);
  }

  // What the peers may pick at each decode step: the tokens the vocabulary allows there, end tokens
  // too where they compete (the runtime with its constraints off, runtime_free_tokens).
  const bool end_competes = model.root()->vocabulary()->end_policy() == schema::EndPolicy::FixedLength;
  std::vector<std::vector<bool>> allowed(model.parameter_count(), std::vector<bool>(model.token_count()));
  for (int step = 0; step < model.parameter_count(); ++step) {
    for (int t = 0; t < model.token_count(); ++t) {
      allowed[step][t] = model.token_allowed(model.decode_position(step), t) || (end_competes && model.is_end_token(t));
    }
  }

  // libtorch peer.
  Timing torch_greedy, torch_step100;
  if (o.torch && s.have_ir) {
    std::string why;
    std::unique_ptr<TorchPeer> peer = make_torch_peer(s.ir, &why);
    if (!peer) {
      std::printf("  libtorch peer: %s\n", why.c_str());
    } else {
      const std::vector<int> torch_tokens = peer->greedy(features, allowed);
      const bool same = torch_tokens == runtime_free_tokens;
      std::printf("  libtorch peer (%s): greedy tokens", torch_description().c_str());
      for (int t : torch_tokens) std::printf(" %d", t);
      std::printf(" -> %s the runtime's (constraints off)\n", same ? "same as" : "DIFFERENT FROM");
      if (!same) failures->fail("libtorch and the runtime disagree on the greedy sequence");
      torch_greedy = measure(o, [&] { benchmark::DoNotOptimize(peer->greedy(features, allowed)); }, 2000, 11);
      char extra[64];
      std::snprintf(extra, sizeof extra, "tunecast %.1fx faster (cpu, constraints off)",
                    torch_greedy.cpu_median_ns / greedy_free.cpu_median_ns);
      row("libtorch greedy (constraints off)", torch_greedy, greedy_floor, extra);
      peer->prepare_step(1);
      row("libtorch decoder step, batch 1", measure(o, [&] { peer->step(); }, 2000, 11), dec_macs(1) * mac_ns);
      peer->prepare_step(100);
      torch_step100 = measure(o, [&] { peer->step(); }, 2000, 11);
      std::snprintf(extra, sizeof extra, "tunecast %.1fx faster (cpu)",
                    torch_step100.cpu_median_ns / step100.cpu_median_ns);
      row("libtorch decoder step, batch 100", torch_step100, step100_floor, extra);
    }
  } else if (o.torch) {
    std::printf("  libtorch peer: needs the compiler IR (only models imported at bench time)\n");
  }

  // frugally-deep peer (MIOpen's runtime) on the KTN's own Keras files: loaded and timed once, as
  // its speed does not depend on the runtime's SIMD level; its tokens are checked at every level.
  if (ktn != nullptr && !s.fdeep_tried) {
    s.fdeep_tried = true;
    std::string why;
    const std::string prefix = o.data_dir + "/miopen/models/gfx908_ConvAsm1x1U";
    s.fdeep_load = measure(o, [&] { s.fdeep = load_fdeep_peer(prefix, &why); }, 40, 5);
    if (!s.fdeep) {
      std::printf("  frugally-deep peer: %s\n", why.c_str());
      s.fdeep_load = Timing{};
    }
  }
  if (ktn != nullptr && s.fdeep) {
    const int rows = static_cast<int>(enc.value_rows[enc_in]), cols = static_cast<int>(enc.value_cols[enc_in]);
    const std::vector<int> tokens = s.fdeep->greedy(features, rows, cols, allowed);
    const bool same = tokens == runtime_free_tokens;
    std::printf("  frugally-deep peer (%s): greedy tokens", fdeep_description().c_str());
    for (int t : tokens) std::printf(" %d", t);
    std::printf(" -> %s the runtime's (constraints off)\n", same ? "same as" : "DIFFERENT FROM");
    if (!same) failures->fail("frugally-deep and the runtime disagree on the greedy sequence");
    if (s.fdeep_greedy.runs == 0) {
      s.fdeep_greedy =
          measure(o, [&] { benchmark::DoNotOptimize(s.fdeep->greedy(features, rows, cols, allowed)); }, 2000, 11);
    }
    row("frugally-deep load (encoder + decoder JSON)", s.fdeep_load, 0);
    char extra[96];
    std::snprintf(extra, sizeof extra, "tunecast %.1fx faster (cpu; tunecast constrained)",
                  s.fdeep_greedy.cpu_median_ns / greedy.cpu_median_ns);
    row("frugally-deep greedy (no validity check)", s.fdeep_greedy, greedy_floor, extra);
  }

  if (ktn) {
    ktn->have = true;
    ktn->load = load;
    ktn->greedy = greedy;
    ktn->greedy_floor_ns = greedy_floor;
    ktn->greedy_stream_floor_ns = greedy_stream_floor;
    ktn->step100 = step100;
    ktn->step100_floor_ns = step100_floor;
    ktn->beam100 = beam100;
    ktn->heap = heap.news + heap.mallocs;
    ktn->torch_greedy = torch_greedy;
    ktn->torch_step100 = torch_step100;
    ktn->generated_greedy = generated_greedy;
    ktn->fdeep_load = s.fdeep_load;
    ktn->fdeep_greedy = s.fdeep_greedy;
  }
}

void goal_line(const char* goal, const std::string& value, bool met) {
  std::printf("  %-56s %-36s %s\n", goal, value.c_str(), met ? "met" : "NOT met");
}

// The KTN's goals at the level just measured (issue 22; load, beam 100 and RSS from issue 8).
void print_goals(const KtnFigures& k) {
  std::printf("\n== goals at SIMD level %s (gfx908 ConvAsm1x1U KTN; CPU-time medians)\n",
              simd_level_name(simd_level()));
  char v[160];
  std::snprintf(v, sizeof v, "%s = L2 floor x%.2f", fmt_time(k.greedy.cpu_median_ns).c_str(),
                k.greedy.cpu_median_ns / k.greedy_stream_floor_ns);
  goal_line("greedy <= 1.5x its L2 floor", v, k.greedy.cpu_median_ns <= 1.5 * k.greedy_stream_floor_ns);
  std::printf("  %-56s %s = FMA floor x%.2f\n", "  (for reference: the FMA floor alone)",
              fmt_time(k.greedy.cpu_median_ns).c_str(), k.greedy.cpu_median_ns / k.greedy_floor_ns);
  if (k.generated_greedy.runs > 0) {
    std::printf("  %-56s %s = L2 floor x%.2f\n", "  (the same through the generated C++)",
                fmt_time(k.generated_greedy.cpu_median_ns).c_str(),
                k.generated_greedy.cpu_median_ns / k.greedy_stream_floor_ns);
  }
  std::snprintf(v, sizeof v, "%s = FMA floor x%.2f", fmt_time(k.step100.cpu_median_ns).c_str(),
                k.step100.cpu_median_ns / k.step100_floor_ns);
  goal_line("beam 100: a decoder step <= 1.3x its FMA floor", v, k.step100.cpu_median_ns <= 1.3 * k.step100_floor_ns);
  if (k.fdeep_greedy.runs > 0) {
    std::snprintf(v, sizeof v, "fdeep %s = tunecast x%.1f", fmt_time(k.fdeep_greedy.cpu_median_ns).c_str(),
                  k.fdeep_greedy.cpu_median_ns / k.greedy.cpu_median_ns);
    goal_line("greedy >= 5x faster than frugally-deep (this run)", v,
              k.greedy.cpu_median_ns * 5 <= k.fdeep_greedy.cpu_median_ns);
    std::snprintf(v, sizeof v, "fdeep %s = tunecast x%.0f", fmt_time(k.fdeep_load.cpu_median_ns).c_str(),
                  k.fdeep_load.cpu_median_ns / k.load.cpu_median_ns);
    goal_line("load <= 1/500 of frugally-deep's (this run)", v,
              k.load.cpu_median_ns * 500 <= k.fdeep_load.cpu_median_ns);
  } else {
    std::printf("  %-56s %s\n", "greedy >= 5x faster than frugally-deep",
                "not measured: the frugally-deep peer is not built (docs/benchmarks.md)");
  }
  std::snprintf(v, sizeof v, "%s", fmt_time(k.beam100.cpu_median_ns).c_str());
  goal_line("beam 100: whole prediction < 4 ms", v, k.beam100.cpu_median_ns < 4e6);
  std::snprintf(v, sizeof v, "%ld", k.heap);
  goal_line("0 heap allocations in predict", v, k.heap == 0);
  if (k.generated_rss_over_empty_kb >= 0) {
    std::snprintf(v, sizeof v, "+%.2f MB", k.generated_rss_over_empty_kb / 1024.0);
    goal_line("generated predictor, greedy: peak RSS <= empty + 2.5 MB", v, k.generated_rss_over_empty_kb <= 2560);
    std::snprintf(v, sizeof v, "+%.2f MB", k.generated_rss_over_empty_beam100_kb / 1024.0);
    goal_line("  the same at beam 100", v, k.generated_rss_over_empty_beam100_kb <= 2560);
  }
  if (k.torch_greedy.runs > 0) {
    std::printf("  %-56s greedy x%.1f, decoder step over 100 beams x%.1f\n",
                "libtorch / tunecast in this run (cpu)", k.torch_greedy.cpu_median_ns / k.greedy.cpu_median_ns,
                k.torch_step100.cpu_median_ns / k.step100.cpu_median_ns);
  }
}

// The goals over every subject and level (issue 22): each predictor's greedy within 2x of its L2
// floor, no heap at any level, and sse2 within 3x of avx2 when both ran.
void print_level_goals() {
  if (g_level_figures.empty()) return;
  std::printf("\n== goals over every predictor and level (issue 22)\n");
  char goal[160], v[160];
  for (const LevelFigures& f : g_level_figures) {
    std::snprintf(goal, sizeof goal, "%.30s %s: greedy <= %s its L2 floor", f.subject.c_str(),
                  simd_level_name(f.level), f.ktn ? "1.5x" : "2x");
    std::snprintf(v, sizeof v, "%s = x%.2f (L3 floor x%.2f), heap %ld", fmt_time(f.greedy_ns).c_str(),
                  f.greedy_ns / f.greedy_l2_floor_ns, f.greedy_ns / f.greedy_memory_floor_ns, f.heap);
    goal_line(goal, v, f.greedy_ns <= (f.ktn ? 1.5 : 2.0) * f.greedy_l2_floor_ns && f.heap == 0);
  }
  for (const LevelFigures& s : g_level_figures) {
    if (s.level != SimdLevel::kSse2) continue;
    for (const LevelFigures& a : g_level_figures) {
      if (a.level != SimdLevel::kAvx2 || a.subject != s.subject) continue;
      const double worst = std::max({s.greedy_ns / a.greedy_ns, s.beam10_ns / a.beam10_ns,
                                     s.beam100_ns / a.beam100_ns});
      std::snprintf(goal, sizeof goal, "%.30s: sse2 <= 3x avx2", s.subject.c_str());
      std::snprintf(v, sizeof v, "greedy x%.2f, beam 10 x%.2f, beam 100 x%.2f", s.greedy_ns / a.greedy_ns,
                    s.beam10_ns / a.beam10_ns, s.beam100_ns / a.beam100_ns);
      goal_line(goal, v, worst <= 3.0);
    }
  }
}

// --json FILE: every subject's headline figures at every level, for bench/compare_builds.py (the
// portable build against a -march=native one).
Status write_json(const std::string& path) {
  nlohmann::json figures = nlohmann::json::array();
  for (const LevelFigures& x : g_level_figures) {
    figures.push_back({{"subject", x.subject}, {"level", simd_level_name(x.level)}, {"ktn", x.ktn},
                       {"load_ns", x.load_ns}, {"greedy_ns", x.greedy_ns}, {"greedy_l2_floor_ns", x.greedy_l2_floor_ns},
                       {"beam10_ns", x.beam10_ns}, {"beam100_ns", x.beam100_ns}, {"step100_ns", x.step100_ns},
                       {"step100_floor_ns", x.step100_floor_ns}, {"heap", x.heap}});
  }
  const nlohmann::json report = {{"best_level", simd_level_name(best_simd_level())}, {"figures", figures}};
  return codegen::write_file_atomic(path, report.dump(1) + "\n");
}

void print_code_size() {
  long runtime_text = 0, runtime_loaded = 0, probe_text = 0, probe_loaded = 0;
  std::printf("\n== code size (size -A: .text sections; size -t: text column)\n");
  if (size_of(TUNECAST_RUNTIME_ARCHIVE, &runtime_text, &runtime_loaded)) {
    std::printf("  runtime library, all objects (every SIMD level): .text %ld bytes (%.1f KB)  goal < 128 KB:"
                " %s; with read-only data and unwind tables %ld bytes\n",
                runtime_text, runtime_text / 1024.0, runtime_text < 128 * 1024 ? "met" : "NOT met",
                runtime_loaded);
  } else {
    std::printf("  runtime library: `size` unavailable\n");
  }
  if (size_of(exe_dir() + "/tunecast_min_predict", &probe_text, &probe_loaded)) {
    std::printf("  tunecast_min_predict (runtime + main, libstdc++ shared): .text %ld bytes (%.1f KB),"
                " text column %ld bytes\n",
                probe_text, probe_text / 1024.0, probe_loaded);
  }
}

// Each subject's headline figures at every level run, and the ratio to the fastest level.
void print_levels() {
  if (g_level_figures.empty()) return;
  std::printf("\n== SIMD levels side by side (medians; x = time / the fastest level's)\n");
  std::printf("  %-34s %-7s %20s %20s %20s %20s\n", "subject", "level", "greedy", "greedy / L2 floor",
              "beam 10", "beam 100");
  for (const LevelFigures& f : g_level_figures) {
    double best_greedy = 1e300, best10 = 1e300, best100 = 1e300;
    for (const LevelFigures& g : g_level_figures) {
      if (g.subject != f.subject) continue;
      best_greedy = std::min(best_greedy, g.greedy_ns);
      best10 = std::min(best10, g.beam10_ns);
      best100 = std::min(best100, g.beam100_ns);
    }
    char greedy[40], floor[40], b10[40], b100[40];
    std::snprintf(greedy, sizeof greedy, "%s x%.2f", fmt_time(f.greedy_ns).c_str(), f.greedy_ns / best_greedy);
    std::snprintf(floor, sizeof floor, "x%.2f", f.greedy_ns / f.greedy_l2_floor_ns);
    std::snprintf(b10, sizeof b10, "%s x%.2f", fmt_time(f.beam10_ns).c_str(), f.beam10_ns / best10);
    std::snprintf(b100, sizeof b100, "%s x%.2f", fmt_time(f.beam100_ns).c_str(), f.beam100_ns / best100);
    std::printf("  %-34.34s %-7s %20s %20s %20s %20s\n", f.subject.c_str(), simd_level_name(f.level),
                greedy, floor, b10, b100);
  }
}

int usage() {
  std::printf(
      "usage: tunecast_bench [--smoke] [--no-torch] [--no-ktn] [--data DIR] [--problem FIELDS]\n"
      "                      [--seconds S] [--simd LEVELS] [--json FILE] [MODEL.tcm ...]\n\n"
      "Times blob load, greedy and beam-search prediction (k = 1, 10, 30, 100, 128), decoder steps,\n"
      "memory and heap use of the runtime on MIOpen's gfx908 ConvAsm1x1U KTN (imported from DIR,\n"
      "default $TUNECAST_DATA_DIR or the checkout's ../shared/data), on every shipped predictor this\n"
      "build compiled (build/weights/*.tcm) and\n"
      "on each MODEL.tcm given; compares with this core's FMA floor and libtorch (one thread).\n"
      "--simd sse2,avx2,avx512 (or all: every level this CPU runs) repeats the report at each SIMD\n"
      "level and ends with a side-by-side table; default: the level the runtime picks (TUNECAST_SIMD\n"
      "or the best). Floors are always the best level's.\n"
      "--json FILE writes every level's headline figures (bench/compare_builds.py compares two\n"
      "builds with them).\n"
      "--smoke runs each figure once (CI): exit status 1 if predict touches the heap or anything\n"
      "fails, never because of a time.\n");
  return 0;
}

}  // namespace
}  // namespace tunecast::bench

int main(int argc, char** argv) {
  using namespace tunecast;
  using namespace tunecast::bench;
  Options o;
  const char* env = std::getenv("TUNECAST_DATA_DIR");
  o.data_dir = env && env[0] ? env : TUNECAST_SOURCE_DIR "/../shared/data";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tunecast_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--smoke") o.smoke = true;
    else if (a == "--no-torch") o.torch = false;
    else if (a == "--no-ktn") o.ktn = false;
    else if (a == "--data") o.data_dir = value();
    else if (a == "--problem") o.problem = value();
    else if (a == "--seconds") o.seconds = std::atof(value().c_str());
    else if (a == "--json") o.json = value();
    else if (a == "--simd") {
      const std::string list = value();
      if (list == "all") {
        for (SimdLevel l : {SimdLevel::kSse2, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
          if (simd_level_supported(l)) o.levels.push_back(l);
        }
        continue;
      }
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        SimdLevel level;
        Status st = parse_simd_level(list.substr(start, comma - start).c_str(), &level);
        if (!st) {
          std::fprintf(stderr, "tunecast_bench: --simd: %s\n", st.message());
          return 2;
        }
        o.levels.push_back(level);
        start = comma + 1;
      }
    }
    else if (a == "--help" || a == "-h") return usage();
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "tunecast_bench: unknown option '%s' (try --help)\n", a.c_str());
      return 2;
    } else o.models.push_back(a);
  }

  Status env_status = apply_simd_environment();
  if (!env_status) {
    std::fprintf(stderr, "tunecast_bench: %s\n", env_status.message());
    return 2;
  }
  const FmaRate fma = measure_floor(o.smoke);
  std::printf("tunecast_bench%s: kernels at SIMD level %s (best on this CPU: %s), %s\n",
              o.smoke ? " --smoke" : "", simd_level_name(simd_level()),
              simd_level_name(best_simd_level()),
              o.torch ? torch_description().c_str() : "libtorch off");
  std::printf("FMA peak: %.1f fp32 multiply-adds/ns (%d-lane vectors; = %.1f per cycle at 3.6 GHz)\n",
              fma.per_ns, fma.lanes, fma.per_ns / 3.6);
  std::printf("one-row product from L2: %.1f multiply-adds/ns (%.0f bytes/ns of fp32 weights, each used "
              "once); with bf16 weights %.1f (not used: docs/benchmarks.md)\n",
              fma.one_row_per_ns, 4 * fma.one_row_per_ns, fma.one_row_bf16_per_ns);
  std::printf("one-row product from L3 (8 MiB of weights; L2 here %.1f MB): %.1f multiply-adds/ns\n",
              l2_cache_bytes() / 1048576.0, fma.one_row_l3_per_ns);
  std::printf("times are medians of per-call wall times%s\n", o.smoke ? " (smoke: one call each)" : "");

  std::vector<Subject> subjects;
  Failures failures;
  if (o.ktn) {
    for (const auto weights : {codegen::WeightStorage::kFp32, codegen::WeightStorage::kFp16}) {
      subjects.emplace_back();
      Status st = import_ktn_subject(o.data_dir, weights, &subjects.back());
      if (!st) {
        std::printf("\n(KTN skipped: %s)\n", st.message());
        subjects.pop_back();
        break;
      }
    }
  }
  std::vector<std::string> paths = o.models;
  std::error_code error;
  // The shipped predictors as this build compiled them (weights/CMakeLists.txt).
  const std::filesystem::path weights = TUNECAST_WEIGHTS_DIR;
  if (o.models.empty() && std::filesystem::is_directory(weights, error)) {
    std::vector<std::string> shipped;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(weights, error)) {
      if (entry.is_regular_file() && entry.path().extension() == ".tcm") shipped.push_back(entry.path().string());
    }
    std::sort(shipped.begin(), shipped.end());
    if (shipped.empty()) std::printf("(no compiled predictors under %s)\n", TUNECAST_WEIGHTS_DIR);
    paths.insert(paths.end(), shipped.begin(), shipped.end());
  }
  for (const std::string& path : paths) {
    subjects.emplace_back();
    Status st = blob_subject(path, &subjects.back());
    if (!st) {
      std::printf("\n== %s\n  %s\n", path.c_str(), st.message());
      failures.fail("cannot read the blob");
      subjects.pop_back();
    }
  }

  if (o.levels.empty()) o.levels.push_back(simd_level());
  for (SimdLevel level : o.levels) {
    Status st = set_simd_level(level);
    if (!st) {
      std::printf("\n== SIMD level %s: skipped (%s)\n", simd_level_name(level), st.message());
      continue;
    }
    std::printf("\n######## SIMD level %s (of %s on this CPU) ########\n", simd_level_name(level),
                simd_level_name(best_simd_level()));
    KtnFigures ktn;
    for (size_t i = 0; i < subjects.size(); ++i) {
      const bool is_ktn = o.ktn && i == 0 && subjects[i].have_ir;
      report(o, fma, subjects[i], &failures, is_ktn ? &ktn : nullptr);
    }
    if (ktn.have) print_goals(ktn);
  }
  print_levels();
  print_level_goals();
  print_code_size();
  for (Subject& s : subjects) {
    if (s.temp_file) unlink(s.blob_path.c_str());
  }
  if (!o.json.empty()) {
    const Status st = write_json(o.json);
    if (!st) {
      std::fprintf(stderr, "tunecast_bench: %s\n", st.message());
      return 1;
    }
  }
  if (failures.count) {
    std::printf("\n%d check(s) failed\n", failures.count);
    return 1;
  }
  std::printf("\nok\n");
  return 0;
}
