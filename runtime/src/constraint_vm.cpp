#include "constraint_vm.h"

#include <cstring>
#include <limits>

namespace tunecast::vm {
namespace {

struct OpInfo {
  const char* name;
  int8_t operands;
  int8_t pops;    // values read (for jumps: on the fall-through path, see verify)
  int8_t pushes;
};

// Indexed by opcode; entry 0 is the reserved invalid opcode (zeroed memory never verifies).
constexpr OpInfo kOps[kOpcodeEnd] = {
    {nullptr, -1, 0, 0},
    {"PUSH_CONST", 1, 0, 1},
    {"PUSH_INT", 1, 0, 1},
    {"LOAD_FIELD", 1, 0, 1},
    {"LOAD_PARAM", 1, 0, 1},
    {"ADD", 0, 2, 1},
    {"SUB", 0, 2, 1},
    {"MUL", 0, 2, 1},
    {"DIV", 0, 2, 1},
    {"MOD", 0, 2, 1},
    {"NEG", 0, 1, 1},
    {"EQ", 0, 2, 1},
    {"NE", 0, 2, 1},
    {"LT", 0, 2, 1},
    {"LE", 0, 2, 1},
    {"GT", 0, 2, 1},
    {"GE", 0, 2, 1},
    {"NOT", 0, 1, 1},
    {"MIN", 0, 2, 1},
    {"MAX", 0, 2, 1},
    {"CEIL_DIV", 0, 2, 1},
    {"ABS", 0, 1, 1},
    {"IS_POW2", 0, 1, 1},
    {"ILOG2", 0, 1, 1},
    {"SHL", 0, 2, 1},
    {"SHR", 0, 2, 1},
    {"IN_SET", 2, 1, 1},
    {"IN_RANGE", 0, 3, 1},
    {"JUMP", 1, 0, 0},
    {"JUMP_IF_FALSE", 1, 1, 0},
    {"AND_THEN", 1, 1, 0},
    {"OR_ELSE", 1, 1, 0},
    {"TO_BOOL", 0, 1, 1},
};

constexpr int8_t kUnknownDepth = -1;

}  // namespace

const char* opcode_name(int32_t opcode) {
  return opcode > 0 && opcode < kOpcodeEnd ? kOps[opcode].name : nullptr;
}

int operand_count(int32_t opcode) {
  return opcode > 0 && opcode < kOpcodeEnd ? kOps[opcode].operands : -1;
}

Status verify_reading(const ProgramView& program, uint32_t readable_params, const char* what, int field_count) {
  if (what == nullptr) what = "program";
  const uint32_t size = program.code_size;
  if (size == 0) return Status::error(StatusCode::kCorruptModel, "%s: empty bytecode", what);
  if (program.code == nullptr)
    return Status::error(StatusCode::kCorruptModel, "%s: bytecode has %u words but no data", what, size);
  if (size > kMaxCodeLength)
    return Status::error(StatusCode::kCorruptModel, "%s: bytecode has %u words, more than the limit %u", what,
                         size, kMaxCodeLength);
  if (program.constant_count > 0 && program.constants == nullptr)
    return Status::error(StatusCode::kCorruptModel, "%s: %u constants but no data", what, program.constant_count);
  // The FlatBuffers verifier checks a vector's 4-byte length prefix only, not 8-byte elements.
  if (program.constant_count > 0 && reinterpret_cast<uintptr_t>(program.constants) % alignof(int64_t) != 0)
    return Status::error(StatusCode::kCorruptModel, "%s: constants are not 8-byte aligned in the blob", what);

  // depth_at[pc]: stack depth on entry to pc as recorded by a jump to it, kUnknownDepth if none yet.
  // Jumps only go forward, so one pass in code order sees every edge into pc before reaching pc.
  int8_t depth_at[kMaxCodeLength + 1];
  std::memset(depth_at, kUnknownDepth, size + 1);

  int depth = 0;
  bool reachable = true;  // whether the previous instruction falls through to pc
  uint32_t pc = 0;
  while (pc < size) {
    const int8_t incoming = depth_at[pc];
    if (reachable) {
      if (incoming != kUnknownDepth && incoming != depth)
        return Status::error(StatusCode::kCorruptModel,
                             "%s: stack depth %d from a jump and %d from the previous instruction meet at word %u",
                             what, incoming, depth, pc);
    } else {
      if (incoming == kUnknownDepth)
        return Status::error(StatusCode::kCorruptModel, "%s: unreachable instruction at word %u", what, pc);
      depth = incoming;
      reachable = true;
    }

    const int32_t op = program.code[pc];
    if (op <= 0 || op >= kOpcodeEnd)
      return Status::error(StatusCode::kCorruptModel, "%s: unknown opcode %d at word %u", what, op, pc);
    const OpInfo& info = kOps[op];
    if (info.operands > static_cast<int>(size - pc - 1))
      return Status::error(StatusCode::kCorruptModel, "%s: %s at word %u is truncated (needs %d operand words)",
                           what, info.name, pc, info.operands);
    const int32_t* operand = program.code + pc + 1;
    for (int i = 0; i < info.operands; ++i) {
      if (depth_at[pc + 1 + i] != kUnknownDepth)
        return Status::error(StatusCode::kCorruptModel, "%s: a jump lands inside the operands of %s at word %u",
                             what, info.name, pc);
    }
    const uint32_t next = pc + 1 + static_cast<uint32_t>(info.operands);

    switch (op) {
      case kPushConst:
        if (operand[0] < 0 || static_cast<uint32_t>(operand[0]) >= program.constant_count)
          return Status::error(StatusCode::kCorruptModel, "%s: constant index %d out of range (%u constants) at word %u",
                               what, operand[0], program.constant_count, pc);
        break;
      case kLoadField:
        if (operand[0] < 0 || operand[0] >= field_count || operand[0] >= kMaxProblemFields)
          return Status::error(StatusCode::kCorruptModel, "%s: problem field %d out of range (%d fields) at word %u",
                               what, operand[0], field_count, pc);
        break;
      case kLoadParam:
        if (operand[0] < 0 || operand[0] >= 32 || !((readable_params >> operand[0]) & 1u)) {
          if (readable_params == 0) {
            return Status::error(StatusCode::kCorruptModel,
                                 "%s: reads parameter %d, but no parameter is known here (word %u)", what,
                                 operand[0], pc);
          }
          if ((readable_params & (readable_params + 1)) == 0) {  // positions 0..p, the usual order
            int last = 0;
            while ((readable_params >> (last + 1)) & 1u) ++last;
            return Status::error(StatusCode::kCorruptModel,
                                 "%s: reads parameter %d but only positions 0..%d are known here (word %u)",
                                 what, operand[0], last, pc);
          }
          return Status::error(StatusCode::kCorruptModel,
                               "%s: reads parameter %d, not yet decoded at this step (word %u)", what,
                               operand[0], pc);
        }
        break;
      case kInSet: {
        const int64_t first = operand[0];
        const int64_t count = operand[1];
        if (first < 0 || count < 0 || first + count > static_cast<int64_t>(program.constant_count))
          return Status::error(StatusCode::kCorruptModel,
                               "%s: IN_SET constants [%lld, %lld) out of range (%u constants) at word %u", what,
                               static_cast<long long>(first), static_cast<long long>(first + count),
                               program.constant_count, pc);
        break;
      }
      default:
        break;
    }

    if (depth < info.pops)
      return Status::error(StatusCode::kCorruptModel, "%s: stack underflow at word %u (%s needs %d values, has %d)",
                           what, pc, info.name, info.pops, depth);

    if (op >= kJump && op <= kOrElse) {
      const int32_t offset = operand[0];
      if (offset < 0)
        return Status::error(StatusCode::kCorruptModel, "%s: backward jump (offset %d) at word %u", what, offset, pc);
      if (static_cast<uint64_t>(next) + static_cast<uint64_t>(offset) > size)
        return Status::error(StatusCode::kCorruptModel, "%s: jump at word %u leaves the code (target %llu, size %u)",
                             what, pc, static_cast<unsigned long long>(next) + static_cast<unsigned>(offset), size);
      const uint32_t target = next + static_cast<uint32_t>(offset);
      // AND_THEN / OR_ELSE keep their operand on the jump path and pop it on the fall-through path.
      const int jump_depth = (op == kAndThen || op == kOrElse) ? depth : depth - info.pops;
      if (depth_at[target] == kUnknownDepth) {
        depth_at[target] = static_cast<int8_t>(jump_depth);
      } else if (depth_at[target] != jump_depth) {
        return Status::error(StatusCode::kCorruptModel, "%s: stack depths %d and %d meet at word %u (jump at word %u)",
                             what, depth_at[target], jump_depth, target, pc);
      }
      depth -= info.pops;
      if (op == kJump) reachable = false;
    } else {
      depth += info.pushes - info.pops;
      if (depth > kMaxStack)
        return Status::error(StatusCode::kCorruptModel, "%s: stack overflow at word %u (more than %d values)", what,
                             pc, kMaxStack);
    }
    pc = next;
  }

  int final_depth = depth;
  if (reachable) {
    if (depth_at[size] != kUnknownDepth && depth_at[size] != depth)
      return Status::error(StatusCode::kCorruptModel, "%s: stack depths %d and %d meet at the end", what,
                           depth_at[size], depth);
  } else {
    final_depth = depth_at[size];
  }
  if (final_depth != 1)
    return Status::error(StatusCode::kCorruptModel, "%s: leaves %d values on the stack, must leave exactly 1", what,
                         final_depth < 0 ? 0 : final_depth);
  return Status::ok();
}

bool evaluate(const ProgramView& program, const Problem& problem, const int64_t* params, int64_t* result) {
  constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
  int64_t stack[kMaxStack];
  int top = -1;  // index of the top value
  const int32_t* code = program.code;
  const int64_t* constants = program.constants;
  const uint32_t size = program.code_size;
  uint32_t pc = 0;
  while (pc < size) {
    const int32_t op = code[pc++];
    switch (op) {
      case kPushConst: stack[++top] = constants[code[pc++]]; break;
      case kPushInt: stack[++top] = code[pc++]; break;
      case kLoadField: stack[++top] = problem.values[code[pc++]]; break;
      case kLoadParam: stack[++top] = params[code[pc++]]; break;
      case kAdd: --top; if (__builtin_add_overflow(stack[top], stack[top + 1], &stack[top])) return false; break;
      case kSub: --top; if (__builtin_sub_overflow(stack[top], stack[top + 1], &stack[top])) return false; break;
      case kMul: --top; if (__builtin_mul_overflow(stack[top], stack[top + 1], &stack[top])) return false; break;
      case kDiv: {
        const int64_t b = stack[top--];
        const int64_t a = stack[top];
        if (b == 0 || (a == kInt64Min && b == -1)) return false;
        stack[top] = a / b;
        break;
      }
      case kMod: {
        const int64_t b = stack[top--];
        const int64_t a = stack[top];
        if (b == 0) return false;
        stack[top] = b == -1 ? 0 : a % b;
        break;
      }
      case kNeg:
        if (stack[top] == kInt64Min) return false;
        stack[top] = -stack[top];
        break;
      case kEq: --top; stack[top] = stack[top] == stack[top + 1]; break;
      case kNe: --top; stack[top] = stack[top] != stack[top + 1]; break;
      case kLt: --top; stack[top] = stack[top] < stack[top + 1]; break;
      case kLe: --top; stack[top] = stack[top] <= stack[top + 1]; break;
      case kGt: --top; stack[top] = stack[top] > stack[top + 1]; break;
      case kGe: --top; stack[top] = stack[top] >= stack[top + 1]; break;
      case kNot: stack[top] = stack[top] == 0; break;
      case kMin: --top; if (stack[top + 1] < stack[top]) stack[top] = stack[top + 1]; break;
      case kMax: --top; if (stack[top + 1] > stack[top]) stack[top] = stack[top + 1]; break;
      case kCeilDiv: {
        const int64_t b = stack[top--];
        const int64_t a = stack[top];
        if (b == 0 || (a == kInt64Min && b == -1)) return false;
        int64_t q = a / b;
        if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
        stack[top] = q;
        break;
      }
      case kAbs:
        if (stack[top] == kInt64Min) return false;
        if (stack[top] < 0) stack[top] = -stack[top];
        break;
      case kIsPow2: {
        const int64_t x = stack[top];
        stack[top] = x > 0 && (x & (x - 1)) == 0;
        break;
      }
      case kIlog2: {
        const int64_t x = stack[top];
        if (x <= 0) return false;
        stack[top] = 63 - __builtin_clzll(static_cast<unsigned long long>(x));
        break;
      }
      case kShl: {
        const int64_t s = stack[top--];
        const int64_t a = stack[top];
        if (s < 0 || s > 63) return false;
        const int64_t shifted = static_cast<int64_t>(static_cast<uint64_t>(a) << s);
        if ((shifted >> s) != a) return false;
        stack[top] = shifted;
        break;
      }
      case kShr: {
        const int64_t s = stack[top--];
        if (s < 0 || s > 63) return false;
        stack[top] >>= s;
        break;
      }
      case kInSet: {
        const int64_t* set = constants + code[pc];
        const int32_t count = code[pc + 1];
        pc += 2;
        const int64_t x = stack[top];
        int64_t found = 0;
        for (int32_t i = 0; i < count; ++i) found |= set[i] == x;
        stack[top] = found;
        break;
      }
      case kInRange: {
        top -= 2;
        const int64_t x = stack[top];
        stack[top] = stack[top + 1] <= x && x <= stack[top + 2];
        break;
      }
      case kJump: pc += 1 + static_cast<uint32_t>(code[pc]); break;
      case kJumpIfFalse: {
        const uint32_t offset = static_cast<uint32_t>(code[pc++]);
        if (stack[top--] == 0) pc += offset;
        break;
      }
      case kAndThen: {
        const uint32_t offset = static_cast<uint32_t>(code[pc++]);
        if (stack[top] == 0) {
          pc += offset;
        } else {
          --top;
        }
        break;
      }
      case kOrElse: {
        const uint32_t offset = static_cast<uint32_t>(code[pc++]);
        if (stack[top] != 0) {
          stack[top] = 1;
          pc += offset;
        } else {
          --top;
        }
        break;
      }
      case kToBool: stack[top] = stack[top] != 0; break;
      default: return false;  // unreachable for verified code
    }
  }
  *result = stack[top];
  return true;
}

}  // namespace tunecast::vm
