#include "tunecast/codegen/cpp_emitter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "constraint_vm.h"
#include "tunecast/kernel_types.h"

namespace tunecast::codegen {
namespace {

using schema::LayerType;

size_t padded(size_t cols) {
  return (cols + kernels::kPanelWidth - 1) / kernels::kPanelWidth * kernels::kPanelWidth;
}

std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = vformat(fmt, args);
  va_end(args);
  return out;
}

// Shortest decimal that reads back as the same float (sign of zero included).
std::string float_literal(float v) {
  char buf[40];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
    const float back = std::strtof(buf, nullptr);
    if (back == v && std::signbit(back) == std::signbit(v)) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string int_literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807 - 1)";
  if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    return std::to_string(v);
  }
  return "int64_t{" + std::to_string(v) + "}";
}

// A C string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch >= 0x7f) {
      out += format("\\%03o", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

// A comment line's text (no line breaks, no comment terminators).
std::string comment_text(const std::string& s) {
  std::string out;
  for (const char ch : s) out += (ch == '\n' || ch == '\r') ? ' ' : ch;
  return out;
}

bool is_keyword(const std::string& s) {
  static const std::set<std::string> kKeywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "class", "compl", "const", "constexpr", "const_cast", "continue",
      "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit",
      "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
      "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "return",
      "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
      "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor",
      "xor_eq", "int64_t", "std", "tunecast"};
  return kKeywords.count(s) > 0;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (const char ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  }
  // Reserved: double underscores and a leading underscore with a capital.
  if (s.find("__") != std::string::npos || (s[0] == '_' && s.size() > 1 && std::isupper(static_cast<unsigned char>(s[1])))) {
    return false;
  }
  return !is_keyword(s);
}

// "lstm_1" -> "lstm_1"; "dense/kernel:0" -> "dense_kernel_0"; lower case.
std::string snake(const std::string& s, const std::string& fallback) {
  std::string out;
  for (const char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = fallback + out;
  return out;
}

// "lstm_1" -> "Lstm1", "stride_h" -> "StrideH".
std::string camel(const std::string& s) {
  std::string out;
  bool upper = true;
  for (const char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (!std::isalnum(u)) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(u)) : static_cast<char>(u);
    upper = false;
  }
  return out;
}

// Hands out unique names.
class NameSet {
 public:
  std::string take(const std::string& wanted) {
    std::string name = wanted;
    for (int i = 2; used_.count(name); ++i) name = wanted + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }
  void reserve(const std::string& name) { used_.insert(name); }

 private:
  std::set<std::string> used_;
};

// Field index as generated code writes it: "stride_h" -> "tunecast::ProblemField::kStrideH" for the
// convolution; a definition's field by its index (Problem::get(int)).
std::string field_enum(int field, const ProblemSchema& schema) {
  if (!schema.builtin()) return std::to_string(field);
  return "tunecast::ProblemField::k" + camel(problem_field_name(static_cast<ProblemField>(field)));
}

// ---- bytecode -> expression ------------------------------------------------------------------

struct Expr {
  std::string text;
  bool is_bool = false;  // the value is always 0 or 1
  bool atom = false;     // needs no parentheses as an operand
  std::string op;        // top-level binary operator ("&&", "||", "?:"), for parenthesizing
};

std::string operand(const Expr& e) { return e.atom ? e.text : "(" + e.text + ")"; }

// Operand of && or ||: chains of the same operator need no parentheses.
std::string logic_operand(const Expr& e, const std::string& op) {
  return (e.atom || e.op == op) ? e.text : "(" + e.text + ")";
}

std::string condition(const Expr& e) {
  if (!e.is_bool) return operand(e) + " != 0";
  return e.op == "?:" ? "(" + e.text + ")" : e.text;
}

Expr binary(const Expr& a, const char* op, const Expr& b, bool is_bool) {
  return Expr{operand(a) + " " + op + " " + operand(b), is_bool, false, op};
}

Expr call(const std::string& fn, const std::vector<Expr>& args, bool is_bool) {
  std::string text = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + args[i].text;
  return Expr{text + ")", is_bool, true, ""};
}

Expr select(const Expr& cond, const Expr& a, const Expr& b) {
  return Expr{condition(cond) + " ? " + operand(a) + " : " + operand(b), a.is_bool && b.is_bool,
              false, "?:"};
}

bool same(const Expr& a, const Expr& b) { return a.text == b.text; }

class Decompiler {
 public:
  // `field_names`: each field's local variable (kMaxProblemFields); null: the convolution's names.
  Decompiler(const int32_t* code, uint32_t size, const int64_t* constants, uint32_t constant_count,
             const std::string* param_names, const std::string* field_names = nullptr)
      : code_(code), size_(size), constants_(constants), constant_count_(constant_count),
        param_names_(param_names), field_names_(field_names), is_start_(size + 1, false), prev_(size + 1, 0) {}

  Status run(Expr* out) {
    uint32_t pc = 0;
    while (pc < size_) {
      const int operands = vm::operand_count(code_[pc]);
      if (operands < 0) return unsupported(pc, "unknown opcode");
      is_start_[pc] = true;
      const uint32_t next = pc + 1 + static_cast<uint32_t>(operands);
      if (next > size_) return unsupported(pc, "truncated instruction");
      prev_[next] = pc;
      pc = next;
    }
    is_start_[size_] = true;
    std::vector<Expr> stack;
    TUNECAST_RETURN_IF_ERROR(region(0, size_, &stack));
    if (stack.size() != 1) return unsupported(size_, "the program leaves no single value");
    *out = stack[0];
    return Status::ok();
  }

  uint32_t fields_read = 0;
  uint32_t params_read = 0;

 private:
  Status unsupported(uint32_t pc, const char* what) const {
    return Status::error(StatusCode::kUnsupported,
                         "emit-cpp: bytecode shape not expressible as C++ at word %u (%s); the "
                         "rules compiler never emits it",
                         pc, what);
  }

  Status pop(uint32_t pc, std::vector<Expr>* stack, Expr* out) const {
    if (stack->empty()) return unsupported(pc, "stack underflow");
    *out = stack->back();
    stack->pop_back();
    return Status::ok();
  }

