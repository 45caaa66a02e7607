// Counts heap allocations (malloc family and operator new) while armed, for the no-heap tests.
#pragma once

namespace alloc_counter {

void arm();
// Disarms and returns the allocations counted since arm().
long disarm();

}  // namespace alloc_counter
