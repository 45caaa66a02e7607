// The deterministic train/val/test split of tools/tunecast_train/data.py, in C++ so that
// `tunecast eval` scores exactly the problems the trainer held out: sha256("<seed>:<descriptor>"),
// first 8 bytes big-endian, mod 1000: < 800 train, < 900 val, else test, where the descriptor is
// perf_db_descriptor() (perfdb.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "tunecast/problem.h"

namespace tunecast::codegen {

enum class Split { kTrain, kVal, kTest };

std::array<uint8_t, 32> sha256(std::string_view data);
Split split_of(const Problem& problem, int seed);
// The same hash over any descriptor text: a kernel definition's problems use their canonical text
// without the architecture item (tools/tunecast_train/kernel.py split_text), so a problem lands in
// the same split on every architecture.
Split split_of_descriptor(std::string_view descriptor, int seed);
const char* split_name(Split split);

}  // namespace tunecast::codegen