  // Symbolically runs [begin, end), which must hold whole nested constructs.
  Status region(uint32_t begin, uint32_t end, std::vector<Expr>* stack) {
    uint32_t pc = begin;
    while (pc < end) {
      const int32_t op = code_[pc];
      const uint32_t next = pc + 1 + static_cast<uint32_t>(vm::operand_count(op));
      if (next > end) return unsupported(pc, "a construct crosses its enclosing one");
      const int32_t arg = next > pc + 1 ? code_[pc + 1] : 0;
      Expr a, b, c;
      switch (op) {
        case vm::kPushConst:
          if (arg < 0 || static_cast<uint32_t>(arg) >= constant_count_) return unsupported(pc, "constant index");
          stack->push_back(Expr{int_literal(constants_[arg]), false, true, ""});
          break;
        case vm::kPushInt:
          stack->push_back(Expr{int_literal(arg), false, true, ""});
          break;
        case vm::kLoadField:
          if (arg < 0 || arg >= (field_names_ ? kMaxProblemFields : kProblemFieldCount)) return unsupported(pc, "field index");
          fields_read |= 1u << arg;
          stack->push_back(Expr{field_names_ ? field_names_[arg] : problem_field_name(static_cast<ProblemField>(arg)),
                                false, true, ""});
          break;
        case vm::kLoadParam:
          if (arg < 0 || arg >= kMaxParameters || param_names_ == nullptr) return unsupported(pc, "parameter index");
          params_read |= 1u << arg;
          stack->push_back(Expr{param_names_[arg], false, true, ""});
          break;
        case vm::kAdd: case vm::kSub: case vm::kMul: case vm::kDiv: case vm::kMod:
        case vm::kCeilDiv: case vm::kShl: case vm::kShr: case vm::kMin: case vm::kMax: {
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &b));
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          static const char* const kNames[] = {"ok.add", "ok.sub", "ok.mul", "ok.div", "ok.mod"};
          std::string fn;
          if (op >= vm::kAdd && op <= vm::kMod) fn = kNames[op - vm::kAdd];
          if (op == vm::kCeilDiv) fn = "ok.ceil_div";
          if (op == vm::kShl) fn = "ok.shl";
          if (op == vm::kShr) fn = "ok.shr";
          if (op == vm::kMin) fn = "std::min<int64_t>";
          if (op == vm::kMax) fn = "std::max<int64_t>";
          stack->push_back(call(fn, {a, b}, op == vm::kMin || op == vm::kMax ? a.is_bool && b.is_bool : false));
          break;
        }
        case vm::kEq: case vm::kNe: case vm::kLt: case vm::kLe: case vm::kGt: case vm::kGe: {
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &b));
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
          stack->push_back(binary(a, kOps[op - vm::kEq], b, true));
          break;
        }
        case vm::kNeg: case vm::kAbs: case vm::kIlog2: {
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          const char* fn = op == vm::kNeg ? "ok.neg" : op == vm::kAbs ? "ok.abs" : "ok.ilog2";
          stack->push_back(call(fn, {a}, op == vm::kAbs && a.is_bool));
          break;
        }
        case vm::kNot:
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          stack->push_back(Expr{"!" + operand(a), true, false, "!"});
          break;
        case vm::kToBool:
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          stack->push_back(a.is_bool ? a : Expr{operand(a) + " != 0", true, false, "!="});
          break;
        case vm::kIsPow2:
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          stack->push_back(call("tunecast::is_pow2", {a}, true));
          break;
        case vm::kInSet: {
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          const int32_t first = code_[pc + 1];
          const int32_t count = code_[pc + 2];
          if (first < 0 || count < 0 || static_cast<uint64_t>(first) + static_cast<uint64_t>(count) > constant_count_) {
            return unsupported(pc, "set constants");
          }
          if (count == 0) {
            stack->push_back(Expr{"(static_cast<void>(" + a.text + "), false)", true, true, ""});
            break;
          }
          std::string set = "{";
          for (int32_t i = 0; i < count; ++i) set += (i ? ", " : "") + int_literal(constants_[first + i]);
          stack->push_back(call("tunecast::in_set", {a, Expr{set + "}", false, true, ""}}, true));
          break;
        }
        case vm::kInRange:
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &c));
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &b));
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &a));
          stack->push_back(call("tunecast::in_range", {a, b, c}, true));
          break;
        case vm::kJumpIfFalse: {
          const uint64_t target = uint64_t{next} + static_cast<uint32_t>(arg);
          if (arg < 0 || target > end || !is_start_[target]) return unsupported(pc, "jump target");
          Expr cond;
          TUNECAST_RETURN_IF_ERROR(pop(pc, stack, &cond));
          // cond ? <next .. jump> : <target .. join>, the then-part ending in a JUMP over the else.
          uint32_t then_end = static_cast<uint32_t>(target);
          uint32_t join = static_cast<uint32_t>(target);
          const uint32_t last = prev_[target];
          if (target > next && last >= next && code_[last] == vm::kJump && code_[last + 1] >= 0) {
            const uint64_t over = uint64_t{last} + 2 + static_cast<uint32_t>(code_[last + 1]);
            if (over <= end && is_start_[over]) {
              then_end = last;
              join = static_cast<uint32_t>(over);
            }
          }
          std::vector<Expr> then_stack = *stack;
          std::vector<Expr> else_stack = *stack;
          TUNECAST_RETURN_IF_ERROR(region(next, then_end, &then_stack));
          TUNECAST_RETURN_IF_ERROR(region(static_cast<uint32_t>(target), join, &else_stack));
          if (then_stack.size() != else_stack.size()) return unsupported(pc, "branches of unequal depth");
          for (size_t i = 0; i < then_stack.size(); ++i) {
            if (!same(then_stack[i], else_stack[i])) then_stack[i] = select(cond, then_stack[i], else_stack[i]);
          }
          *stack = then_stack;
          pc = join;
          continue;
        }
        case vm::kAndThen:
        case vm::kOrElse: {
          const uint64_t target = uint64_t{next} + static_cast<uint32_t>(arg);
          if (arg < 0 || target > end || !is_start_[target] || stack->empty()) return unsupported(pc, "jump target");
          const bool is_and = op == vm::kAndThen;
          const Expr left = stack->back();
          std::vector<Expr> taken = *stack;  // left == 0 (and) / != 0 (or): left stays, or becomes 1
          if (!is_and) taken.back() = Expr{"1", true, true, ""};
          std::vector<Expr> fall = *stack;
          fall.pop_back();
          TUNECAST_RETURN_IF_ERROR(region(next, static_cast<uint32_t>(target), &fall));
          if (fall.size() != taken.size()) return unsupported(pc, "branches of unequal depth");
          for (size_t i = 0; i + 1 < fall.size(); ++i) {
            if (!same(fall[i], taken[i])) fall[i] = is_and ? select(left, fall[i], taken[i]) : select(left, taken[i], fall[i]);
          }
          Expr& right = fall.back();
          const char* op_text = is_and ? "&&" : "||";
          if (left.is_bool && right.is_bool) {
            right = Expr{logic_operand(left, op_text) + " " + op_text + " " + logic_operand(right, op_text), true, false, op_text};
          } else {
            right = is_and ? select(left, right, Expr{"0", true, true, ""}) : select(left, Expr{"1", true, true, ""}, right);
          }
          *stack = fall;
          pc = static_cast<uint32_t>(target);
          continue;
        }
        default:
          return unsupported(pc, "jump outside a conditional");
      }
      pc = next;
    }
    return Status::ok();
  }

  const int32_t* code_;
  uint32_t size_;
  const int64_t* constants_;
  uint32_t constant_count_;
  const std::string* param_names_;
  const std::string* field_names_;
  std::vector<bool> is_start_;
  std::vector<uint32_t> prev_;
};

// ---- the generated files -----------------------------------------------------------------------

class Writer {
 public:
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  void line(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    out_ += vformat(fmt, args);
    va_end(args);
    out_ += '\n';
  }
  void raw(const std::string& text) { out_ += text; }
  void blank() { out_ += '\n'; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// `alignas(32) constexpr TYPE NAME[N] = {...};` with `per_line` values per line, each spelled by
// `literal(i)`.
template <typename Literal>
void write_array(Writer* w, const char* type, const std::string& name, size_t count, size_t per_line,
                 Literal&& literal) {
  w->line("alignas(32) constexpr %s %s[%zu] = {", type, name.c_str(), count);
  std::string row;
  for (size_t i = 0; i < count; ++i) {
    row += literal(i) + ",";
    if (i % per_line == per_line - 1 || i + 1 == count) {
      w->line("    %s", row.c_str());
      row.clear();
    } else {
      row += ' ';
    }
  }
  w->line("};");
}

void write_floats(Writer* w, const std::string& name, const float* data, size_t count) {
  write_array(w, "float", name, count, 8, [&](size_t i) { return float_literal(data[i]); });
}

// fp16 weights (compile --weights fp16) as their bit patterns; layers.h widens them like the blob
// runtime does.
void write_halves(Writer* w, const std::string& name, const uint16_t* data, size_t count) {
  write_array(w, "tunecast::kernels::Half", name, count, 16,
              [&](size_t i) { return format("0x%04x", data[i]); });
}

// A matrix's weights in whichever storage the blob has.
void write_matrix(Writer* w, const std::string& name, const schema::Matrix* m) {
  if (m->half_data() != nullptr) {
    write_halves(w, name, m->half_data()->data(), m->half_data()->size());
  } else {
    write_floats(w, name, m->data()->data(), m->data()->size());
  }
}

const char* act_name(kernels::Act act) {
  switch (act) {
    case kernels::Act::kRelu: return "Act::kRelu";
    case kernels::Act::kTanh: return "Act::kTanh";
    case kernels::Act::kSigmoid: return "Act::kSigmoid";
    case kernels::Act::kSoftmax: return "Act::kSoftmax";
    case kernels::Act::kHardSigmoid: return "Act::kHardSigmoid";
    default: return "Act::kLinear";
  }
}

kernels::Act to_act(schema::Activation a) { return static_cast<kernels::Act>(a); }

struct GraphNames {
  std::string prefix;                   // "encoder"
  std::vector<std::string> values;      // Scratch member per value
  std::string temp;                     // Scratch member of the temporary region
  size_t temp_floats = 0;
};

class Emitter {
 public:
  Emitter(const Model& model, const CppEmitOptions& options)
      : model_(model), schema_(model.problem_schema()), options_(options) {}

  Status run(CppSources* out) {
    TUNECAST_RETURN_IF_ERROR(check());
    name_parameters();
    TUNECAST_RETURN_IF_ERROR(name_graphs());
    TUNECAST_RETURN_IF_ERROR(compile_programs());
    out->header = header();
    TUNECAST_RETURN_IF_ERROR(source(&out->source));
    return Status::ok();
  }

 private:
  const schema::Seq2Seq* seq2seq() const { return model_.root()->seq2seq(); }
  const GraphInfo& encoder() const { return model_.graph(static_cast<int>(seq2seq()->encoder())); }
  const GraphInfo& decoder() const { return model_.graph(static_cast<int>(seq2seq()->decoder())); }
  const schema::Encoding* encoding() const { return model_.root()->encoding(); }

  Status check() {
    if (!model_.loaded() || !model_.is_seq2seq()) {
      return Status::error(StatusCode::kUnsupported,
                           "emit-cpp generates sequence-to-sequence predictors; this model is "
                           "feed-forward (use the blob runtime's run_graph)");
    }
    if (options_.max_beam < 1 || options_.max_beam > kMaxBeamWidth) {
      return Status::error(StatusCode::kInvalidArgument, "--max-beam %d is outside 1..%d",
                           options_.max_beam, kMaxBeamWidth);
    }
    if (!is_identifier(options_.name)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "--name '%s' is not a C++ identifier", options_.name.c_str());
    }
    if (!is_cpp_namespace(options_.name_space)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "--namespace '%s' is not a C++ namespace name", options_.name_space.c_str());
    }
    if (encoder().graph->inputs()->size() != 1) {
      return Status::error(StatusCode::kUnsupported, "emit-cpp: the encoder must take one input");
    }
    return Status::ok();
  }

  void name_parameters() {
    std::set<std::string> taken = {"problem", "params", "ok", "value"};
    // Fields: their own names, unless such a name would clash in C++ (field_<name> then).
    static const std::set<std::string> kReserved = {"int", "char", "long", "short", "float", "double", "auto", "bool",
                                                    "if", "else", "for", "while", "do", "return", "switch", "case",
                                                    "default", "break", "continue", "const", "static", "struct",
                                                    "class", "new", "delete", "this", "true", "false", "void",
                                                    "register", "signed", "unsigned", "namespace", "using", "template",
                                                    "typename", "operator", "private", "public", "protected"};
    for (int f = 0; f < schema_.field_count(); ++f) {
      std::string name = schema_.field_name(f);
      if (kReserved.count(name) || taken.count(name)) name = "field_" + name;
      field_names_[f] = name;
      taken.insert(name);
    }
    for (int p = 0; p < model_.parameter_count(); ++p) {
      std::string name = model_.parameter_name(p);
      if (!is_identifier(name) || taken.count(name)) name = "param" + std::to_string(p);
      taken.insert(name);
      param_names_[p] = name;
    }
  }

