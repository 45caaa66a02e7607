// Run-time choice of the SIMD level and the public layer functions that route through it.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "simd/layer_table.h"
#include "tunecast/layers.h"
#include "tunecast/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TUNECAST_SIMD_X86 1
#else
#define TUNECAST_SIMD_X86 0  // the one portable level (named sse2) is all there is
#endif

namespace tunecast {
namespace {

// Null until the first choice; a relaxed atomic: racing first uses choose the same table.
std::atomic<const simd::LayerTable*> active_table{nullptr};
std::atomic<int> active_level{-1};

const simd::LayerTable* table_of(SimdLevel level) {
  switch (level) {
#if TUNECAST_SIMD_X86
    case SimdLevel::kAvx512: return &simd::kLayersAvx512;
    case SimdLevel::kAvx2: return &simd::kLayersAvx2;
#endif
    default: return &simd::kLayersSse2;
  }
}

void use(SimdLevel level) {
  active_table.store(table_of(level), std::memory_order_relaxed);
  active_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

// TUNECAST_SIMD when it names a level this CPU runs, else the best level.
SimdLevel initial_level() {
  const char* env = std::getenv("TUNECAST_SIMD");
  SimdLevel level;
  if (env != nullptr && parse_simd_level(env, &level).is_ok() && simd_level_supported(level)) {
    return level;
  }
  return best_simd_level();
}

#if TUNECAST_SIMD_X86
// F16C from cpuid leaf 1 (Clang 14's __builtin_cpu_supports has no "f16c"); the AVX check beside
// it already covers the OS's saved vector state.
bool cpu_has_f16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

const simd::LayerTable& table() {
  const simd::LayerTable* t = active_table.load(std::memory_order_relaxed);
  if (t == nullptr) {
    use(initial_level());
    t = active_table.load(std::memory_order_relaxed);
  }
  return *t;
}

}  // namespace

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kSse2: return "sse2";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

Status parse_simd_level(const char* text, SimdLevel* level) {
  if (std::strcmp(text, "best") == 0) {
    *level = best_simd_level();
    return Status::ok();
  }
  for (SimdLevel l : {SimdLevel::kSse2, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (std::strcmp(text, simd_level_name(l)) == 0) {
      *level = l;
      return Status::ok();
    }
  }
  return Status::error(StatusCode::kInvalidArgument,
                       "unknown SIMD level '%s' (sse2, avx2, avx512 or best)", text);
}

bool simd_level_supported(SimdLevel level) {
#if TUNECAST_SIMD_X86
  // libgcc / compiler-rt read cpuid and check with xgetbv that the OS saves the vector state.
  __builtin_cpu_init();  // we may run before the constructors (static initializers)
  switch (level) {
    case SimdLevel::kSse2: return true;
    case SimdLevel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case SimdLevel::kAvx512:
      return simd_level_supported(SimdLevel::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return level == SimdLevel::kSse2;
#endif
}

SimdLevel best_simd_level() {
  for (SimdLevel l : {SimdLevel::kAvx512, SimdLevel::kAvx2}) {
    if (simd_level_supported(l)) return l;
  }
  return SimdLevel::kSse2;
}

SimdLevel simd_level() {
  table();
  return static_cast<SimdLevel>(active_level.load(std::memory_order_relaxed));
}

Status set_simd_level(SimdLevel level) {
  if (!simd_level_supported(level)) {
    return Status::error(StatusCode::kInvalidArgument,
                         "this CPU does not run the %s SIMD level (best: %s)",
                         simd_level_name(level), simd_level_name(best_simd_level()));
  }
  use(level);
  return Status::ok();
}

Status apply_simd_environment() {
  const char* env = std::getenv("TUNECAST_SIMD");
  if (env == nullptr || *env == '\0') return Status::ok();
  SimdLevel level;
  Status status = parse_simd_level(env, &level);
  if (!status.is_ok()) {
    return Status::error(StatusCode::kInvalidArgument, "TUNECAST_SIMD: %s", status.message());
  }
  status = set_simd_level(level);
  if (!status.is_ok()) {
    return Status::error(StatusCode::kInvalidArgument, "TUNECAST_SIMD: %s", status.message());
  }
  return Status::ok();
}

namespace layers {

void dense(const float* x, size_t x_stride, size_t rows, size_t depth, const float* kernel,
           size_t units, const float* bias, Act act, float* y, size_t y_stride) {
  table().dense_f32(x, x_stride, rows, depth, kernel, units, bias, act, y, y_stride);
}
void dense(const float* x, size_t x_stride, size_t rows, size_t depth, const Half* kernel,
           size_t units, const float* bias, Act act, float* y, size_t y_stride) {
  table().dense_f16(x, x_stride, rows, depth, kernel, units, bias, act, y, y_stride);
}
Status embedding(const char* name, const float* x, size_t x_stride, size_t rows,
                 const float* table_rows, size_t vocab, size_t dim, float* y, size_t y_stride) {
  return table().embedding(name, x, x_stride, rows, table_rows, vocab, dim, y, y_stride);
}
Status lstm_input(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  const float* kernel, size_t kernel_rows, size_t units, const float* bias,
                  float* z, size_t z_stride) {
  return table().lstm_input_f32(name, token_input, x, x_stride, rows, kernel, kernel_rows, units,
                                bias, z, z_stride);
}
Status lstm_input(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  const Half* kernel, size_t kernel_rows, size_t units, const float* bias,
                  float* z, size_t z_stride) {
  return table().lstm_input_f16(name, token_input, x, x_stride, rows, kernel, kernel_rows, units,
                                bias, z, z_stride);
}
Status lstm_batch(const char* name, bool token_input, const float* x, size_t x_stride, size_t rows,
                  AnyWeights kernel, size_t kernel_rows, size_t units, const float* bias,
                  AnyWeights recurrent, const float* h0, size_t h0_stride, const float* c0,
                  size_t c0_stride, Act gate_act, Act cell_act, float* z, size_t z_stride,
                  float* h, size_t h_stride, float* c, size_t c_stride) {
  return table().lstm_batch(name, token_input, x, x_stride, rows, kernel, kernel_rows, units, bias,
                            recurrent, h0, h0_stride, c0, c0_stride, gate_act, cell_act, z,
                            z_stride, h, h_stride, c, c_stride);
}
void lstm_sequence(size_t steps, size_t units, const float* recurrent, const float* h0,
                   const float* c0, Act gate_act, Act cell_act, bool reverse,
                   bool return_sequences, float* z, size_t z_stride, float* h, float* c,
                   float* seq, size_t seq_stride) {
  table().lstm_sequence_f32(steps, units, recurrent, h0, c0, gate_act, cell_act, reverse,
                            return_sequences, z, z_stride, h, c, seq, seq_stride);
}
void lstm_sequence(size_t steps, size_t units, const Half* recurrent, const float* h0,
                   const float* c0, Act gate_act, Act cell_act, bool reverse,
                   bool return_sequences, float* z, size_t z_stride, float* h, float* c,
                   float* seq, size_t seq_stride) {
  table().lstm_sequence_f16(steps, units, recurrent, h0, c0, gate_act, cell_act, reverse,
                            return_sequences, z, z_stride, h, c, seq, seq_stride);
}
void activation(Act act, const float* x, size_t rows, size_t cols, size_t stride, float* y) {
  table().activation(act, x, rows, cols, stride, y);
}
void add(const float* const* xs, size_t count, size_t n, float* y) { table().add(xs, count, n, y); }
void concat(const float* const* xs, const size_t* cols, const size_t* strides, size_t count,
            size_t rows, float* y, size_t y_stride) {
  table().concat(xs, cols, strides, count, rows, y, y_stride);
}
void conv1d(const float* x, size_t x_stride, size_t in_rows, size_t channels, size_t kernel_size,
            bool padding_same, const float* kernel, size_t units, const float* bias, Act act,
            float* temp, float* y, size_t out_rows, size_t y_stride) {
  table().conv1d_f32(x, x_stride, in_rows, channels, kernel_size, padding_same, kernel, units,
                     bias, act, temp, y, out_rows, y_stride);
}
void conv1d(const float* x, size_t x_stride, size_t in_rows, size_t channels, size_t kernel_size,
            bool padding_same, const Half* kernel, size_t units, const float* bias, Act act,
            float* temp, float* y, size_t out_rows, size_t y_stride) {
  table().conv1d_f16(x, x_stride, in_rows, channels, kernel_size, padding_same, kernel, units,
                     bias, act, temp, y, out_rows, y_stride);
}
void attention(const float* query, size_t q_stride, size_t rows, size_t width,
               const float* memory, size_t m_stride, size_t steps, float* scores,
               size_t scores_stride, float* context, size_t c_stride) {
  table().attention(query, q_stride, rows, width, memory, m_stride, steps, scores, scores_stride,
                    context, c_stride);
}
void log_softmax(float* x, size_t n) { table().log_softmax(x, n); }

}  // namespace layers
}  // namespace tunecast
