// Replaces malloc (glibc: the __libc_* entry points do the work) and operator new in this test
// executable, so allocations from any library, the runtime included, are seen.
#include "alloc_counter.h"

#include <atomic>
#include <cstddef>
#include <new>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {
std::atomic<bool> g_armed{false};
std::atomic<long> g_count{0};
void note() {
  if (g_armed.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

namespace alloc_counter {
void arm() {
  g_count = 0;
  g_armed = true;
}
long disarm() {
  g_armed = false;
  return g_count.load();
}
}  // namespace alloc_counter

extern "C" {
void* malloc(size_t size) noexcept {
  note();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) noexcept {
  note();
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) noexcept {
  note();
  return __libc_realloc(p, size);
}
void* aligned_alloc(size_t alignment, size_t size) noexcept {
  note();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) noexcept {
  note();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  note();
  *out = __libc_memalign(alignment, size);
  return *out ? 0 : 12;  // ENOMEM
}
void free(void* p) noexcept { __libc_free(p); }
}

void* operator new(size_t size) {
  note();
  if (void* p = __libc_malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