  Status name_graphs() {
    NameSet members;
    members.reserve("features");
    for (const char* n : {"hyps", "next_hyps", "top", "order"}) members.reserve(n);
    for (const int g : {static_cast<int>(seq2seq()->encoder()), static_cast<int>(seq2seq()->decoder())}) {
      const GraphInfo& info = model_.graph(g);
      GraphNames& names = graph_names_[g];
      names.prefix = snake(info.graph->name() ? info.graph->name()->str() : "", "graph");
      if (names.prefix.empty()) names.prefix = "graph" + std::to_string(g);
      for (uint32_t v = 0; v < info.value_count; ++v) {
        const auto* value = info.graph->values()->Get(v);
        const std::string base = snake(value->name() ? value->name()->str() : "", "v");
        names.values.push_back(members.take(names.prefix + "_" + (base.empty() ? "v" + std::to_string(v) : base)));
      }
      names.temp = members.take(names.prefix + "_temp");
      names.temp_floats = info.temp_floats(rows_bound(info));
      if (names.temp_floats == 0) names.temp_floats = kernels::kPanelWidth;
      for (const schema::Layer* layer : *info.graph->layers()) {
        const std::string base = "k" + camel(layer->name() ? layer->name()->str() : "layer");
        layer_consts_[layer] = weight_names_.take(base == "k" ? "kLayer" : base);
        if (!finite_weights(layer)) {
          return Status::error(StatusCode::kUnsupported,
                               "emit-cpp: layer '%s' holds non-finite weights",
                               layer->name() ? layer->name()->c_str() : "");
        }
      }
    }
    return Status::ok();
  }

  static bool finite(const flatbuffers::Vector<float>* v) {
    if (v == nullptr) return true;
    for (const float x : *v) {
      if (!std::isfinite(x)) return false;
    }
    return true;
  }
  static bool finite(const flatbuffers::Vector<uint16_t>* halves) {
    if (halves == nullptr) return true;
    for (const uint16_t h : *halves) {
      if ((h & 0x7c00u) == 0x7c00u) return false;  // fp16 inf or NaN
    }
    return true;
  }
  static bool finite(const schema::Matrix* m) {
    return m == nullptr || (finite(m->data()) && finite(m->half_data()));
  }
  static bool finite_weights(const schema::Layer* layer) {
    return finite(layer->kernel()) && finite(layer->recurrent()) && finite(layer->bias());
  }

  int rows_bound(const GraphInfo& info) const { return info.batched ? options_.max_beam : 1; }

  Status compile_programs() {
    const auto* constraints = model_.root()->constraints();
    const uint32_t count = constraints ? constraints->size() : 0;
    for (uint32_t i = 0; i < count; ++i) {
      const schema::Constraint* c = constraints->Get(i);
      Program p;
      TUNECAST_RETURN_IF_ERROR(compile(c->program(), &p, format("constraint %u", i)));
      p.text = c->text() ? c->text()->str() : "";
      constraints_.push_back(p);
    }
    const auto* conditions = model_.root()->applicability();
    for (uint32_t i = 0; conditions && i < conditions->size(); ++i) {
      const schema::Constraint* c = conditions->Get(i);
      Program p;
      TUNECAST_RETURN_IF_ERROR(compile(c->program(), &p, format("applicability condition %u", i)));
      p.text = c->text() ? c->text()->str() : "";
      applicability_.push_back(p);
    }
    if (encoding() && encoding()->features()) {
      for (uint32_t i = 0; i < encoding()->features()->size(); ++i) {
        const schema::FeatureEncoding* f = encoding()->features()->Get(i);
        Program p;
        TUNECAST_RETURN_IF_ERROR(compile(f->program(), &p, format("encoding feature %u", i)));
        p.text = f->text() ? f->text()->str() : "";
        features_.push_back(p);
      }
    }
    return Status::ok();
  }

  struct Program {
    Expr expr;
    uint32_t fields = 0;
    uint32_t params = 0;
    std::string text;
  };

  Status compile(const schema::Program* program, Program* out, const std::string& what) {
    if (program == nullptr || program->code() == nullptr) {
      return Status::error(StatusCode::kCorruptModel, "%s has no bytecode", what.c_str());
    }
    Decompiler d(program->code()->data(), program->code()->size(),
                 program->constants() ? program->constants()->data() : nullptr,
                 program->constants() ? program->constants()->size() : 0, param_names_, field_names_);
    const Status status = d.run(&out->expr);
    if (!status) return Status::error(status.code(), "%s: %s", what.c_str(), status.message());
    out->fields = d.fields_read;
    out->params = d.params_read;
    return Status::ok();
  }

  // ---- header ----
  std::string guard() const { return "TUNECAST_GENERATED_" + snake(options_.name_space + "_" + options_.name, "x") + "_H_"; }

