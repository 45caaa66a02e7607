// libFuzzer target: raw bytecode straight into the runtime's verifier, and whatever it accepts
// into the evaluator (the path a hostile blob's constraint takes). Input layout: one byte of
// readable parameters (below 0x80: positions 0..n-1, the parameters' own order; from 0x80: the
// positions whose bits the low 7 bits set, as a decode_order makes them), one byte of constant
// count, the constants (8 bytes each), then code words.
#include <cstdint>
#include <cstring>
#include <vector>

#include "constraint_vm.h"
#include "tunecast/model.h"

using namespace tunecast;

namespace tunecast_fuzz {

// One input; also linked into tunecast_tests (tests/test_regressions.cpp) without the entry point.
int vm_one_input(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool as_mask = data[0] & 0x80;
  const uint32_t mask = as_mask ? data[0] & 0x7fu : (1u << (data[0] % (kMaxParameters + 1))) - 1u;
  int readable = 0;  // parameter values to provide: up to the highest readable position
  while (readable < 32 && (mask >> readable) != 0) ++readable;
  const size_t constant_count = data[1] % 16;
  data += 2;
  size -= 2;
  if (size < constant_count * 8) return 0;
  std::vector<int64_t> constants(constant_count);
  if (constant_count) std::memcpy(constants.data(), data, constant_count * 8);
  data += constant_count * 8;
  size -= constant_count * 8;
  // Exact-size copies so ASan sees any read past the code or the constants.
  std::vector<int32_t> code(size / 4);
  if (!code.empty()) std::memcpy(code.data(), data, code.size() * 4);
  const vm::ProgramView view{code.empty() ? nullptr : code.data(),
                             static_cast<uint32_t>(code.size()),
                             constants.empty() ? nullptr : constants.data(),
                             static_cast<uint32_t>(constants.size())};
  if (!vm::verify_reading(view, mask, "fuzz")) return 0;
  Problem problem;
  for (int f = 0; f < kProblemFieldCount; ++f) problem.set(static_cast<ProblemField>(f), f - 3);
  std::vector<int64_t> params(readable);  // exactly the readable positions
  for (int i = 0; i < readable; ++i) params[i] = i == 1 ? INT64_MIN : i * 3 - 1;
  int64_t result;
  vm::evaluate(view, problem, params.data(), &result);
  return 0;
}

}  // namespace tunecast_fuzz

#ifndef TUNECAST_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tunecast_fuzz::vm_one_input(data, size);
}
#endif
