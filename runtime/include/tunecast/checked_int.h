// Checked int64 arithmetic with the constraint VM's failure rules (runtime/src/constraint_vm.cpp):
// division or modulo by zero, int64 overflow, out-of-range shifts and ilog2 of a value <= 0 make
// the whole evaluation fail, which callers read as "constraint violated". Generated predictors
// compile each constraint's bytecode into one C++ expression over these operations:
//
//   tunecast::CheckedInt ok;
//   return ok.holds(ok.mod(k_mult, dtype == 0 ? 1 : 2) == 0);
//
// An operation that fails clears the flag and returns 0; later operations keep computing on that
// 0 (no undefined behaviour), and the result is discarded by holds() / valid().
#pragma once

#include <cstdint>
#include <limits>

namespace tunecast {

class CheckedInt {
 public:
  static constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

  int64_t add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? fail() : r;
  }
  int64_t sub(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? fail() : r;
  }
  int64_t mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? fail() : r;
  }
  int64_t div(int64_t a, int64_t b) { return (b == 0 || (a == kMin && b == -1)) ? fail() : a / b; }
  int64_t mod(int64_t a, int64_t b) { return b == 0 ? fail() : (b == -1 ? 0 : a % b); }
  int64_t ceil_div(int64_t a, int64_t b) {
    if (b == 0 || (a == kMin && b == -1)) return fail();
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
    return q;
  }
  int64_t neg(int64_t a) { return a == kMin ? fail() : -a; }
  int64_t abs(int64_t a) { return a == kMin ? fail() : (a < 0 ? -a : a); }
  int64_t ilog2(int64_t a) {
    return a <= 0 ? fail() : 63 - __builtin_clzll(static_cast<unsigned long long>(a));
  }
  int64_t shl(int64_t a, int64_t s) {
    if (s < 0 || s > 63) return fail();
    const int64_t shifted = static_cast<int64_t>(static_cast<uint64_t>(a) << s);
    return (shifted >> s) != a ? fail() : shifted;
  }
  int64_t shr(int64_t a, int64_t s) { return (s < 0 || s > 63) ? fail() : a >> s; }

  // A constraint's verdict: evaluated without failure and non-zero.
  bool holds(int64_t value) const { return ok_ && value != 0; }
  // A feature's value: evaluated without failure.
  bool valid(int64_t value, int64_t* out) const {
    *out = value;
    return ok_;
  }
  explicit operator bool() const { return ok_; }

 private:
  int64_t fail() {
    ok_ = false;
    return 0;
  }
  bool ok_ = true;
};

// Operations that cannot fail.
constexpr int64_t is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

constexpr bool in_range(int64_t x, int64_t lo, int64_t hi) { return lo <= x && x <= hi; }

template <int N>
constexpr bool in_set(int64_t x, const int64_t (&set)[N]) {
  bool found = false;
  for (int i = 0; i < N; ++i) found |= set[i] == x;
  return found;
}

}  // namespace tunecast