  std::string header() {
    Writer w;
    const GraphInfo& enc = encoder();
    const uint32_t enc_input = enc.graph->inputs()->Get(0);
    w.line("// %s: a tuning-parameter predictor generated by `tunecast emit-cpp` from",
           options_.name.c_str());
    w.line("// %s (model '%s'). Do not edit; regenerate.", comment_text(options_.source).c_str(),
           model_.root()->name() ? comment_text(model_.root()->name()->str()).c_str() : "");
    w.line("//");
    w.line("// Same predictions as tunecast::predict on the blob, bit for bit: the same kernels with");
    w.line("// compile-time sizes, the constraints compiled to C++, the same beam search. No heap, no");
    w.line("// exceptions; safe in static initializers and on several threads (one Scratch each).");
    w.line("//");
    w.line("//   static %s::Scratch scratch;  // one per thread that predicts at once", options_.name.c_str());
    w.line("//   tunecast::Candidate best;");
    w.line("//   tunecast::Status s = %s::predict(problem, {}, &scratch, &best, 1, nullptr);",
           options_.name.c_str());
    w.line("#ifndef %s", guard().c_str());
    w.line("#define %s", guard().c_str());
    w.blank();
    w.line("#include <cstddef>");
    w.line("#include <cstdint>");
    w.blank();
    w.line("// With compile-time sizes GCC reports impossible iterations in the kernels' remainder loops");
    w.line("// (-Waggressive-loop-optimizations) and, for layers under 64 units, wide panel blocks that");
    w.line("// never run reading past a small bias (-Warray-bounds); the kernels are included here first,");
    w.line("// without those checks.");
    w.line("#if defined(__GNUC__) && !defined(__clang__)");
    w.line("#pragma GCC diagnostic push");
    w.line("#pragma GCC diagnostic ignored \"-Waggressive-loop-optimizations\"");
    w.line("#pragma GCC diagnostic ignored \"-Warray-bounds\"");
    w.line("#endif");
    w.line("#include \"tunecast/beam_search.h\"");
    w.line("#include \"tunecast/kernel_types.h\"");
    w.line("#include \"tunecast/layers.h\"");
    w.line("#if defined(__GNUC__) && !defined(__clang__)");
    w.line("#pragma GCC diagnostic pop");
    w.line("#endif");
    w.line("#include \"tunecast/predict.h\"");
    w.blank();
    w.line("namespace %s {", options_.name_space.c_str());
    w.blank();
    w.line("struct %s {", options_.name.c_str());
    w.line("  static constexpr const char* kModelName = %s;  // the blob's model name",
           quoted(model_.root()->name() ? model_.root()->name()->str() : "").c_str());
    w.line("  static constexpr int kMaxBeam = %d;          // beams the Scratch holds", options_.max_beam);
    w.line("  static constexpr int kParameterCount = %d;", model_.parameter_count());
    w.line("  static constexpr int kTokenCount = %d;", model_.token_count());
    w.line("  static constexpr int kFeatureRows = %u;      // encoder input [rows, cols]", enc.value_rows[enc_input]);
    w.line("  static constexpr int kFeatureCols = %u;", enc.value_cols[enc_input]);
    if (!schema_.builtin()) {  // the kernel definition's problem: typed field indices and symbols
      w.blank();
      w.line("  // The problem's fields (its kernel definition): problem.set(kField_m, 4096); enumerations'");
      w.line("  // symbols as values (problem.set(kField_dtype, kDtype_FP16)), architectures by tunecast::arch_code.");
      for (int f = 0; f < schema_.field_count(); ++f) {
        w.line("  static constexpr int kField_%s = %d;", schema_.field_name(f), f);
      }
      for (int f = 0; f < schema_.field_count(); ++f) {
        if (schema_.field_kind(f) != FieldKind::kEnumeration) continue;
        std::string prefix = schema_.field_name(f);
        prefix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(prefix[0])));
        for (int v = 0; v < schema_.symbol_count(f); ++v) {
          w.line("  static constexpr int64_t k%s_%s = %d;", prefix.c_str(), schema_.symbol_name(f, v), v);
        }
      }
    }
    w.blank();
    w.line("  // Every activation of one prediction (rows padded to %d floats), the encoder input and", kernels::kPanelWidth);
    w.line("  // the search's arrays. Its size is fixed here: nothing is computed or allocated at run time.");
    w.line("  struct Scratch {");
    w.line("    alignas(64) float features[kFeatureRows * kFeatureCols];  // encoded problem, dense");
    for (const int g : {static_cast<int>(seq2seq()->encoder()), static_cast<int>(seq2seq()->decoder())}) {
      const GraphInfo& info = model_.graph(g);
      const GraphNames& names = graph_names_.at(g);
      for (uint32_t v = 0; v < info.value_count; ++v) {
        if (info.storage[v] != v) continue;  // shares another value's array (value_ptr)
        const bool per_beam = info.value_rows[v] == 0;
        w.line("    alignas(64) float %s[%s * %zu];  // [%s, %u]", names.values[v].c_str(),
               per_beam ? "kMaxBeam" : std::to_string(info.value_rows[v]).c_str(),
               padded(info.value_cols[v]), per_beam ? "beams" : std::to_string(info.value_rows[v]).c_str(),
               info.value_cols[v]);
      }
      w.line("    alignas(64) float %s[%zu];  // per-layer temporaries", names.temp.c_str(), names.temp_floats);
    }
    w.line("    tunecast::beam::Hypothesis hyps[kMaxBeam];");
    w.line("    tunecast::beam::Hypothesis next_hyps[kMaxBeam];");
    w.line("    tunecast::beam::Expansion top[kMaxBeam];");
    w.line("    int32_t order[kTokenCount];");
    w.line("  };");
    w.line("  static constexpr size_t kScratchBytes = sizeof(Scratch);");
    w.blank();
    w.line("  // Beam search from a problem (beam width 1..kMaxBeam); writes up to min(beam, capacity)");
    w.line("  // candidates into `out`, best first. `info` may be null. As tunecast::predict.");
    w.line("  static tunecast::Status predict(const tunecast::Problem& problem,");
    w.line("                                 const tunecast::PredictOptions& options, Scratch* scratch,");
    w.line("                                 tunecast::Candidate* out, int capacity,");
    w.line("                                 tunecast::PredictInfo* info);");
    if (options_.thread_local_scratch) {
      w.line("  // Same, in a thread_local Scratch: kScratchBytes more in every thread of the process");
      w.line("  // (static TLS is zeroed at thread start; in a dlopen'd library glibc allocates it on a");
      w.line("  // thread's first call: pass a Scratch where even that must not happen).");
      w.line("  static tunecast::Status predict(const tunecast::Problem& problem,");
      w.line("                                 const tunecast::PredictOptions& options,");
      w.line("                                 tunecast::Candidate* out, int capacity,");
      w.line("                                 tunecast::PredictInfo* info);");
    }
    w.line("  // From the encoder input itself (kFeatureRows * kFeatureCols floats, row-major); `problem`");
    w.line("  // may be null, then the model's constraints are skipped. As tunecast::predict_from_features.");
    w.line("  static tunecast::Status predict_from_features(const float* features, size_t feature_count,");
    w.line("                                               const tunecast::Problem* problem,");
    w.line("                                               const tunecast::PredictOptions& options,");
    w.line("                                               Scratch* scratch, tunecast::Candidate* out,");
    w.line("                                               int capacity, tunecast::PredictInfo* info);");
    w.line("  // The model's feature encoding; as tunecast::encode_problem.");
    w.line("  static tunecast::Status encode_problem(const tunecast::Problem& problem, float* features,");
    w.line("                                        size_t feature_count, uint32_t* out_of_range_fields);");
    w.line("  // The constraints of decode steps < length (positions < length in the solver's order);");
    w.line("  // as tunecast::check_candidate.");
    w.line("  static bool check_candidate(const tunecast::Problem& problem, const int64_t* values,");
    w.line("                              int length, int* first_failed);");
    w.line("  // The model's applicability conditions; as tunecast::check_applicability and");
    w.line("  // tunecast::applicability_text (\"\" when out of range).");
    w.line("  static bool check_applicability(const tunecast::Problem& problem, int* first_failed);");
    w.line("  static const char* applicability_text(int index);");
    w.line("  static const char* parameter_name(int position);  // \"\" when out of range");
    w.line("  static const char* metadata(const char* key);      // nullptr when absent");
    w.line("};");
    w.blank();
    w.line("}  // namespace %s", options_.name_space.c_str());
    w.blank();
    w.line("#endif  // %s", guard().c_str());
    return w.take();
  }

  // ---- source ----
  std::string value_ptr(int g, uint32_t v) const {
    return "s." + graph_names_.at(g).values[model_.graph(g).storage[v]];
  }
  std::string rows_of(const GraphInfo& info, uint32_t v) const {
    return info.value_rows[v] == 0 ? "rows" : std::to_string(info.value_rows[v]);
  }
  static std::string stride_of(const GraphInfo& info, uint32_t v) { return std::to_string(padded(info.value_cols[v])); }

  std::string weights_of(const schema::Layer* layer, const char* what) const {
    return layer_consts_.at(layer) + what;
  }
  std::string bias_of(const schema::Layer* layer) const {
    return (layer->bias() && layer->bias()->size() > 0) ? weights_of(layer, "Bias") : "nullptr";
  }

  void write_weights(Writer* w) {
    for (const int g : {static_cast<int>(seq2seq()->encoder()), static_cast<int>(seq2seq()->decoder())}) {
      for (const schema::Layer* layer : *model_.graph(g).graph->layers()) {
        const std::string name = layer->name() ? layer->name()->str() : "";
        if (const schema::Matrix* m = layer->kernel()) {
          w->line("// %s: %s [%u][%u]%s%s", comment_text(name).c_str(),
                  layer->type() == LayerType::Embedding ? "table" : "kernel", m->rows(), m->cols(),
                  m->panel_width() ? ", packed in column panels" : ", row-major",
                  m->half_data() ? ", fp16" : "");
          write_matrix(w, weights_of(layer, "Kernel"), m);
        }
        if (const schema::Matrix* m = layer->recurrent()) {
          w->line("// %s: recurrent kernel [%u][%u], packed in column panels%s", comment_text(name).c_str(), m->rows(),
                  m->cols(), m->half_data() ? ", fp16" : "");
          write_matrix(w, weights_of(layer, "Recurrent"), m);
        }
        if (layer->bias() && layer->bias()->size() > 0) {
          w->line("// %s: bias [%u], zero-padded", comment_text(name).c_str(), layer->units() * (layer->type() == LayerType::Lstm ? 4 : 1));
          write_floats(w, weights_of(layer, "Bias"), layer->bias()->data(), layer->bias()->size());
        }
        w->blank();
      }
    }
  }

  // The layer calls of graph `g` (rows: the live beams of a step graph).
  Status write_graph(Writer* w, int g) {
    const GraphInfo& info = model_.graph(g);
    const GraphNames& names = graph_names_.at(g);
    const bool batched = info.batched;
    w->line("tunecast::Status run_%s_graph(%s::Scratch& s%s) {", names.prefix.c_str(), options_.name.c_str(),
            batched ? ", size_t rows" : "");
    for (const schema::Layer* layer : *info.graph->layers()) {
      const auto& ins = *layer->inputs();
      const auto& outs = *layer->outputs();
      const uint32_t in = ins[0];
      const uint32_t out = outs[0];
      const std::string lname = layer->name() ? layer->name()->str() : "";
      const std::string cname = quoted(lname);
      auto v = [&](uint32_t id) { return value_ptr(g, id); };
      auto r = [&](uint32_t id) { return rows_of(info, id); };
      auto st = [&](uint32_t id) { return stride_of(info, id); };
      switch (layer->type()) {
        case LayerType::Dense:
          w->line("  // %s: dense [%s, %u] -> [%s, %u]", comment_text(lname).c_str(), r(in).c_str(), info.value_cols[in], r(out).c_str(), layer->units());
          w->line("  layers::dense(%s, %s, %s, %u, %s, %u, %s, %s, %s, %s);", v(in).c_str(), st(in).c_str(),
                  r(in).c_str(), layer->kernel()->rows(), weights_of(layer, "Kernel").c_str(), layer->units(),
                  bias_of(layer).c_str(), act_name(to_act(layer->activation())), v(out).c_str(), st(out).c_str());
          break;
        case LayerType::Embedding:
          w->line("  // %s: embedding [%s, 1] -> [%s, %u]", comment_text(lname).c_str(), r(in).c_str(), r(out).c_str(), layer->kernel()->cols());
          w->line("  TUNECAST_RETURN_IF_ERROR(layers::embedding(%s, %s, %s, %s, %s, %u, %u, %s, %s));",
                  cname.c_str(), v(in).c_str(), st(in).c_str(), r(in).c_str(), weights_of(layer, "Kernel").c_str(),
                  layer->kernel()->rows(), layer->kernel()->cols(), v(out).c_str(), st(out).c_str());
          break;
        case LayerType::Lstm: {
          const size_t units = layer->units();
          const size_t z_stride = padded(4 * units);
          const bool has_initial = ins.size() == 3;
          w->line("  // %s: lstm %zu units, [%s, %u] -> sequence [%s, %zu], h, c", comment_text(lname).c_str(), units,
                  r(in).c_str(), info.value_cols[in], r(out).c_str(), units);
          const std::string gate = act_name(to_act(layer->recurrent_activation()));
          const std::string cell = act_name(to_act(layer->cell_activation()));
          // lstm_input's arguments up to the bias, which lstm_batch takes first too.
          const std::string input_args =
              format("%s, %s, %s, %s, %s, %s, %u, %zu, %s", cname.c_str(), layer->token_input() ? "true" : "false",
                     v(in).c_str(), st(in).c_str(), r(in).c_str(), weights_of(layer, "Kernel").c_str(),
                     layer->kernel()->rows(), units, bias_of(layer).c_str());
          if (batched) {
            // The sequence output shares h's storage in a step graph (GraphInfo::storage).
            w->line("  TUNECAST_RETURN_IF_ERROR(layers::lstm_batch(%s, %s, %s, %s, %s, %s, %s, %s, s.%s, %zu, %s, %s, %s, %s));",
                    input_args.c_str(), weights_of(layer, "Recurrent").c_str(),
                    has_initial ? v(ins[1]).c_str() : "nullptr", has_initial ? st(ins[1]).c_str() : "0",
                    has_initial ? v(ins[2]).c_str() : "nullptr", has_initial ? st(ins[2]).c_str() : "0",
                    gate.c_str(), cell.c_str(), names.temp.c_str(), z_stride, v(outs[1]).c_str(), st(outs[1]).c_str(),
                    v(outs[2]).c_str(), st(outs[2]).c_str());
          } else {
            w->line("  TUNECAST_RETURN_IF_ERROR(layers::lstm_input(%s, s.%s, %zu));", input_args.c_str(),
                    names.temp.c_str(), z_stride);
            w->line("  layers::lstm_sequence(%s, %zu, %s, %s, %s, %s, %s, %s, %s, s.%s, %zu, %s, %s, %s, %s);",
                    r(in).c_str(), units, weights_of(layer, "Recurrent").c_str(),
                    has_initial ? v(ins[1]).c_str() : "nullptr", has_initial ? v(ins[2]).c_str() : "nullptr",
                    gate.c_str(), cell.c_str(), layer->reverse() ? "/*reverse=*/true" : "/*reverse=*/false",
                    layer->return_sequences() ? "/*return_sequences=*/true" : "/*return_sequences=*/false",
                    names.temp.c_str(), z_stride, v(outs[1]).c_str(), v(outs[2]).c_str(), v(out).c_str(), st(out).c_str());
          }
          break;
        }
        case LayerType::Relu:
        case LayerType::Tanh:
        case LayerType::Sigmoid:
        case LayerType::Softmax: {
          const char* act = layer->type() == LayerType::Relu      ? "Act::kRelu"
                            : layer->type() == LayerType::Tanh    ? "Act::kTanh"
                            : layer->type() == LayerType::Sigmoid ? "Act::kSigmoid"
                                                                  : "Act::kSoftmax";
          w->line("  // %s", comment_text(lname).c_str());
          w->line("  layers::activation(%s, %s, %s, %u, %s, %s);", act, v(in).c_str(), r(out).c_str(),
                  info.value_cols[out], st(out).c_str(), v(out).c_str());
          break;
        }
        case LayerType::Add:
        case LayerType::Concat: {
          std::string list;
          std::string cols;
          std::string strides;
          for (uint32_t i = 0; i < ins.size(); ++i) {
            list += (i ? ", " : "") + v(ins[i]);
            cols += (i ? ", " : "") + std::to_string(info.value_cols[ins[i]]);
            strides += (i ? ", " : "") + st(ins[i]);
          }
          w->line("  {  // %s", comment_text(lname).c_str());
          w->line("    const float* const inputs[] = {%s};", list.c_str());
          if (layer->type() == LayerType::Add) {
            w->line("    layers::add(inputs, %u, %s * %s, %s);", ins.size(), r(out).c_str(), st(out).c_str(), v(out).c_str());
          } else {
            w->line("    const size_t cols[] = {%s};", cols.c_str());
            w->line("    const size_t strides[] = {%s};", strides.c_str());
            w->line("    layers::concat(inputs, cols, strides, %u, %s, %s, %s);", ins.size(), r(out).c_str(), v(out).c_str(), st(out).c_str());
          }
          w->line("  }");
          break;
        }
        case LayerType::Conv1D:
          w->line("  // %s: conv1d kernel %u, [%s, %u] -> [%s, %u]", comment_text(lname).c_str(), layer->kernel_size(),
                  r(in).c_str(), info.value_cols[in], r(out).c_str(), layer->units());
          w->line("  layers::conv1d(%s, %s, %s, %u, %u, %s, %s, %u, %s, %s, s.%s, %s, %s, %s);", v(in).c_str(), st(in).c_str(),
                  r(in).c_str(), info.value_cols[in], layer->kernel_size(), layer->padding_same() ? "true" : "false",
                  weights_of(layer, "Kernel").c_str(), layer->units(), bias_of(layer).c_str(),
                  act_name(to_act(layer->activation())), names.temp.c_str(), v(out).c_str(), r(out).c_str(), st(out).c_str());
          break;
        case LayerType::Attention:
          w->line("  // %s: dot attention, query [%s, %u] over memory [%s, %u]", comment_text(lname).c_str(), r(ins[0]).c_str(),
                  info.value_cols[ins[0]], r(ins[1]).c_str(), info.value_cols[ins[1]]);
          w->line("  layers::attention(%s, %s, %s, %u, %s, %s, %s, s.%s, %zu, %s, %s);", v(ins[0]).c_str(), st(ins[0]).c_str(),
                  r(ins[0]).c_str(), info.value_cols[ins[0]], v(ins[1]).c_str(), st(ins[1]).c_str(), r(ins[1]).c_str(),
                  names.temp.c_str(), padded(info.value_rows[ins[1]]), v(out).c_str(), st(out).c_str());
          break;
        default:
          return Status::error(StatusCode::kUnsupported, "emit-cpp: layer '%s' has a type this generator does not know",
                               lname.c_str());
      }
    }
    w->line("  return tunecast::Status::ok();");
    w->line("}");
    return Status::ok();
  }

  // Locals of a program: the problem fields and parameters it reads.
  void write_locals(Writer* w, const Program& p) {
    for (int f = 0; f < schema_.field_count(); ++f) {
      if ((p.fields >> f) & 1u) {
        w->line("  const int64_t %s = problem.get(%s);", field_names_[f].c_str(), field_enum(f, schema_).c_str());
      }
    }
    for (int i = 0; i < kMaxParameters; ++i) {
      if ((p.params >> i) & 1u) w->line("  const int64_t %s = params[%d];", param_names_[i].c_str(), i);
    }
  }

  static bool uses_checked(const Program& p) { return p.expr.text.find("ok.") != std::string::npos; }

  // The body of a function that returns whether program `p` holds (false when evaluation fails).
  void write_condition_body(Writer* w, const Program& p) {
    write_locals(w, p);
    if (uses_checked(p)) {
      w->line("  tunecast::CheckedInt ok;");
      w->line("  return ok.holds(%s);", p.expr.text.c_str());
    } else {
      w->line("  return %s;", p.expr.is_bool ? p.expr.text.c_str() : (operand(p.expr) + " != 0").c_str());
    }
  }

  void write_constraints(Writer* w) {
    for (size_t i = 0; i < constraints_.size(); ++i) {
      const Program& p = constraints_[i];
      w->line("// %s", comment_text(p.text).c_str());
      w->line("bool constraint_%zu(const tunecast::Problem& %s, const int64_t* %s) {", i,
              p.fields ? "problem" : "/*problem*/", p.params ? "params" : "/*params*/");
      write_condition_body(w, p);
      w->line("}");
      w->blank();
    }
    w->line("using ConstraintFn = bool (*)(const tunecast::Problem&, const int64_t*);");
    if (!constraints_.empty()) {
      w->line("constexpr ConstraintFn kConstraints[%zu] = {", constraints_.size());
      std::string row;
      for (size_t i = 0; i < constraints_.size(); ++i) {
        row += "constraint_" + std::to_string(i) + ",";
        if (i % 6 == 5 || i + 1 == constraints_.size()) {
          w->line("    %s", row.c_str());
          row.clear();
        } else {
          row += ' ';
        }
      }
      w->line("};");
    }
    w->blank();
    w->line("// The constraints checked at decode `step`, in the blob runtime's order.");
    w->line("bool constraints_hold(const tunecast::Problem& problem, int step, const int64_t* params) {");
    if (model_.constraint_begin(model_.parameter_count()) == 0) {
      w->line("  (void)problem;  // a model without constraints");
      w->line("  (void)params;");
    }
    w->line("  switch (step) {");
    for (int p = 0; p < model_.parameter_count(); ++p) {
      const int begin = model_.constraint_begin(p);
      const int end = model_.constraint_begin(p + 1);
      if (begin == end) continue;
      std::string expr;
      for (int i = begin; i < end; ++i) {
        expr += (i > begin ? " &&\n             " : "") + format("constraint_%u(problem, params)", model_.constraint_order()[i]);
      }
      w->line("    case %d:  // %s", p, comment_text(model_.parameter_name(model_.decode_position(p))).c_str());
      w->line("      return %s;", expr.c_str());
    }
    w->line("    default:");
    w->line("      return true;");
    w->line("  }");
    w->line("}");
  }

  // Applicability conditions: problem-only programs, evaluated as the blob runtime's
  // check_applicability does (the first failing index, evaluation failures fail).
  void write_applicability(Writer* w) {
    for (size_t i = 0; i < applicability_.size(); ++i) {
      const Program& p = applicability_[i];
      w->line("// %s", comment_text(p.text).c_str());
      w->line("bool applies_%zu(const tunecast::Problem& %s) {", i, p.fields ? "problem" : "/*problem*/");
      write_condition_body(w, p);
      w->line("}");
      w->blank();
    }
    w->line("// The index of the first applicability condition `problem` fails, -1 when it meets all.");
    w->line("int first_inapplicable(const tunecast::Problem& problem) {");
    if (applicability_.empty()) w->line("  (void)problem;  // a model without applicability conditions");
    for (size_t i = 0; i < applicability_.size(); ++i) {
      w->line("  if (!applies_%zu(problem)) return %zu;", i, i);
    }
    w->line("  return -1;");
    w->line("}");
    w->blank();
    w->line("// Whether the model covers the problem's architecture (Model::covers_arch).");
    w->line("bool covers_arch(const tunecast::Problem& problem) {");
    int arch_field = schema_.builtin() ? static_cast<int>(ProblemField::kArch) : -1;
    for (int f = 0; !schema_.builtin() && f < schema_.field_count(); ++f) {
      if (schema_.field_kind(f) == FieldKind::kArchitecture && arch_field < 0) arch_field = f;
    }
    if (arch_field < 0) {
      w->line("  (void)problem;  // the problem has no architecture field");
      w->line("  return true;");
    } else {
      w->line("  if (!problem.has(%s)) return true;", field_enum(arch_field, schema_).c_str());
    }
    if (arch_field < 0) {
    } else if (model_.arch_count() == 0) {
      w->line("  return true;  // the model lists no architectures");
    } else {
      w->line("  const int64_t arch = problem.get(%s);", field_enum(arch_field, schema_).c_str());
      std::string codes;
      for (int i = 0; i < model_.arch_count(); ++i) {
        codes += (i ? ", " : "") + std::to_string(model_.arch(i)) + "ll";
      }
      w->line("  for (const int64_t covered : {%s}) {", codes.c_str());
      w->line("    if (arch == covered) return true;");
      w->line("  }");
      w->line("  return false;");
    }
    w->line("}");
  }

  void write_encoding(Writer* w) {
    const schema::Encoding* enc = encoding();
    const std::string& N = options_.name;
    for (size_t i = 0; i < features_.size(); ++i) {
      const Program& p = features_[i];
      w->line("// %s", comment_text(p.text).c_str());
      w->line("bool feature_%zu(const tunecast::Problem& %s, int64_t* value) {", i, p.fields ? "problem" : "/*problem*/");
      write_locals(w, p);
      if (uses_checked(p)) {
        w->line("  tunecast::CheckedInt ok;");
        w->line("  return ok.valid(%s, value);", p.expr.text.c_str());
      } else {
        w->line("  *value = %s;", p.expr.text.c_str());
        w->line("  return true;");
      }
      w->line("}");
      w->blank();
    }
    w->line("}  // namespace");
    w->blank();
    w->line("tunecast::Status %s::encode_problem(const tunecast::Problem& problem, float* features,", N.c_str());
    w->line("                                    size_t feature_count, uint32_t* out_of_range_fields) {");
    if (enc == nullptr) {
      w->line("  (void)problem; (void)features; (void)feature_count; (void)out_of_range_fields;");
      w->line("  return tunecast::Status::error(tunecast::StatusCode::kInvalidArgument,");
      w->line("                                 \"this model declares no feature encoding; pass features directly\");");
      w->line("}");
      return;
    }
    const size_t count = size_t{enc->rows()} * enc->cols();
    w->line("  constexpr size_t kCount = %zu;  // [%u, %u]", count, enc->rows(), enc->cols());
    w->line("  if (feature_count < kCount) {");
    w->line("    return tunecast::Status::error(tunecast::StatusCode::kBufferTooSmall,");
    w->line("                                   \"feature buffer holds %%zu of %%zu floats\", feature_count, kCount);");
    w->line("  }");
    w->line("  constexpr uint32_t kRequiredFields = 0x%xu;", model_.required_fields());
    if (!schema_.builtin()) {
      std::string names;
      for (int f = 0; f < schema_.field_count(); ++f) names += (f ? ", " : "") + quoted(schema_.field_name(f));
      w->line("  static constexpr const char* kFieldNames[] = {%s};", names.c_str());
    }
    w->line("  const uint32_t missing = kRequiredFields & ~problem.present;");
    w->line("  if (missing != 0) {");
    w->line("    int field = 0;");
    w->line("    while (!((missing >> field) & 1u)) ++field;");
    w->line("    return tunecast::Status::error(tunecast::StatusCode::kInvalidArgument,");
    w->line("                                   \"problem field '%%s' is missing (the model's encoding or rules read it)\",");
    if (schema_.builtin()) {
      w->line("                                   tunecast::problem_field_name(static_cast<tunecast::ProblemField>(field)));");
    } else {
      w->line("                                   kFieldNames[field]);");
    }
    w->line("  }");
    w->line("  std::memset(features, 0, kCount * sizeof(float));");
    if (!features_.empty()) w->line("  int64_t value = 0;");
    for (size_t i = 0; i < features_.size(); ++i) {
      const schema::FeatureEncoding* f = enc->features()->Get(static_cast<uint32_t>(i));
      const size_t slot = size_t{f->row()} * enc->cols() + f->col();
      w->line("  if (!feature_%zu(problem, &value)) return feature_error(%zu, %u, %u, %s);", i, i, f->row(), f->col(),
              quoted(features_[i].text).c_str());
      switch (f->transform()) {
        case schema::FeatureTransform::Raw:
          w->line("  features[%zu] = static_cast<float>(value);", slot);
          break;
        case schema::FeatureTransform::Log2:
          w->line("  features[%zu] = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(value, 1))));", slot);
          break;
        case schema::FeatureTransform::OneHot:
          w->line("  if (value >= 0 && value < %u) features[%zu + static_cast<size_t>(value)] = 1.0f;", f->width(), slot);
          break;
        case schema::FeatureTransform::Standardize:
          w->line("  features[%zu] = (static_cast<float>(value) - %s) / %s;", slot, float_literal(f->mean()).c_str(),
                  float_literal(f->std()).c_str());
          break;
      }
    }
    w->line("  uint32_t flags = 0;");
    if (enc->ranges()) {
      for (const schema::FeatureRange* range : *enc->ranges()) {
        int index = -1;
        if (!schema_.find_field(range->field()->string_view(), &index)) continue;
        if (schema_.field_kind(index) == FieldKind::kArchitecture && model_.arch_count() > 0) {
          // As Model::fields_out_of_range: the architectures the model covers, not a range of codes.
          std::string codes;
          for (int i = 0; i < model_.arch_count(); ++i) codes += (i ? ", " : "") + std::to_string(model_.arch(i)) + "ll";
          w->line("  {");
          w->line("    bool covered = false;");
          w->line("    for (const int64_t code : {%s}) covered = covered || problem.get(%s) == code;", codes.c_str(),
                  field_enum(index, schema_).c_str());
          w->line("    if (!covered) flags |= 1u << %d;", index);
          w->line("  }");
          continue;
        }
        w->line("  if (problem.get(%s) < %s || problem.get(%s) > %s) flags |= 1u << %d;", field_enum(index, schema_).c_str(),
                int_literal(range->min()).c_str(), field_enum(index, schema_).c_str(), int_literal(range->max()).c_str(), index);
      }
    }
    w->line("  if (out_of_range_fields) *out_of_range_fields = flags;");
    w->line("  return tunecast::Status::ok();");
    w->line("}");
  }

  Status source(std::string* out) {
    Writer w;
    const std::string& N = options_.name;
    const GraphInfo& enc = encoder();
    const GraphInfo& dec = decoder();
    const int enc_index = static_cast<int>(seq2seq()->encoder());
    const int dec_index = static_cast<int>(seq2seq()->decoder());
    const uint32_t enc_input = enc.graph->inputs()->Get(0);
    const auto& dec_inputs = *dec.graph->inputs();
    const auto& dec_outputs = *dec.graph->outputs();
    const auto& enc_outputs = *enc.graph->outputs();
    const int tokens = model_.token_count();
    const int words = (tokens + 63) / 64;

    w.line("// Generated by `tunecast emit-cpp` from %s. Do not edit; regenerate.", comment_text(options_.source).c_str());
    w.line("#include \"%s.h\"", N.c_str());
    w.blank();
    w.line("#include <algorithm>");
    w.line("#include <cmath>");
    w.line("#include <cstring>");
    w.blank();
    w.line("#include \"tunecast/checked_int.h\"");
    w.line("#include \"tunecast/kernel_types.h\"");
    w.line("#include \"tunecast/layers.h\"");
    w.blank();
    w.line("namespace %s {", options_.name_space.c_str());
    w.line("namespace {");
    w.blank();
    w.line("namespace layers = tunecast::layers;");
    w.line("using tunecast::kernels::Act;");
    w.blank();
    w.line("// ---- weights (exactly the blob's bytes) ----------------------------------------------------");
    w.blank();
    write_weights(&w);
    w.line("// ---- vocabulary ------------------------------------------------------------------------------");
    w.blank();
    {
      w.line("constexpr int64_t kTokenValues[%d] = {", tokens);
      std::string row;
      for (int t = 0; t < tokens; ++t) {
        row += int_literal(model_.token_value(t)) + ",";
        if (t % 12 == 11 || t + 1 == tokens) {
          w.line("    %s", row.c_str());
          row.clear();
        } else {
          row += ' ';
        }
      }
      w.line("};");
      std::string end_mask;
      for (int word = 0; word < words; ++word) {
        uint64_t bits = 0;
        for (int b = 0; b < 64 && word * 64 + b < tokens; ++b) bits |= uint64_t{model_.is_end_token(word * 64 + b)} << b;
        end_mask += format("%s0x%016llxull", word ? ", " : "", static_cast<unsigned long long>(bits));
      }
      w.line("constexpr uint64_t kEndTokens[%d] = {%s};", words, end_mask.c_str());
      w.line("// Tokens each position may emit (bit t of word t / 64).");
      w.line("constexpr uint64_t kAllowedTokens[%d][%d] = {", model_.parameter_count(), words);
      for (int p = 0; p < model_.parameter_count(); ++p) {
        std::string mask;
        for (int word = 0; word < words; ++word) {
          uint64_t bits = 0;
          for (int b = 0; b < 64 && word * 64 + b < tokens; ++b) bits |= uint64_t{model_.token_allowed(p, word * 64 + b)} << b;
          mask += format("%s0x%016llxull", word ? ", " : "", static_cast<unsigned long long>(bits));
        }
        w.line("    {%s},  // %s", mask.c_str(), comment_text(model_.parameter_name(p)).c_str());
      }
      w.line("};");
      std::string names;
      for (int p = 0; p < model_.parameter_count(); ++p) names += (p ? ", " : "") + quoted(model_.parameter_name(p));
      w.line("constexpr const char* kParameterNames[%d] = {%s};", model_.parameter_count(), names.c_str());
      if (model_.reorders_parameters()) {
        std::string order;
        for (int s = 0; s < model_.parameter_count(); ++s) order += (s ? ", " : "") + std::to_string(model_.decode_position(s));
        w.line("// The position the decoder emits at each step (the vocabulary's decode_order).");
        w.line("constexpr int kDecodeOrder[%d] = {%s};", model_.parameter_count(), order.c_str());
      }
      w.blank();
      const auto* metadata = model_.root()->metadata();
      const uint32_t entries = metadata ? metadata->size() : 0;
      w.line("struct MetadataEntry {");
      w.line("  const char* key;");
      w.line("  const char* value;");
      w.line("};");
      w.line("constexpr MetadataEntry kMetadata[] = {");
      for (uint32_t i = 0; i < entries; ++i) {
        const schema::MetadataEntry* e = metadata->Get(i);
        w.line("    {%s, %s},", quoted(e->key() ? e->key()->str() : "").c_str(), quoted(e->value() ? e->value()->str() : "").c_str());
      }
      w.line("    {nullptr, nullptr},");
      w.line("};");
      w.blank();
    }
    w.line("// ---- constraints (compiled from the bytecode; CheckedInt fails as the VM does) -------------");
    w.blank();
    write_constraints(&w);
    w.blank();
    write_applicability(&w);
    w.blank();
    w.line("// ---- network -----------------------------------------------------------------------------------");
    w.blank();
    TUNECAST_RETURN_IF_ERROR(write_graph(&w, enc_index));
    w.blank();
    TUNECAST_RETURN_IF_ERROR(write_graph(&w, dec_index));
    w.blank();
    const uint32_t token_value = dec_inputs[seq2seq()->token_input()];
    const uint32_t logits = dec_outputs[seq2seq()->logits_output()];
    w.line("// The decoder as a beam-search Network (tunecast/beam_search.h).");
    w.line("class Decoder {");
    w.line(" public:");
    w.line("  explicit Decoder(%s::Scratch& s) : s_(s) {}", N.c_str());
    w.line("  int parameter_count() const { return %s::kParameterCount; }", N.c_str());
    w.line(model_.reorders_parameters() ? "  int decode_position(int step) const { return kDecodeOrder[step]; }"
                              : "  int decode_position(int step) const { return step; }");
    w.line("  int token_count() const { return %s::kTokenCount; }", N.c_str());
    w.line("  int64_t token_value(int token) const { return kTokenValues[token]; }");
    w.line("  bool is_end_token(int token) const { return (kEndTokens[token >> 6] >> (token & 63)) & 1u; }");
    w.line("  bool token_allowed(int position, int token) const {");
    w.line("    return (kAllowedTokens[position][token >> 6] >> (token & 63)) & 1u;");
    w.line("  }");
    w.line("  bool end_competes() const { return %s; }",
           model_.root()->vocabulary()->end_policy() == schema::EndPolicy::FixedLength ? "true" : "false");
    w.line("  bool logits_are_probabilities() const { return %s; }", seq2seq()->logits_are_probabilities() ? "true" : "false");
    w.line("  const char* parameter_name(int position) const { return kParameterNames[position]; }");
    w.line("  bool constraints_pass(const tunecast::Problem& problem, int step, const int64_t* values) const {");
    w.line("    return constraints_hold(problem, step, values);");
    w.line("  }");
    w.line("  tunecast::Status run_decoder() { return run_%s_graph(s_, rows_); }", graph_names_.at(dec_index).prefix.c_str());
    w.line("  float* scores(int row) { return %s + row * %s; }", value_ptr(dec_index, logits).replace(0, 2, "s_.").c_str(),
           stride_of(dec, logits).c_str());
    w.line("  void feed(int row, int parent_row, int token) {");
    w.line("    %s[row * %s] = static_cast<float>(token);", value_ptr(dec_index, token_value).replace(0, 2, "s_.").c_str(),
           stride_of(dec, token_value).c_str());
    if (seq2seq()->states()) {
      for (const schema::StateLink* link : *seq2seq()->states()) {
        const uint32_t dst = dec_inputs[link->decoder_input()];
        const uint32_t src = dec_outputs[link->decoder_output()];
        w.line("    std::memcpy(%s + row * %s, %s + parent_row * %s, %u * sizeof(float));",
               value_ptr(dec_index, dst).replace(0, 2, "s_.").c_str(), stride_of(dec, dst).c_str(),
               value_ptr(dec_index, src).replace(0, 2, "s_.").c_str(), stride_of(dec, src).c_str(), dec.value_cols[dst]);
      }
    }
    w.line("  }");
    w.line("  void set_live(int rows) { rows_ = static_cast<size_t>(rows); }");
    w.blank();
    w.line(" private:");
    w.line("  %s::Scratch& s_;", N.c_str());
    w.line("  size_t rows_ = 1;");
    w.line("};");
    w.blank();
    w.line("// Encoder, first decoder input, then the shared search.");
    w.line("tunecast::Status search(const float* features, const tunecast::Problem* problem,");
    w.line("                        const tunecast::PredictOptions& options, %s::Scratch& s,", N.c_str());
    w.line("                        tunecast::Candidate* out, int capacity, tunecast::PredictInfo* info) {");
    const size_t in_cols = enc.value_cols[enc_input];
    const size_t in_stride = padded(in_cols);
    const std::string input = value_ptr(enc_index, enc_input);
    w.line("  for (int r = 0; r < %s::kFeatureRows; ++r) {", N.c_str());
    w.line("    std::memcpy(%s + r * %zu, features + r * %zu, %zu * sizeof(float));", input.c_str(), in_stride, in_cols, in_cols);
    if (in_stride > in_cols) {
      w.line("    std::memset(%s + r * %zu + %zu, 0, %zu * sizeof(float));", input.c_str(), in_stride, in_cols, in_stride - in_cols);
    }
    w.line("  }");
    w.line("  TUNECAST_RETURN_IF_ERROR(run_%s_graph(s));", graph_names_.at(enc_index).prefix.c_str());
    w.line("  %s[0] = %s;  // start token", value_ptr(dec_index, token_value).c_str(),
           float_literal(static_cast<float>(seq2seq()->start_token())).c_str());
    if (seq2seq()->states()) {
      for (const schema::StateLink* link : *seq2seq()->states()) {
        const uint32_t dst = dec_inputs[link->decoder_input()];
        const uint32_t src = enc_outputs[link->encoder_output()];
        w.line("  std::memcpy(%s, %s, %u * sizeof(float));", value_ptr(dec_index, dst).c_str(),
               value_ptr(enc_index, src).c_str(), dec.value_cols[dst]);
      }
    }
    if (seq2seq()->contexts()) {
      for (const schema::ContextLink* link : *seq2seq()->contexts()) {
        const uint32_t dst = dec_inputs[link->decoder_input()];
        const uint32_t src = enc_outputs[link->encoder_output()];
        w.line("  for (size_t r = 0; r < %u; ++r) {", dec.value_rows[dst]);
        w.line("    std::memcpy(%s + r * %s, %s + r * %s, %u * sizeof(float));", value_ptr(dec_index, dst).c_str(),
               stride_of(dec, dst).c_str(), value_ptr(enc_index, src).c_str(), stride_of(enc, src).c_str(),
               dec.value_cols[dst]);
        w.line("  }");
      }
    }
    w.line("  Decoder decoder(s);");
    w.line("  return tunecast::beam::beam_search(");
    w.line("      decoder, problem, options,");
    w.line("      tunecast::beam::Workspace{s.hyps, s.next_hyps, s.top, s.order}, out, capacity, info);");
    w.line("}");
    w.blank();
    if (!features_.empty()) {
    w.line("tunecast::Status feature_error(int index, unsigned row, unsigned col, const char* text) {");
    w.line("  return tunecast::Status::error(tunecast::StatusCode::kInvalidArgument,");
    w.line("                                 \"encoding feature %%d (encode %%u %%u: '%%s') cannot be computed for this \"");
    w.line("                                 \"problem (division by zero or overflow)\",");
    w.line("                                 index, row, col, text);");
    w.line("}");
    w.blank();
    }
    w.line("// ---- feature encoding --------------------------------------------------------------------------");
    w.blank();
    write_encoding(&w);
    w.blank();
    w.line("// ---- API -------------------------------------------------------------------------------------");
    w.blank();
    w.line("tunecast::Status %s::predict(const tunecast::Problem& problem, const tunecast::PredictOptions& options,", N.c_str());
    w.line("                             Scratch* scratch, tunecast::Candidate* out, int capacity,");
    w.line("                             tunecast::PredictInfo* info) {");
    w.line("  tunecast::PredictInfo local;");
    w.line("  if (info == nullptr) info = &local;");
    w.line("  *info = tunecast::PredictInfo();");
    w.line("  TUNECAST_RETURN_IF_ERROR(tunecast::beam::check_beam(options, capacity, kMaxBeam));");
    w.line("  TUNECAST_RETURN_IF_ERROR(encode_problem(problem, scratch->features, kFeatureRows * kFeatureCols,");
    w.line("                                          &info->out_of_range_fields));");
    w.line("  const uint32_t out_of_range = info->out_of_range_fields;");
    w.line("  const tunecast::Status status = search(scratch->features, &problem, options, *scratch, out, capacity, info);");
    w.line("  info->out_of_range_fields = out_of_range;");
    w.line("  info->not_applicable = first_inapplicable(problem);");
    w.line("  info->arch_not_covered = !covers_arch(problem);");
    w.line("  return status;");
    w.line("}");
    w.blank();
    if (options_.thread_local_scratch) {
      w.line("tunecast::Status %s::predict(const tunecast::Problem& problem, const tunecast::PredictOptions& options,", N.c_str());
      w.line("                             tunecast::Candidate* out, int capacity, tunecast::PredictInfo* info) {");
      w.line("  thread_local Scratch scratch;");
      w.line("  return predict(problem, options, &scratch, out, capacity, info);");
      w.line("}");
      w.blank();
    }
    w.line("tunecast::Status %s::predict_from_features(const float* features, size_t feature_count,", N.c_str());
    w.line("                                           const tunecast::Problem* problem,");
    w.line("                                           const tunecast::PredictOptions& options, Scratch* scratch,");
    w.line("                                           tunecast::Candidate* out, int capacity,");
    w.line("                                           tunecast::PredictInfo* info) {");
    w.line("  tunecast::PredictInfo local;");
    w.line("  if (info == nullptr) info = &local;");
    w.line("  *info = tunecast::PredictInfo();");
    w.line("  TUNECAST_RETURN_IF_ERROR(tunecast::beam::check_beam(options, capacity, kMaxBeam));");
    w.line("  if (feature_count != size_t{kFeatureRows} * kFeatureCols) {");
    w.line("    return tunecast::Status::error(tunecast::StatusCode::kInvalidArgument,");
    w.line("                                   \"the encoder reads %%d x %%d features, %%zu were given\", kFeatureRows,");
    w.line("                                   kFeatureCols, feature_count);");
    w.line("  }");
    w.line("  return search(features, problem, options, *scratch, out, capacity, info);");
    w.line("}");
    w.blank();
    w.line("bool %s::check_candidate(const tunecast::Problem& problem, const int64_t* values, int length,", N.c_str());
    w.line("                         int* first_failed) {");
    if (constraints_.empty()) {
      w.line("  (void)problem; (void)values; (void)length; (void)first_failed;");
    } else {
      std::string positions;
      for (size_t i = 0; i < constraints_.size(); ++i) {
        positions += (i ? ", " : "") + std::to_string(model_.root()->constraints()->Get(static_cast<uint32_t>(i))->position());
      }
      w.line("  // Decode step of each constraint: those past `length` are not checked.");
      w.line("  constexpr int kPositions[%zu] = {%s};", constraints_.size(), positions.c_str());
      w.line("  for (int i = 0; i < %zu; ++i) {", constraints_.size());
      w.line("    if (kPositions[i] >= length) continue;");
      w.line("    if (!kConstraints[i](problem, values)) {");
      w.line("      if (first_failed) *first_failed = i;");
      w.line("      return false;");
      w.line("    }");
      w.line("  }");
    }
    w.line("  return true;");
    w.line("}");
    w.blank();
    w.line("bool %s::check_applicability(const tunecast::Problem& problem, int* first_failed) {", N.c_str());
    w.line("  const int failed = first_inapplicable(problem);");
    w.line("  if (failed >= 0 && first_failed) *first_failed = failed;");
    w.line("  return failed < 0;");
    w.line("}");
    w.blank();
    w.line("const char* %s::applicability_text(int index) {", N.c_str());
    if (applicability_.empty()) {
      w.line("  (void)index;");
      w.line("  return \"\";");
    } else {
      w.line("  static constexpr const char* kTexts[%zu] = {", applicability_.size());
      for (const Program& p : applicability_) w.line("      %s,", quoted(p.text).c_str());
      w.line("  };");
      w.line("  return index >= 0 && index < %zu ? kTexts[index] : \"\";", applicability_.size());
    }
    w.line("}");
    w.blank();
    w.line("const char* %s::parameter_name(int position) {", N.c_str());
    w.line("  return position >= 0 && position < kParameterCount ? kParameterNames[position] : \"\";");
    w.line("}");
    w.blank();
    w.line("const char* %s::metadata(const char* key) {", N.c_str());
    w.line("  for (const MetadataEntry* e = kMetadata; e->key != nullptr; ++e) {");
    w.line("    if (std::strcmp(e->key, key) == 0) return e->value;");
    w.line("  }");
    w.line("  return nullptr;");
    w.line("}");
    w.blank();
    w.line("}  // namespace %s", options_.name_space.c_str());
    *out = w.take();
    return Status::ok();
  }

  const Model& model_;
  const ProblemSchema schema_;
  std::string field_names_[kMaxProblemFields];
  CppEmitOptions options_;
  std::string param_names_[kMaxParameters];
  std::map<int, GraphNames> graph_names_;
  std::map<const schema::Layer*, std::string> layer_consts_;
  NameSet weight_names_;
  std::vector<Program> constraints_;
  std::vector<Program> applicability_;
  std::vector<Program> features_;
};

}  // namespace

