// Every malloc-family call of the process, counted: the benchmarks read the count around the calls
// they time (bench/malloc_counter.cpp replaces malloc, calloc, realloc, posix_memalign,
// aligned_alloc and free for the whole executable that links it).
#pragma once

namespace tunecast::bench {

long malloc_calls();

}  // namespace tunecast::bench
