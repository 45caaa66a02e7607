// The malloc family, counted (malloc_counter.h), forwarding to glibc's own entry points.
#include "malloc_counter.h"

#include <cerrno>
#include <cstddef>
#include <atomic>

namespace {
std::atomic<long> g_malloc_calls{0};
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, size);
}
int posix_memalign(void** out, size_t align, size_t size) {
  g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
  void* p = __libc_memalign(align, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(size_t align, size_t size) {
  g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(align, size);
}
void free(void* p) { __libc_free(p); }
}

namespace tunecast::bench {

long malloc_calls() { return g_malloc_calls.load(std::memory_order_relaxed); }

}  // namespace tunecast::bench