bool is_cpp_namespace(const std::string& name_space) {
  size_t start = 0;
  while (true) {
    const size_t end = name_space.find("::", start);
    if (!is_identifier(name_space.substr(start, end == std::string::npos ? std::string::npos : end - start))) {
      return false;
    }
    if (end == std::string::npos) return true;
    start = end + 2;
  }
}

Status decompile_program(const int32_t* code, uint32_t code_size, const int64_t* constants,
                         uint32_t constant_count, const std::string* param_names,
                         std::string* expression, uint32_t* fields_read, uint32_t* params_read) {
  Decompiler d(code, code_size, constants, constant_count, param_names);
  Expr expr;
  TUNECAST_RETURN_IF_ERROR(d.run(&expr));
  *expression = expr.text;
  if (fields_read) *fields_read = d.fields_read;
  if (params_read) *params_read = d.params_read;
  return Status::ok();
}

Status emit_embedded_blob(const void* blob, size_t size, const std::string& name_space,
                          const std::string& name, const std::string& source_name,
                          std::string* header, std::string* source) {
  if (!is_identifier(name) || !is_cpp_namespace(name_space)) {
    return Status::error(StatusCode::kInvalidArgument,
                         "'%s' / '%s' are not a C++ namespace and identifier", name_space.c_str(),
                         name.c_str());
  }
  const std::string guard = "TUNECAST_EMBEDDED_" + snake(name_space + "_" + name, "x") + "_H_";
  Writer h;
  h.line("// %s: the tunecast model blob %s, embedded by `tunecast embed`. Do not edit.", name.c_str(),
         comment_text(source_name).c_str());
  h.line("//");
  h.line("//   tunecast::Model model;");
  h.line("//   tunecast::Status s = tunecast::Model::load(%s_data(), %s_size(), &model);", name.c_str(), name.c_str());
  h.line("#ifndef %s", guard.c_str());
  h.line("#define %s", guard.c_str());
  h.blank();
  h.line("#include <cstddef>");
  h.blank();
  h.line("namespace %s {", name_space.c_str());
  h.blank();
  h.line("const unsigned char* %s_data();  // 32-byte aligned", name.c_str());
  h.line("size_t %s_size();", name.c_str());
  h.blank();
  h.line("}  // namespace %s", name_space.c_str());
  h.blank();
  h.line("#endif  // %s", guard.c_str());
  *header = h.take();

  Writer c;
  c.line("// Generated by `tunecast embed` from %s. Do not edit.", comment_text(source_name).c_str());
  c.line("#include \"%s.h\"", name.c_str());
  c.blank();
  c.line("namespace %s {", name_space.c_str());
  c.line("namespace {");
  c.blank();
  c.line("alignas(32) constexpr unsigned char kBlob[%zu] = {", size);
  const unsigned char* bytes = static_cast<const unsigned char*>(blob);
  std::string row;
  for (size_t i = 0; i < size; ++i) {
    row += std::to_string(bytes[i]) + ",";
    if (row.size() >= 96 || i + 1 == size) {
      c.line("%s", row.c_str());
      row.clear();
    }
  }
  c.line("};");
  c.blank();
  c.line("}  // namespace");
  c.blank();
  c.line("const unsigned char* %s_data() { return kBlob; }", name.c_str());
  c.line("size_t %s_size() { return sizeof kBlob; }", name.c_str());
  c.blank();
  c.line("}  // namespace %s", name_space.c_str());
  *source = c.take();
  return Status::ok();
}

Status emit_cpp(const Model& model, const CppEmitOptions& options, CppSources* out) {
  return Emitter(model, options).run(out);
}

}  // namespace tunecast::codegen
