// tunecast's integer stack machine: runs the bytecode that rules files (docs/rules_language.md)
// compile to, for validity constraints and feature encodings. Bytecode comes from the blob, so it
// is untrusted: `verify` proves it safe once at load, and `evaluate` then runs it without any check
// the verifier already made (no bounds checks, no heap, no recursion: it sits in beam search's
// inner loop).
//
// Instruction set (part of the artifact format: numbers are never reused, only appended).
// A program is `code` (int32 words) plus `constants` (int64 literals). Every instruction is one
// opcode word followed by its operand words. Values are int64; booleans are 0 and 1, and any
// non-zero value counts as true. "x y -> z" pops y (top) then x and pushes z.
//
//   op  name            operands        stack              notes
//    1  PUSH_CONST      index           -> constants[index]
//    2  PUSH_INT        imm             -> imm             int32 immediate, sign-extended
//    3  LOAD_FIELD      field           -> problem field   field < kProblemFieldCount
//    4  LOAD_PARAM      position        -> params[pos]     pos < readable_params
//    5  ADD                             x y -> x + y       overflow fails
//    6  SUB                             x y -> x - y       overflow fails
//    7  MUL                             x y -> x * y       overflow fails
//    8  DIV                             x y -> x / y       truncates (C); y == 0 or overflow fails
//    9  MOD                             x y -> x % y       sign of x (C); y == 0 fails
//   10  NEG                             x -> -x            INT64_MIN fails
//   11  EQ  12 NE  13 LT  14 LE  15 GT  16 GE               x y -> 0/1
//   17  NOT                             x -> x == 0
//   18  MIN  19 MAX                     x y -> min/max
//   20  CEIL_DIV                        x y -> ceil(x / y) y == 0 or overflow fails
//   21  ABS                             x -> |x|           INT64_MIN fails
//   22  IS_POW2                         x -> 0/1           x > 0 and a power of two
//   23  ILOG2                           x -> floor(log2 x) x <= 0 fails
//   24  SHL                             x y -> x << y      y outside [0, 63] or overflow fails
//   25  SHR                             x y -> x >> y      arithmetic; y outside [0, 63] fails
//   26  IN_SET          first, count    x -> 0/1           x in constants[first, first + count)
//   27  IN_RANGE                        x lo hi -> 0/1     lo <= x && x <= hi
//   28  JUMP            offset          (none)             pc = next + offset
//   29  JUMP_IF_FALSE   offset          x ->               jumps when x == 0
//   30  AND_THEN        offset          x -> (see notes)   x == 0: keep 0 and jump; else pop x
//   31  OR_ELSE         offset          x -> (see notes)   x != 0: replace by 1 and jump; else pop
//   32  TO_BOOL                         x -> x != 0
//
// Jump offsets count words from the instruction after the jump and are >= 0, so control only
// moves forward: a program runs in at most code_size steps. A jump may land on the end of the
// code (the program then stops). `a && b` compiles to `a AND_THEN(L) b TO_BOOL L:`, `a || b` to
// `a OR_ELSE(L) b TO_BOOL L:`, `c ? a : b` to `c JUMP_IF_FALSE(E) a JUMP(L) E: b L:`.
#pragma once

#include <cstdint>

#include "tunecast/problem.h"
#include "tunecast/status.h"
#include "tunecast/tunecast_model_generated.h"

namespace tunecast::vm {

constexpr int kMaxStack = 32;            // evaluation stack bound, verified statically
constexpr uint32_t kMaxCodeLength = 8192;

enum Opcode : int32_t {
  kPushConst = 1,
  kPushInt = 2,
  kLoadField = 3,
  kLoadParam = 4,
  kAdd = 5,
  kSub = 6,
  kMul = 7,
  kDiv = 8,
  kMod = 9,
  kNeg = 10,
  kEq = 11,
  kNe = 12,
  kLt = 13,
  kLe = 14,
  kGt = 15,
  kGe = 16,
  kNot = 17,
  kMin = 18,
  kMax = 19,
  kCeilDiv = 20,
  kAbs = 21,
  kIsPow2 = 22,
  kIlog2 = 23,
  kShl = 24,
  kShr = 25,
  kInSet = 26,
  kInRange = 27,
  kJump = 28,
  kJumpIfFalse = 29,
  kAndThen = 30,
  kOrElse = 31,
  kToBool = 32,
  kOpcodeEnd,  // one past the last opcode
};

// Mnemonic ("IN_SET"), or nullptr for an unknown opcode.
const char* opcode_name(int32_t opcode);

// Number of operand words that follow `opcode`, or -1 for an unknown opcode.
int operand_count(int32_t opcode);

struct ProgramView {
  const int32_t* code;
  uint32_t code_size;
  const int64_t* constants;
  uint32_t constant_count;
};

// The bytecode of a Program table in a blob (empty when absent).
inline ProgramView view_of(const schema::Program* program) {
  ProgramView view{};
  if (program != nullptr && program->code() != nullptr) {
    view.code = program->code()->data();
    view.code_size = program->code()->size();
  }
  if (program != nullptr && program->constants() != nullptr) {
    view.constants = program->constants()->data();
    view.constant_count = program->constants()->size();
  }
  return view;
}

// Verifies untrusted bytecode once at load: every opcode known; every operand in range (constant
// index < constant_count, problem field < kProblemFieldCount, parameter position p only where
// bit p of readable_mask is set); jumps only forward and inside the code (the end included); no
// jump into the operands of an instruction; no unreachable instruction; the stack never underflows
// nor exceeds kMaxStack, and stack depths agree wherever paths merge; exactly one value is left at
// the end. `what` names the program in the error message ("constraint 3 'k_mult % e == 0'").
// A constraint checked at decode step s reads the parameters decoded in steps 0..s:
// readable_params_mask(). Feature encodings and applicability conditions read none: pass 0.
// `field_count`: the fields of the model's problem schema (LOAD_FIELD reads below it).
Status verify_reading(const ProgramView& program, uint32_t readable_mask, const char* what,
                      int field_count = kProblemFieldCount);

// The same where parameters 0..readable_params-1 are readable (the parameters' own decode order:
// a constraint at position p passes p + 1).
inline Status verify(const ProgramView& program, int readable_params, const char* what,
                     int field_count = kProblemFieldCount) {
  const uint32_t mask = readable_params <= 0 ? 0u : readable_params >= 32 ? ~0u : (1u << readable_params) - 1u;
  return verify_reading(program, mask, what, field_count);
}

// The parameters known once decode step `step` is done: bit decode_order[s] for s <= step (bit s
// when decode_order is null, the parameters' own order).
inline uint32_t readable_params_mask(int step, const uint8_t* decode_order) {
  uint32_t mask = 0;
  for (int s = 0; s <= step; ++s) mask |= 1u << (decode_order ? decode_order[s] : s);
  return mask;
}

// Runs verified bytecode. params[i] is the value of parameter position i (only those verify()
// allowed are read). Returns false when evaluation fails (division or modulo by zero, overflow of
// int64 arithmetic or shifts, ilog2 of a value <= 0), which callers treat as "constraint violated".
// No heap, no recursion.
bool evaluate(const ProgramView& program, const Problem& problem, const int64_t* params, int64_t* result);

}  // namespace tunecast::vm
