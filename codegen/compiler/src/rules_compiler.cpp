// Rules language compiler: text -> tokens -> expression trees (lets inlined, constants folded) ->
// stack-machine bytecode, each program checked by the runtime's own verifier before it is kept.
#include "tunecast/codegen/rules_compiler.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "constraint_vm.h"
#include "tunecast/model.h"
#include "tunecast/problem.h"

namespace tunecast::rules {
namespace {

// Thrown inside the compiler only; compile() turns it into a Status.
struct CompileError {
  int line;
  int col;
  std::string message;
};

// ---- tokens ------------------------------------------------------------------------------------

enum class TokenKind { kInt, kFloat, kIdent, kPunct, kNewline, kEnd };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 0;
  int col = 0;
  size_t offset = 0;
};

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A line break inside brackets, or after a token that cannot end an expression (an operator, a
// comma, `in`), continues the statement.
bool continues_line(const Token& last) {
  if (last.kind == TokenKind::kPunct) return last.text != ")" && last.text != "]" && last.text != "}";
  return last.kind == TokenKind::kIdent && last.text == "in";
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kNewline: return "end of line";
    case TokenKind::kEnd: return "end of file";
    default: return "'" + std::string(token.text) + "'";
  }
}

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  int line = 1;
  size_t line_start = 0;
  int depth = 0;
  auto make = [&](TokenKind kind, size_t start, size_t end) {
    Token token;
    token.kind = kind;
    token.text = text.substr(start, end - start);
    token.line = line;
    token.col = static_cast<int>(start - line_start) + 1;
    token.offset = start;
    return token;
  };
  auto end_line = [&](size_t at) {
    if (depth == 0 && !tokens.empty() && tokens.back().kind != TokenKind::kNewline && !continues_line(tokens.back()))
      tokens.push_back(make(TokenKind::kNewline, at, at));
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      end_line(i);
      ++line;
      line_start = ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    const size_t start = i;
    if (is_digit(c)) {
      Token token;
      if (c == '0' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
        i += 2;
        uint64_t value = 0;
        size_t digits = 0;
        while (i < text.size() && std::isxdigit(static_cast<unsigned char>(text[i]))) {
          const int d = is_digit(text[i]) ? text[i] - '0' : (std::tolower(text[i]) - 'a' + 10);
          if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 16)
            throw CompileError{line, static_cast<int>(start - line_start) + 1, "integer literal out of int64 range"};
          value = value * 16 + d;
          ++i;
          ++digits;
        }
        if (digits == 0) throw CompileError{line, static_cast<int>(start - line_start) + 1, "hex literal without digits"};
        token = make(TokenKind::kInt, start, i);
        token.int_value = static_cast<int64_t>(value);
      } else {
        while (i < text.size() && is_digit(text[i])) ++i;
        bool is_float = false;
        if (i + 1 < text.size() && text[i] == '.' && is_digit(text[i + 1])) {
          is_float = true;
          ++i;
          while (i < text.size() && is_digit(text[i])) ++i;
        }
        if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
          size_t j = i + 1;
          if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
          if (j < text.size() && is_digit(text[j])) {
            is_float = true;
            i = j;
            while (i < text.size() && is_digit(text[i])) ++i;
          }
        }
        const std::string literal(text.substr(start, i - start));
        if (is_float) {
          token = make(TokenKind::kFloat, start, i);
          token.float_value = std::strtod(literal.c_str(), nullptr);
        } else {
          token = make(TokenKind::kInt, start, i);
          uint64_t value = 0;
          for (char d : literal) {
            if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - (d - '0')) / 10)
              throw CompileError{line, token.col, "integer literal '" + literal + "' out of int64 range"};
            value = value * 10 + static_cast<uint64_t>(d - '0');
          }
          token.int_value = static_cast<int64_t>(value);
        }
      }
      tokens.push_back(token);
      continue;
    }
    if (is_ident_start(c)) {
      while (i < text.size() && is_ident_char(text[i])) ++i;
      tokens.push_back(make(TokenKind::kIdent, start, i));
      continue;
    }
    static constexpr std::string_view kTwoChar[] = {"==", "!=", "<=", ">=", "<<", ">>", "&&", "||", ".."};
    bool matched = false;
    for (std::string_view op : kTwoChar) {
      if (text.substr(i, 2) == op) {
        tokens.push_back(make(TokenKind::kPunct, i, i + 2));
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string_view("(){}[],=<>+-*/%!?:").find(c) != std::string_view::npos) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      tokens.push_back(make(TokenKind::kPunct, i, i + 1));
      ++i;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(c & 0xff));
    std::string shown = std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : std::string(hex);
    throw CompileError{line, static_cast<int>(start - line_start) + 1, "unexpected character '" + shown + "'"};
  }
  depth = 0;
  end_line(text.size());
  Token end = make(TokenKind::kEnd, text.size(), text.size());
  tokens.push_back(end);
  // A line starting with an operator (`: b`, `&& c`) continues the previous one: statements start
  // with a keyword, never with punctuation.
  std::vector<Token> joined;
  joined.reserve(tokens.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t].kind == TokenKind::kNewline && t + 1 < tokens.size() && tokens[t + 1].kind == TokenKind::kPunct)
      continue;
    joined.push_back(tokens[t]);
  }
  return joined;
}

// ---- expression trees ----------------------------------------------------------------------------

enum class NodeKind { kConst, kField, kParam, kArg, kUnary, kBinary, kTernary, kAnd, kOr, kInSet, kInRange, kSet };

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Node {
  NodeKind kind = NodeKind::kConst;
  int32_t op = 0;             // kUnary / kBinary: the opcode
  int64_t value = 0;          // kConst
  int index = 0;              // kField: field; kParam: position; kArg: argument
  int symbol_field = -1;      // kConst written as a symbol (FP32): the field it belongs to
  bool literal = false;       // kConst written as an integer literal
  std::vector<NodePtr> kids;
  std::vector<int64_t> set;   // kSet, kInSet
  int line = 0;
  int col = 0;
  int depth = 1;              // of the tree below: bounds the compiler's recursion over it
  int64_t size = 1;           // nodes of the tree below with shared subtrees counted each time
};

// Real rules nest a dozen levels and expand (lets inlined) to a few thousand nodes; the limits keep
// every recursive pass over a tree (and the parser itself) far from the stack's end, and a chain
// of lets that doubles at each step from exponential time and memory, on hostile input.
constexpr int kMaxExpressionDepth = 200;
constexpr int64_t kMaxExpressionNodes = 100000;

NodePtr make_node(Node node) {
  node.depth = 1;
  node.size = 1;
  for (const NodePtr& kid : node.kids) {
    node.depth = std::max(node.depth, kid->depth + 1);
    node.size += kid->size;  // each kid is at most the limit: no overflow
  }
  if (node.depth > kMaxExpressionDepth) {
    throw CompileError{node.line, node.col,
                       "expression nested more than " + std::to_string(kMaxExpressionDepth) + " levels deep"};
  }
  if (node.size > kMaxExpressionNodes) {
    throw CompileError{node.line, node.col,
                       "expression has more than " + std::to_string(kMaxExpressionNodes) +
                           " nodes once lets are inlined"};
  }
  return std::make_shared<const Node>(std::move(node));
}

NodePtr substitute(const NodePtr& node, const std::vector<NodePtr>& args) {
  if (node->kind == NodeKind::kArg) return args[node->index];
  if (node->kids.empty()) return node;
  Node copy = *node;
  bool changed = false;
  for (NodePtr& kid : copy.kids) {
    NodePtr replaced = substitute(kid, args);
    changed |= replaced != kid;
    kid = std::move(replaced);
  }
  return changed ? make_node(std::move(copy)) : node;
}

// The parameters (bit per position) and problem fields an expression reads.
void collect(const Node& node, uint32_t* params, uint32_t* fields) {
  if (node.kind == NodeKind::kParam) *params |= 1u << node.index;
  if (node.kind == NodeKind::kField) *fields |= 1u << node.index;
  for (const NodePtr& kid : node.kids) collect(*kid, params, fields);
}

// The last position a non-empty mask names (messages name the latest parameter read).
int highest_bit(uint32_t mask) {
  int bit = 31;
  while (!((mask >> bit) & 1u)) --bit;
  return bit;
}

bool is_const(const NodePtr& node) { return node->kind == NodeKind::kConst; }

// ---- bytecode -------------------------------------------------------------------------------------

class Emitter {
 public:
  void emit(const Node& node) {
    switch (node.kind) {
      case NodeKind::kConst:
        if (node.value >= std::numeric_limits<int32_t>::min() && node.value <= std::numeric_limits<int32_t>::max()) {
          put(vm::kPushInt, static_cast<int32_t>(node.value));
        } else {
          put(vm::kPushConst, add_constants({node.value}));
        }
        break;
      case NodeKind::kField: put(vm::kLoadField, node.index); break;
      case NodeKind::kParam: put(vm::kLoadParam, node.index); break;
      case NodeKind::kArg: throw CompileError{node.line, node.col, "internal error: unbound let argument"};
      case NodeKind::kSet: throw CompileError{node.line, node.col, "a set is not a number (sets only follow 'in')"};
      case NodeKind::kUnary:
        emit(*node.kids[0]);
        put(node.op);
        break;
      case NodeKind::kBinary:
        emit(*node.kids[0]);
        emit(*node.kids[1]);
        put(node.op);
        break;
      case NodeKind::kTernary: {
        emit(*node.kids[0]);
        const size_t to_else = jump(vm::kJumpIfFalse);
        emit(*node.kids[1]);
        const size_t to_end = jump(vm::kJump);
        land(to_else);
        emit(*node.kids[2]);
        land(to_end);
        break;
      }
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        emit(*node.kids[0]);
        const size_t to_end = jump(node.kind == NodeKind::kAnd ? vm::kAndThen : vm::kOrElse);
        emit(*node.kids[1]);
        put(vm::kToBool);
        land(to_end);
        break;
      }
      case NodeKind::kInSet:
        emit(*node.kids[0]);
        put(vm::kInSet, add_constants(node.set));
        program_.code.push_back(static_cast<int32_t>(node.set.size()));
        break;
      case NodeKind::kInRange:
        emit(*node.kids[0]);
        emit(*node.kids[1]);
        emit(*node.kids[2]);
        put(vm::kInRange);
        break;
    }
  }

  ir::Program take() { return std::move(program_); }

 private:
  void put(int32_t op) { program_.code.push_back(op); }
  void put(int32_t op, int32_t operand) {
    program_.code.push_back(op);
    program_.code.push_back(operand);
  }
  size_t jump(int32_t op) {
    put(op, 0);
    return program_.code.size() - 1;
  }
  void land(size_t operand_at) {
    program_.code[operand_at] = static_cast<int32_t>(program_.code.size() - (operand_at + 1));
  }
  // Index of `values` as a contiguous run in the constant table, appended unless already there.
  int32_t add_constants(const std::vector<int64_t>& values) {
    std::vector<int64_t>& table = program_.constants;
    if (!values.empty()) {
      auto found = std::search(table.begin(), table.end(), values.begin(), values.end());
      if (found != table.end()) return static_cast<int32_t>(found - table.begin());
    }
    table.insert(table.end(), values.begin(), values.end());
    return static_cast<int32_t>(table.size() - values.size());
  }

  ir::Program program_;
};

vm::ProgramView view_of(const ir::Program& program) {
  return {program.code.data(), static_cast<uint32_t>(program.code.size()), program.constants.data(),
          static_cast<uint32_t>(program.constants.size())};
}

// Folds constant subtrees with the runtime's own semantics (a fold that would fail at run time is
// left to fail at run time). Only the taken branch of a constant condition is folded, so an
// `option` can switch off code that would divide by zero.
NodePtr fold(const NodePtr& node) {
  switch (node->kind) {
    case NodeKind::kConst:
    case NodeKind::kField:
    case NodeKind::kParam:
    case NodeKind::kArg:
    case NodeKind::kSet:
      return node;
    case NodeKind::kTernary: {
      NodePtr cond = fold(node->kids[0]);
      if (is_const(cond)) return fold(node->kids[cond->value != 0 ? 1 : 2]);
      Node copy = *node;
      copy.kids = {cond, fold(node->kids[1]), fold(node->kids[2])};
      return make_node(std::move(copy));
    }
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      NodePtr left = fold(node->kids[0]);
      const bool is_and = node->kind == NodeKind::kAnd;
      if (is_const(left) && (left->value != 0) != is_and) {
        Node result;
        result.value = is_and ? 0 : 1;
        result.line = node->line;
        result.col = node->col;
        return make_node(std::move(result));
      }
      NodePtr right = fold(node->kids[1]);
      if (is_const(left)) {  // `1 && b` is bool(b), `0 || b` too
        if (is_const(right)) {
          Node result = *right;
          result.value = right->value != 0;
          result.literal = false;
          result.symbol_field = -1;
          return make_node(std::move(result));
        }
        Node result;
        result.kind = NodeKind::kUnary;
        result.op = vm::kToBool;
        result.kids = {right};
        result.line = node->line;
        result.col = node->col;
        return make_node(std::move(result));
      }
      Node copy = *node;
      copy.kids = {left, right};
      return make_node(std::move(copy));
    }
    default:
      break;
  }
  Node copy = *node;
  bool all_const = true;
  for (NodePtr& kid : copy.kids) {
    kid = fold(kid);
    all_const &= is_const(kid);
  }
  if (copy.kind == NodeKind::kBinary &&
      (copy.op == vm::kDiv || copy.op == vm::kMod || copy.op == vm::kCeilDiv) && is_const(copy.kids[1]) &&
      copy.kids[1]->value == 0) {
    throw CompileError{copy.line, copy.col, "division by zero (the divisor is the constant 0)"};
  }
  if (all_const) {
    Emitter emitter;
    emitter.emit(copy);
    const ir::Program program = emitter.take();
    Problem empty;
    int64_t value = 0;
    if (vm::verify(view_of(program), 0, "constant").is_ok() &&
        vm::evaluate(view_of(program), empty, nullptr, &value)) {
      Node result;
      result.value = value;
      result.line = node->line;
      result.col = node->col;
      return make_node(std::move(result));
    }
  }
  return make_node(std::move(copy));
}

// ---- parser ------------------------------------------------------------------------------------

constexpr size_t kMaxSetSize = 4096;
constexpr uint32_t kMaxInputSize = 4096;

struct LetDef {
  std::vector<std::string> args;
  NodePtr body;
  int line = 0;
};

struct Builtin {
  const char* name;
  int32_t op;
  int min_args;
  int max_args;  // -1: any number (min/max chain)
};

constexpr Builtin kBuiltins[] = {
    {"min", vm::kMin, 2, -1},       {"max", vm::kMax, 2, -1},      {"ceil_div", vm::kCeilDiv, 2, 2},
    {"abs", vm::kAbs, 1, 1},        {"is_pow2", vm::kIsPow2, 1, 1}, {"ilog2", vm::kIlog2, 1, 1},
};

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool in_comment = false;
  bool space = false;
  for (char c : text) {
    if (in_comment) {
      if (c == '\n') in_comment = false;
      else continue;
    }
    if (c == '#') {
      in_comment = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const CompileOptions& options, CompiledRules* out)
      : text_(text), options_(options), out_(out), tokens_(tokenize(text)) {}

  void run() {
    prescan_lets();
    schema_ = options_.problem;
    if (!options_.params.empty()) {
      // The text's own fields come later: a clash with one is checked once they are known.
      for (size_t i = 0; i < options_.params.size(); ++i) declare_param(options_.params[i], i, peek(), false);
      out_->params = options_.params;
    }
    while (peek().kind != TokenKind::kEnd) {
      if (peek().kind == TokenKind::kNewline) {
        ++pos_;
        continue;
      }
      statement();
      const Token& after = peek();
      if (after.kind != TokenKind::kNewline && after.kind != TokenKind::kEnd)
        fail(after, "unexpected " + describe(after) + " after the end of the statement");
    }
    finish_encoding();
    out_->fields_used.clear();
    for (int f = 0; f < field_count(); ++f) {
      if ((fields_used_ >> f) & 1u) out_->fields_used.push_back(field_name(f));
    }
    for (const std::string& param : options_.params) {
      int field = -1;
      int64_t symbol_value = 0;
      if (find_field(param, &field) ||
          (generic() && find_symbol(param, &symbol_value, &field) &&
           schema_[static_cast<size_t>(field)].kind == FieldKind::kEnumeration))
        throw CompileError{peek().line, peek().col, "param '" + param + "' clashes with a problem field or symbol of the same name"};
    }
    if (own_params_ && !options_.params.empty() && param_statements_ != options_.params.size())
      throw CompileError{peek().line, peek().col,
                         "the param statements name " + std::to_string(param_statements_) + " parameters but the model has " +
                             std::to_string(options_.params.size())};
    out_->problem = schema_;
    finish_domains();
    out_->domains.assign(out_->params.size(), {});
    for (size_t p = 0; p < out_->params.size() && p < domains_.size(); ++p) {
      if (domains_[p]) out_->domains[p] = *domains_[p];
    }
  }

 private:
  // -- token helpers
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& token = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return token;
  }
  bool is_punct(const Token& token, std::string_view text) const {
    return token.kind == TokenKind::kPunct && token.text == text;
  }
  bool is_word(const Token& token, std::string_view text) const {
    return token.kind == TokenKind::kIdent && token.text == text;
  }
  bool accept(std::string_view punct) {
    if (!is_punct(peek(), punct)) return false;
    ++pos_;
    return true;
  }
  const Token& expect(std::string_view punct, const char* context) {
    if (!is_punct(peek(), punct))
      fail(peek(), "expected '" + std::string(punct) + "' " + context + ", found " + describe(peek()));
    return next();
  }
  const Token& expect_ident(const char* what) {
    if (peek().kind != TokenKind::kIdent) fail(peek(), std::string("expected ") + what + ", found " + describe(peek()));
    return next();
  }
  [[noreturn]] void fail(const Token& token, std::string message) const {
    throw CompileError{token.line, token.col, std::move(message)};
  }
  [[noreturn]] void fail(const Node& node, std::string message) const {
    throw CompileError{node.line, node.col, std::move(message)};
  }

  void prescan_lets() {
    bool statement_start = true;
    for (size_t i = 0; i + 1 < tokens_.size(); ++i) {
      if (statement_start && is_word(tokens_[i], "let") && tokens_[i + 1].kind == TokenKind::kIdent)
        future_lets_.emplace(std::string(tokens_[i + 1].text), tokens_[i + 1].line);
      statement_start = tokens_[i].kind == TokenKind::kNewline;
    }
  }

  // -- the problem's fields: the definition's (`field`, CompileOptions::problem) or the convolution's
  // A definition's own fields (or the model's, given): then the convolution's names mean nothing.
  bool generic() const { return own_fields_ || !schema_.empty(); }
  int field_count() const { return !generic() ? kProblemFieldCount : static_cast<int>(schema_.size()); }
  std::string field_name(int f) const {
    return !generic() ? problem_field_name(static_cast<ProblemField>(f)) : schema_[static_cast<size_t>(f)].name;
  }
  bool find_field(std::string_view name, int* index) const {
    if (!generic()) {
      ProblemField field;
      if (!find_problem_field(name, &field)) return false;
      *index = static_cast<int>(field);
      return true;
    }
    for (size_t i = 0; i < schema_.size(); ++i) {
      if (schema_[i].name == name) {
        *index = static_cast<int>(i);
        return true;
      }
    }
    return false;
  }
  // An architecture name in rules: gfx names (gfx1100, gfx90a), or any other name with a digit
  // (h100, mi300x), so that a misspelt word stays an error rather than an architecture.
  static bool arch_symbol(std::string_view id, int64_t* value) {
    const bool digit = std::any_of(id.begin(), id.end(), [](char c) { return is_digit(c); });
    return (id.rfind("gfx", 0) == 0 || digit) && arch_code(id, value);
  }
  // A symbolic value (F, FP16, NCHW, a definition's enumeration symbol, an architecture name).
  bool find_symbol(std::string_view id, int64_t* value, int* field) const {
    if (!generic()) {
      for (int f = 0; f < kProblemFieldCount; ++f) {
        // Any architecture name has a code, so in rules only gfx names read as one (gfx1100, gfx90a);
        // other words stay names (a misspelt parameter is an error, not an architecture).
        if (static_cast<ProblemField>(f) == ProblemField::kArch && id.rfind("gfx", 0) != 0) continue;
        if (find_problem_symbol(static_cast<ProblemField>(f), id, value)) {
          *field = f;
          return true;
        }
      }
      return false;
    }
    for (size_t f = 0; f < schema_.size(); ++f) {
      const ir::ProblemFieldDef& def = schema_[f];
      if (def.kind == FieldKind::kEnumeration) {
        auto it = std::find(def.symbols.begin(), def.symbols.end(), id);
        if (it != def.symbols.end()) {
          *value = it - def.symbols.begin();
          *field = static_cast<int>(f);
          return true;
        }
      } else if (def.kind == FieldKind::kArchitecture && arch_symbol(id, value)) {
        *field = static_cast<int>(f);
        return true;
      }
    }
    return false;
  }
  // Whether symbol `value` of `symbol_field` is also a value of `field` (a symbol shared by two
  // enumerations at the same position: trans_a and trans_b in {N, T}).
  bool symbol_shared(int symbol_field, int field, int64_t value) const {
    if (!generic()) return false;
    const ir::ProblemFieldDef& a = schema_[static_cast<size_t>(symbol_field)];
    const ir::ProblemFieldDef& b = schema_[static_cast<size_t>(field)];
    if (a.kind == FieldKind::kArchitecture) return b.kind == FieldKind::kArchitecture;
    return b.kind == FieldKind::kEnumeration && value >= 0 && static_cast<size_t>(value) < a.symbols.size() &&
           static_cast<size_t>(value) < b.symbols.size() && a.symbols[value] == b.symbols[value];
  }

  // -- names
  bool name_taken(std::string_view name, std::string* what, bool check_fields = true) const {
    int field = -1;
    int64_t symbol_value = 0;
    if (lets_.count(std::string(name))) *what = "a let";
    else if (options_declared_.count(std::string(name))) *what = "an option";
    else if (param_index_.count(std::string(name))) *what = "a parameter";
    else if (check_fields && find_field(name, &field)) *what = "a problem field";
    else if (check_fields && generic() && find_symbol(name, &symbol_value, &field) &&
             schema_[static_cast<size_t>(field)].kind == FieldKind::kEnumeration)
      *what = "a symbol of field '" + schema_[static_cast<size_t>(field)].name + "'";
    else if (builtin(name) != nullptr) *what = "a builtin function";
    else if (is_keyword(name)) *what = "a keyword";
    else return false;
    return true;
  }
  static bool is_keyword(std::string_view name) {
    static constexpr std::string_view kKeywords[] = {"params", "let", "option", "require", "input", "encode",
                                                     "range", "in", "pow2", "kernel", "field", "param",
                                                     "feature", "default", "applies"};
    return std::find(std::begin(kKeywords), std::end(kKeywords), name) != std::end(kKeywords);
  }
  static const Builtin* builtin(std::string_view name) {
    for (const Builtin& b : kBuiltins) {
      if (name == b.name) return &b;
    }
    return nullptr;
  }
  void declare_param(const std::string& name, size_t index, const Token& at, bool check_fields = true) {
    std::string what;
    if (param_index_.count(name)) fail(at, "duplicate param '" + name + "'");
    // The runtime predicts at most kMaxParameters, and a constraint's parameters are a bit mask.
    if (index >= static_cast<size_t>(kMaxParameters))
      fail(at, "at most " + std::to_string(kMaxParameters) + " params (tunecast::kMaxParameters)");
    if (name_taken(name, &what, check_fields)) fail(at, "param '" + name + "' clashes with " + what + " of the same name");
    param_index_.emplace(name, static_cast<int>(index));
    if (domains_.size() <= index) domains_.resize(index + 1);
    if (wide_.size() <= index) wide_.resize(index + 1);
  }

  // True when [lo..hi] is no domain: empty, or more than kMaxSetSize values (no int64 overflow).
  static bool bad_domain_range(int64_t lo, int64_t hi) {
    return lo > hi || static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) >= kMaxSetSize;
  }
  static std::string bad_domain_message() {
    return "a domain [lo..hi] needs lo <= hi and at most " + std::to_string(kMaxSetSize) + " values";
  }

  // `require p in [lo..hi]` with constant bounds: a domain, as `param p in [lo..hi]` is. An empty
  // range is refused as that statement refuses it; one of more than kMaxSetSize values restricts a
  // domain the parameter has (or gets from another rule) and is refused only where it would be the
  // domain itself (finish_domains), so a wide range beside a set keeps meaning what it says.
  void restrict_domain_range(int p, int64_t lo, int64_t hi, const Token& at) {
    if (lo > hi) fail(at, bad_domain_message());
    if (!bad_domain_range(lo, hi)) {
      std::vector<int64_t> values;
      for (int64_t v = lo; v <= hi; ++v) values.push_back(v);
      restrict_domain(p, std::move(values), at);
      return;
    }
    auto& wide = wide_[static_cast<size_t>(p)];
    if (!wide) {
      wide = WideRange{lo, hi, at.line, at.col};
    } else {
      wide->lo = std::max(wide->lo, lo);
      wide->hi = std::min(wide->hi, hi);
    }
    auto& domain = domains_[static_cast<size_t>(p)];
    if (domain) {
      domain->erase(std::remove_if(domain->begin(), domain->end(),
                                   [&](int64_t v) { return v < wide->lo || v > wide->hi; }),
                    domain->end());
    }
    if (wide->lo > wide->hi || (domain && domain->empty()))
      fail(at, "parameter '" + out_->params.at(static_cast<size_t>(p)) + "' has no value left in its domain");
  }

  // The domains at the end: a parameter bounded only by ranges too wide for a domain is refused, at
  // the first such rule; ranges that narrowed each other to a domain's size give that domain.
  // Compiled for a model, whose vocabulary gives the values, such a range is a rule and no more.
  void finish_domains() {
    for (size_t p = 0; p < wide_.size() && p < domains_.size(); ++p) {
      if (!wide_[p] || domains_[p]) continue;
      const WideRange& wide = *wide_[p];
      if (bad_domain_range(wide.lo, wide.hi)) {
        if (!options_.params.empty()) continue;
        throw CompileError{wide.line, wide.col, bad_domain_message()};
      }
      std::vector<int64_t> values;
      for (int64_t v = wide.lo; v <= wide.hi; ++v) values.push_back(v);
      domains_[p] = std::move(values);
    }
  }

  // A domain for parameter `p`, intersected with what it has (a constant `require p in SET`).
  void restrict_domain(int p, std::vector<int64_t> values, const Token& at) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    auto& domain = domains_[static_cast<size_t>(p)];
    if (const auto& wide = wide_[static_cast<size_t>(p)]) {  // a range too wide to enumerate
      values.erase(std::remove_if(values.begin(), values.end(),
                                  [&](int64_t v) { return v < wide->lo || v > wide->hi; }),
                   values.end());
    }
    if (domain) {
      std::vector<int64_t> both;
      std::set_intersection(domain->begin(), domain->end(), values.begin(), values.end(), std::back_inserter(both));
      values.swap(both);
    }
    if (values.empty()) fail(at, "parameter '" + out_->params.at(static_cast<size_t>(p)) + "' has no value left in its domain");
    domain = std::move(values);
  }

  // -- statements
  void statement() {
    const Token& keyword = peek();
    if (keyword.kind != TokenKind::kIdent)
      fail(keyword, "expected a statement (kernel, field, param, params, let, option, require, applies, feature, "
                    "input, encode, range), found " + describe(keyword));
    if (keyword.text == "kernel") return kernel_statement();
    if (keyword.text == "field") return field_statement();
    if (keyword.text == "param") return param_statement();
    if (keyword.text == "feature") return feature_statement();
    if (keyword.text == "params") return params_statement();
    if (keyword.text == "let") return let_statement();
    if (keyword.text == "option") return option_statement();
    if (keyword.text == "require") return require_statement();
    if (keyword.text == "applies") return applies_statement();
    if (keyword.text == "input") return input_statement();
    if (keyword.text == "encode") return encode_statement();
    if (keyword.text == "range") return range_statement();
    fail(keyword, "expected a statement (kernel, field, param, params, let, option, require, applies, feature, "
                  "input, encode, range), found " + describe(keyword));
  }

  // Nothing that reads names may precede the problem's fields and the parameters.
  bool body_started() const {
    return !lets_.empty() || !out_->constraints.empty() || !out_->applicability.empty() || encoding_ ||
           !options_declared_.empty() || !out_->features.empty();
  }

  void kernel_statement() {
    const Token keyword = next();
    if (!out_->kernel.empty()) fail(keyword, "a second kernel statement");
    if (body_started() || seen_params_ || own_fields_) fail(keyword, "kernel must be the first statement");
    const Token& name = expect_ident("the kernel's name after 'kernel'");
    out_->kernel = std::string(name.text);
  }

  // field NAME in [LO..HI] [default V] | field NAME in {A, B} [default A] | field NAME [default ARCH]
  void field_statement() {
    const Token keyword = next();
    if (body_started() || seen_params_)
      fail(keyword, "fields must come before every param, let, option, require, applies, feature and input");
    if (!own_fields_ && !schema_.empty()) fail(keyword, "fields are given by the model's definition; this text cannot add any");
    own_fields_ = true;
    const Token& name = expect_ident("a field name after 'field'");
    const std::string id(name.text);
    if (id.size() > static_cast<size_t>(kMaxProblemNameLength))
      fail(name, "field name longer than " + std::to_string(kMaxProblemNameLength) + " characters");
    std::string what;
    if (name_taken(id, &what)) fail(name, "field '" + id + "' clashes with " + what);
    if (schema_.size() >= static_cast<size_t>(kMaxProblemFields))
      fail(name, "at most " + std::to_string(kMaxProblemFields) + " fields (tunecast::kMaxProblemFields)");
    ir::ProblemFieldDef def;
    def.name = id;
    if (is_word(peek(), "in")) {
      next();
      if (accept("[")) {
        def.kind = FieldKind::kInteger;
        def.min = constant("the field's minimum");
        expect("..", "in the field's range '[lo..hi]'");
        def.max = constant("the field's maximum");
        expect("]", "to close the field's range");
        if (def.min > def.max) fail(name, "field '" + id + "': range minimum is above its maximum");
      } else if (accept("{")) {
        def.kind = FieldKind::kEnumeration;
        do {
          const Token& symbol = expect_ident("a symbol (a name) of the enumeration");
          const std::string sym(symbol.text);
          if (sym.size() > static_cast<size_t>(kMaxProblemNameLength))
            fail(symbol, "symbol longer than " + std::to_string(kMaxProblemNameLength) + " characters");
          if (std::find(def.symbols.begin(), def.symbols.end(), sym) != def.symbols.end())
            fail(symbol, "duplicate symbol '" + sym + "'");
          std::string taken;
          int other = -1;
          int64_t other_value = 0;
          if (find_field(sym, &other) || builtin(sym) != nullptr || is_keyword(sym))
            fail(symbol, "symbol '" + sym + "' clashes with a field, builtin or keyword");
          if (find_symbol(sym, &other_value, &other) && schema_[static_cast<size_t>(other)].kind == FieldKind::kEnumeration &&
              other_value != static_cast<int64_t>(def.symbols.size()))
            fail(symbol, "symbol '" + sym + "' is value " + std::to_string(other_value) + " of field '" +
                             schema_[static_cast<size_t>(other)].name + "' but value " + std::to_string(def.symbols.size()) +
                             " here (a shared symbol keeps its position)");
          def.symbols.push_back(sym);
        } while (accept(","));
        expect("}", "to close the enumeration");
        if (def.symbols.size() > 64) fail(name, "an enumeration has at most 64 symbols");
      } else {
        fail(peek(), "expected a range [lo..hi] or an enumeration {A, B, ...} after 'in'");
      }
    } else {
      def.kind = FieldKind::kArchitecture;
    }
    schema_.push_back(def);  // its symbols are known from here on (a default may name one)
    ir::ProblemFieldDef& added = schema_.back();
    if (is_word(peek(), "default")) {
      next();
      const Token& value = peek();
      if (added.kind == FieldKind::kInteger) {
        added.default_value = constant("the field's default");
        if (added.default_value < added.min || added.default_value > added.max)
          fail(value, "the default of field '" + id + "' lies outside its range");
      } else if (added.kind == FieldKind::kEnumeration) {
        const Token& symbol = expect_ident("one of the enumeration's symbols");
        auto it = std::find(added.symbols.begin(), added.symbols.end(), symbol.text);
        if (it == added.symbols.end()) fail(symbol, "'" + std::string(symbol.text) + "' is not a symbol of field '" + id + "'");
        added.default_value = it - added.symbols.begin();
      } else {
        const Token& arch = expect_ident("an architecture name");
        if (!arch_code(arch.text, &added.default_value))
          fail(arch, "'" + std::string(arch.text) + "' is not an architecture name");
      }
      added.has_default = true;
    }
  }

  // param NAME in SET: a parameter and its ordered domain, position by order.
  void param_statement() {
    const Token keyword = next();
    if (seen_params_ && !own_params_) fail(keyword, "param after a params statement");
    if (body_started()) fail(keyword, "params must come before every let, option, require, applies, feature and input");
    seen_params_ = own_params_ = true;
    const Token& name = expect_ident("a parameter name after 'param'");
    const std::string id(name.text);
    const size_t position = param_statements_++;
    if (!options_.params.empty()) {  // compiled for a model: the same names in the same order
      if (position >= options_.params.size())
        fail(name, "param '" + id + "' is parameter " + std::to_string(position) + " but the model has " +
                       std::to_string(options_.params.size()));
      if (options_.params[position] != id)
        fail(name, "param " + std::to_string(position) + " is '" + id + "' here but '" + options_.params[position] +
                       "' in the model");
    } else {
      declare_param(id, position, name);
      out_->params.push_back(id);
    }
    if (!is_word(peek(), "in")) fail(peek(), "expected 'in' and the parameter's domain: param " + id + " in {1, 2, 4}");
    const Token& in = next();
    std::vector<int64_t> values;
    if (accept("[")) {
      const int64_t lo = constant("the domain's lower bound");
      expect("..", "in the domain '[lo..hi]'");
      const int64_t hi = constant("the domain's upper bound");
      expect("]", "to close the domain");
      if (bad_domain_range(lo, hi)) fail(in, bad_domain_message());
      for (int64_t v = lo; v <= hi; ++v) values.push_back(v);
    } else {
      const Token& set_token = peek();
      NodePtr set = primary();
      if (set->kind != NodeKind::kSet) fail(set_token, "expected a domain {a, b, ...}, pow2[lo..hi] or [lo..hi]");
      values = set->set;
    }
    restrict_domain(static_cast<int>(position), std::move(values), in);
  }

  // feature TRANSFORM EXPR: an encoder feature the trainer adds to its default ones.
  void feature_statement() {
    const Token keyword = next();
    const Token& transform = expect_ident("a transform (raw or log2)");
    if (transform.text != "raw" && transform.text != "log2")
      fail(transform, "a feature's transform is raw or log2, not " + describe(transform));
    const size_t first = pos_;
    NodePtr tree = fold(number(expression()));
    const std::string text = source_text(first);
    uint32_t params = 0;
    uint32_t fields = 0;
    collect(*tree, &params, &fields);
    if (params != 0)
      fail(tokens_[first], "features read the problem alone ('" + out_->params.at(highest_bit(params)) +
                               "' is a tuning parameter)");
    emit(*tree, 0, keyword, text);  // checked like any program
    fields_used_ |= fields;
    out_->features.push_back({std::string(transform.text), text});
  }

  void params_statement() {
    const Token keyword = next();
    if (seen_params_) fail(keyword, "a second params statement");
    seen_params_ = true;
    std::vector<std::string> names;
    std::vector<const Token*> at;
    do {
      const Token& name = expect_ident("a parameter name");
      names.emplace_back(name.text);
      at.push_back(&name);
    } while (accept(","));
    // "params a b c": the names need commas, said here rather than as a count mismatch later.
    if (peek().kind == TokenKind::kIdent && peek().line == at.back()->line)
      fail(peek(), "parameter names are separated by commas: 'params " + names.back() + ", " +
                       std::string(peek().text) + ", ...'");
    if (!options_.params.empty()) {
      if (names.size() != options_.params.size())
        fail(keyword, "params statement lists " + std::to_string(names.size()) + " parameters but the model has " +
                          std::to_string(options_.params.size()));
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] != options_.params[i])
          fail(*at[i], "param " + std::to_string(i) + " is '" + names[i] + "' here but '" + options_.params[i] +
                           "' in the model");
      }
      return;
    }
    if (!lets_.empty() || !out_->constraints.empty() || !out_->applicability.empty())
      fail(keyword, "params must come before every let, require and applies");
    for (size_t i = 0; i < names.size(); ++i) declare_param(names[i], i, *at[i]);
    out_->params = names;
  }

  void let_statement() {
    next();
    const Token& name = expect_ident("a name after 'let'");
    std::string what;
    if (name_taken(name.text, &what)) fail(name, "let '" + std::string(name.text) + "' clashes with " + what);
    LetDef def;
    def.line = name.line;
    if (accept("(")) {
      do {
        const Token& arg = expect_ident("an argument name");
        if (std::find(def.args.begin(), def.args.end(), arg.text) != def.args.end())
          fail(arg, "duplicate argument '" + std::string(arg.text) + "'");
        def.args.emplace_back(arg.text);
      } while (accept(","));
      expect(")", "after the let's arguments");
    }
    expect("=", "after the let's name");
    current_args_ = &def.args;
    def.body = expression();
    current_args_ = nullptr;
    lets_.emplace(std::string(name.text), std::move(def));
  }

  void option_statement() {
    next();
    const Token& name = expect_ident("a name after 'option'");
    std::string what;
    if (name_taken(name.text, &what)) fail(name, "option '" + std::string(name.text) + "' clashes with " + what);
    expect("=", "after the option's name");
    int64_t value = constant("an option's default");
    auto define = options_.defines.find(name.text);
    if (define != options_.defines.end()) value = define->second;
    options_declared_.emplace(std::string(name.text), value);
  }

  // `require EXPR` and `applies EXPR`: a condition compiled to one program. A condition that folds
  // to a constant is settled here: always true is dropped, always false is an error.
  void require_statement() {
    condition_statement(false, "this requirement is always false: ");
  }

  // When the kernel applies at all: a condition on the problem (and options), never a parameter.
  void applies_statement() { condition_statement(true, "this kernel never applies: "); }

  void condition_statement(bool applicability, const char* always_false) {
    const Token keyword = next();
    const size_t first = pos_;
    NodePtr tree = fold(number(expression()));
    const std::string text = source_text(first);
    if (is_const(tree)) {
      if (tree->value == 0) fail(keyword, always_false + text);
      return;  // always true: nothing to check at run time
    }
    uint32_t params = 0;
    uint32_t fields = 0;
    collect(*tree, &params, &fields);
    if (applicability && params != 0)
      fail(tokens_[first], "applies conditions read the problem alone ('" + out_->params.at(highest_bit(params)) +
                               "' is a tuning parameter; use require)");
    // Placed at the first decode step at which every parameter it reads is known (0 for
    // applicability, which reads none).
    const std::vector<uint8_t>& order = options_.decode_order;
    if (!order.empty() && !ir::is_permutation(order, out_->params.size()))
      fail(keyword, "the model's decode order is not a permutation of the rules' " +
                        std::to_string(out_->params.size()) + " parameters");
    int step = 0;
    for (size_t s = 0; s < out_->params.size(); ++s) {
      const size_t position = order.empty() ? s : order[s];
      if ((params >> position) & 1u) step = static_cast<int>(s);
    }
    const uint32_t readable =
        applicability ? 0u : vm::readable_params_mask(step, order.empty() ? nullptr : order.data());
    // `require p in SET` with a constant set (or range) over a parameter alone is its domain too.
    if (!applicability && !tree->kids.empty() && tree->kids[0]->kind == NodeKind::kParam) {
      if (tree->kind == NodeKind::kInSet) {
        restrict_domain(tree->kids[0]->index, tree->set, keyword);
      } else if (tree->kind == NodeKind::kInRange && is_const(tree->kids[1]) && is_const(tree->kids[2])) {
        restrict_domain_range(tree->kids[0]->index, tree->kids[1]->value, tree->kids[2]->value, keyword);
      }
    }
    ir::Constraint condition;
    condition.position = static_cast<uint32_t>(step);
    condition.program = emit(*tree, readable, keyword, text);
    condition.text = text;
    fields_used_ |= fields;
    (applicability ? out_->applicability : out_->constraints).push_back(std::move(condition));
  }

  void input_statement() {
    const Token keyword = next();
    if (encoding_) fail(keyword, "a second input statement");
    const int64_t rows = integer_token("the number of rows");
    int64_t cols = 0;
    const Token& x = expect_ident("'x' between rows and columns (input 8 x 8)");
    if (x.text == "x") {
      cols = integer_token("the number of columns");
    } else if (x.text.size() > 1 && x.text[0] == 'x' &&
               std::all_of(x.text.begin() + 1, x.text.end(), [](char c) { return is_digit(c); })) {
      cols = std::atoll(std::string(x.text.substr(1)).c_str());
    } else {
      fail(x, "expected 'x' between rows and columns (input 8 x 8), found " + describe(x));
    }
    if (rows < 1 || cols < 1 || rows > kMaxInputSize || cols > kMaxInputSize)
      fail(keyword, "input size must be between 1 and " + std::to_string(kMaxInputSize) + " in each dimension");
    encoding_.emplace();
    encoding_->rows = static_cast<uint32_t>(rows);
    encoding_->cols = static_cast<uint32_t>(cols);
    cell_line_.assign(static_cast<size_t>(rows * cols), 0);
  }

  void encode_statement() {
    const Token keyword = next();
    if (!encoding_) fail(keyword, "encode needs an earlier 'input ROWS x COLS' statement");
    const Token& row_token = peek();
    const int64_t row = integer_token("a row index");
    const Token& col_token = peek();
    const int64_t col = integer_token("a column index");
    ir::FeatureEncoding feature;
    const Token& transform = expect_ident("a transform (raw, log2, onehot WIDTH, standardize MEAN STD)");
    if (transform.text == "raw") {
      feature.transform = ir::FeatureTransform::Raw;
    } else if (transform.text == "log2") {
      feature.transform = ir::FeatureTransform::Log2;
    } else if (transform.text == "onehot") {
      feature.transform = ir::FeatureTransform::OneHot;
      const Token& width_token = peek();
      const int64_t width = integer_token("the one-hot width");
      if (width < 1 || width > kMaxInputSize) fail(width_token, "one-hot width must be between 1 and 4096");
      feature.width = static_cast<uint32_t>(width);
    } else if (transform.text == "standardize") {
      feature.transform = ir::FeatureTransform::Standardize;
      feature.mean = static_cast<float>(real_token("the mean"));
      const Token& std_token = peek();
      feature.std = static_cast<float>(real_token("the standard deviation"));
      if (!(feature.std != 0.0f)) fail(std_token, "standard deviation must not be 0");
    } else {
      fail(transform, "unknown transform " + describe(transform) + " (raw, log2, onehot WIDTH, standardize MEAN STD)");
    }
    if (row < 0 || row >= encoding_->rows) fail(row_token, "row " + std::to_string(row) + " outside the input's " +
                                                               std::to_string(encoding_->rows) + " rows");
    if (col < 0 || col + feature.width > encoding_->cols)
      fail(col_token, "column " + std::to_string(col) + (feature.width > 1 ? " (one-hot width " + std::to_string(feature.width) + ")" : "") +
                          " outside the input's " + std::to_string(encoding_->cols) + " columns");
    for (uint32_t c = 0; c < feature.width; ++c) {
      int& owner = cell_line_[static_cast<size_t>(row) * encoding_->cols + col + c];
      if (owner != 0)
        fail(col_token, "cell [" + std::to_string(row) + "][" + std::to_string(col + c) + "] is already encoded at line " +
                            std::to_string(owner));
      owner = keyword.line;
    }
    feature.row = static_cast<uint32_t>(row);
    feature.col = static_cast<uint32_t>(col);
    const size_t first = pos_;
    NodePtr tree = fold(number(expression()));
    feature.text = source_text(first);
    uint32_t params = 0;
    uint32_t fields = 0;
    collect(*tree, &params, &fields);
    if (params != 0)
      fail(tokens_[first], "encode expressions cannot read tuning parameters ('" +
                               out_->params.at(highest_bit(params)) + "')");
    feature.program = emit(*tree, 0, keyword, feature.text);
    fields_used_ |= fields;
    encoding_fields_ |= fields;
    encoding_->features.push_back(std::move(feature));
  }

  void range_statement() {
    const Token keyword = next();
    const Token& name = expect_ident("a problem field after 'range'");
    int field = -1;
    if (!find_field(name.text, &field)) fail(name, "unknown problem field '" + std::string(name.text) + "'");
    const int64_t lo = constant("the range's minimum");
    const int64_t hi = constant("the range's maximum");
    if (lo > hi) fail(keyword, "range minimum " + std::to_string(lo) + " is above its maximum " + std::to_string(hi));
    const std::string canonical = field_name(field);
    for (const ir::FeatureRange& range : ranges_) {
      if (range.field == canonical) fail(name, "a second range for field '" + canonical + "'");
    }
    ranges_.push_back({canonical, lo, hi});
    if (first_range_line_ == 0) {
      first_range_line_ = keyword.line;
      first_range_col_ = keyword.col;
    }
  }

  void finish_encoding() {
    if (!encoding_) {
      if (!ranges_.empty()) throw CompileError{first_range_line_, first_range_col_, "range needs an 'input' statement"};
      return;
    }
    encoding_->ranges = ranges_;
    for (int f = 0; f < field_count(); ++f) {
      if ((encoding_fields_ >> f) & 1u) encoding_->required_fields.push_back(field_name(f));
    }
    out_->encoding = std::move(encoding_);
  }

  ir::Program emit(const Node& tree, uint32_t readable_params, const Token& at, const std::string& text) {
    Emitter emitter;
    emitter.emit(tree);
    ir::Program program = emitter.take();
    const std::string what = "'" + text.substr(0, 60) + (text.size() > 60 ? "...'" : "'");
    const Status status = vm::verify_reading(view_of(program), readable_params, what.c_str(), field_count());
    if (!status.is_ok()) fail(at, std::string("cannot compile this expression: ") + status.message());
    return program;
  }

  std::string source_text(size_t first_token) const {
    const Token& last = tokens_[pos_ - 1];
    const size_t begin = tokens_[first_token].offset;
    const size_t end = last.offset + last.text.size();
    return collapse_whitespace(text_.substr(begin, end > begin ? end - begin : 0));
  }

  int64_t integer_token(const char* what) {
    const Token& token = peek();
    if (token.kind != TokenKind::kInt) fail(token, std::string("expected ") + what + ", found " + describe(token));
    return next().int_value;
  }
  double real_token(const char* what) {
    const bool negative = accept("-");
    const Token& token = peek();
    if (token.kind != TokenKind::kInt && token.kind != TokenKind::kFloat)
      fail(token, std::string("expected ") + what + " (a number), found " + describe(token));
    next();
    const double value = token.kind == TokenKind::kInt ? static_cast<double>(token.int_value) : token.float_value;
    return negative ? -value : value;
  }
  // A constant expression (folded): literals, symbols, options, constant lets.
  int64_t constant(const char* what) {
    const Token& at = peek();
    NodePtr tree = fold(number(unary()));
    if (!is_const(tree)) fail(at, std::string(what) + " must be a constant");
    return tree->value;
  }

  // -- expressions
  NodePtr number(NodePtr node) const {
    if (node->kind == NodeKind::kSet) fail(*node, "a set is not a number (sets only follow 'in')");
    return node;
  }
  static Node at(const Token& token) {
    Node node;
    node.line = token.line;
    node.col = token.col;
    return node;
  }
  static NodePtr binary(const Token& op_token, int32_t op, NodePtr left, NodePtr right) {
    Node node = at(op_token);
    node.kind = NodeKind::kBinary;
    node.op = op;
    node.kids = {std::move(left), std::move(right)};
    return make_node(std::move(node));
  }

  NodePtr expression() { return ternary(); }

  NodePtr ternary() {
    NodePtr cond = logical_or();
    if (!is_punct(peek(), "?")) return cond;
    const Token question = next();
    NodePtr yes = number(ternary());
    expect(":", "in 'cond ? a : b'");
    NodePtr no = number(ternary());
    Node node = at(question);
    node.kind = NodeKind::kTernary;
    node.kids = {number(cond), yes, no};
    return make_node(std::move(node));
  }

  NodePtr logical_or() {
    NodePtr left = logical_and();
    while (is_punct(peek(), "||")) {
      const Token op = next();
      NodePtr right = logical_and();
      Node node = at(op);
      node.kind = NodeKind::kOr;
      node.kids = {number(left), number(right)};
      left = make_node(std::move(node));
    }
    return left;
  }

  NodePtr logical_and() {
    NodePtr left = equality();
    while (is_punct(peek(), "&&")) {
      const Token op = next();
      NodePtr right = equality();
      Node node = at(op);
      node.kind = NodeKind::kAnd;
      node.kids = {number(left), number(right)};
      left = make_node(std::move(node));
    }
    return left;
  }

  void check_symbol_comparison(const Node& left, const Node& right) const {
    const Node* field = left.kind == NodeKind::kField ? &left : right.kind == NodeKind::kField ? &right : nullptr;
    const Node* symbol = left.symbol_field >= 0 ? &left : right.symbol_field >= 0 ? &right : nullptr;
    if (field == nullptr || symbol == nullptr || field->index == symbol->symbol_field ||
        symbol_shared(symbol->symbol_field, field->index, symbol->value))
      return;
    fail(*symbol, std::string("this symbol is a value of '") + field_name(symbol->symbol_field) + "', compared with '" +
                      field_name(field->index) + "'");
  }

  NodePtr equality() {
    NodePtr left = relational();
    while (is_punct(peek(), "==") || is_punct(peek(), "!=")) {
      const Token op = next();
      NodePtr right = relational();
      check_symbol_comparison(*number(left), *number(right));
      left = binary(op, op.text == "==" ? vm::kEq : vm::kNe, left, right);
    }
    return left;
  }

  NodePtr relational() {
    NodePtr left = shift();
    for (;;) {
      const Token& token = peek();
      int32_t op = 0;
      if (is_punct(token, "<")) op = vm::kLt;
      else if (is_punct(token, "<=")) op = vm::kLe;
      else if (is_punct(token, ">")) op = vm::kGt;
      else if (is_punct(token, ">=")) op = vm::kGe;
      if (op != 0) {
        next();
        NodePtr right = number(shift());
        left = binary(token, op, number(left), right);
      } else if (is_word(token, "in")) {
        next();
        left = membership(token, number(left));
      } else {
        return left;
      }
    }
  }

  NodePtr membership(const Token& in_token, NodePtr value) {
    Node node = at(in_token);
    if (is_punct(peek(), "[")) {
      next();
      NodePtr lo = number(expression());
      expect("..", "in the range '[lo..hi]'");
      NodePtr hi = number(expression());
      expect("]", "to close the range '[lo..hi]'");
      node.kind = NodeKind::kInRange;
      node.kids = {value, lo, hi};
      return make_node(std::move(node));
    }
    const Token& set_token = peek();
    NodePtr set = primary();
    if (set->kind != NodeKind::kSet)
      fail(set_token, "expected a set {a, b, ...}, pow2[lo..hi] or a range [lo..hi] after 'in'");
    node.kind = NodeKind::kInSet;
    node.kids = {value};
    node.set = set->set;
    return make_node(std::move(node));
  }

  NodePtr shift() {
    NodePtr left = additive();
    while (is_punct(peek(), "<<") || is_punct(peek(), ">>")) {
      const Token op = next();
      NodePtr right = number(additive());
      left = binary(op, op.text == "<<" ? vm::kShl : vm::kShr, number(left), right);
    }
    return left;
  }

  NodePtr additive() {
    NodePtr left = multiplicative();
    while (is_punct(peek(), "+") || is_punct(peek(), "-")) {
      const Token op = next();
      NodePtr right = number(multiplicative());
      left = binary(op, op.text == "+" ? vm::kAdd : vm::kSub, number(left), right);
    }
    return left;
  }

  void check_divisor(const Node& divisor) const {
    if (divisor.kind == NodeKind::kConst && divisor.literal && divisor.value == 0)
      fail(divisor, "division by literal zero");
  }

  NodePtr multiplicative() {
    NodePtr left = unary();
    while (is_punct(peek(), "*") || is_punct(peek(), "/") || is_punct(peek(), "%")) {
      const Token op = next();
      NodePtr right = number(unary());
      const int32_t code = op.text == "*" ? vm::kMul : op.text == "/" ? vm::kDiv : vm::kMod;
      if (code != vm::kMul) check_divisor(*right);
      left = binary(op, code, number(left), right);
    }
    return left;
  }

  NodePtr unary() {
    const Token& token = peek();
    // Every nesting level of the grammar ('(', '{', a unary operator) passes through here.
    struct Nesting {
      int& depth;
      explicit Nesting(int& d) : depth(d) { ++depth; }
      ~Nesting() { --depth; }
    } nesting(parse_depth_);
    if (parse_depth_ > kMaxExpressionDepth) {
      fail(token, "expression nested more than " + std::to_string(kMaxExpressionDepth) + " levels deep");
    }
    if (is_punct(token, "-") || is_punct(token, "!")) {
      next();
      NodePtr operand = number(unary());
      if (token.text == "-" && operand->kind == NodeKind::kConst && operand->literal) {
        Node negated = *operand;  // a negative literal stays a literal
        negated.value = -operand->value;
        negated.line = token.line;
        negated.col = token.col;
        return make_node(std::move(negated));
      }
      Node node = at(token);
      node.kind = NodeKind::kUnary;
      node.op = token.text == "-" ? vm::kNeg : vm::kNot;
      node.kids = {operand};
      return make_node(std::move(node));
    }
    return primary();
  }

  NodePtr primary() {
    const Token& token = peek();
    switch (token.kind) {
      case TokenKind::kInt: {
        next();
        Node node = at(token);
        node.value = token.int_value;
        node.literal = true;
        return make_node(std::move(node));
      }
      case TokenKind::kFloat:
        fail(token, "floating-point literal " + describe(token) + " in an integer expression");
      case TokenKind::kIdent:
        return name();
      case TokenKind::kPunct:
        if (is_punct(token, "(")) {
          next();
          NodePtr inner = number(expression());
          expect(")", "to close '('");
          return inner;
        }
        if (is_punct(token, "{")) return set_literal();
        if (is_punct(token, "["))
          fail(token, "a range [lo..hi] may only follow 'in'");
        [[fallthrough]];
      default:
        fail(token, "expected an expression, found " + describe(token));
    }
  }

  NodePtr set_literal() {
    Node node = at(next());
    node.kind = NodeKind::kSet;
    if (!is_punct(peek(), "}")) {
      do {
        const Token& element = peek();
        NodePtr value = fold(number(expression()));
        if (!is_const(value)) fail(element, "set elements must be constants");
        node.set.push_back(value->value);
      } while (accept(","));
    }
    expect("}", "to close the set");
    if (node.set.empty()) fail(node, "empty set");
    if (node.set.size() > kMaxSetSize) fail(node, "set has more than 4096 elements");
    return make_node(std::move(node));
  }

  NodePtr pow2_set(const Token& keyword) {
    Node node = at(keyword);
    node.kind = NodeKind::kSet;
    expect("[", "after 'pow2'");
    const int64_t lo = constant("pow2's lower bound");
    expect("..", "in 'pow2[lo..hi]'");
    const int64_t hi = constant("pow2's upper bound");
    expect("]", "to close 'pow2[lo..hi]'");
    for (int64_t p = 1; p > 0; p = p > std::numeric_limits<int64_t>::max() / 2 ? 0 : p * 2) {
      if (p >= lo && p <= hi) node.set.push_back(p);
    }
    if (node.set.empty()) fail(node, "pow2[" + std::to_string(lo) + ".." + std::to_string(hi) + "] holds no power of two");
    return make_node(std::move(node));
  }

  NodePtr name() {
    const Token token = next();
    const std::string id(token.text);
    if (current_args_ != nullptr) {
      auto arg = std::find(current_args_->begin(), current_args_->end(), id);
      if (arg != current_args_->end()) {
        Node node = at(token);
        node.kind = NodeKind::kArg;
        node.index = static_cast<int>(arg - current_args_->begin());
        return make_node(std::move(node));
      }
    }
    if (auto let = lets_.find(id); let != lets_.end()) {
      const LetDef& def = let->second;
      if (def.args.empty()) {
        if (is_punct(peek(), "(")) fail(peek(), "let '" + id + "' takes no arguments");
        return def.body;
      }
      std::vector<NodePtr> args = call_arguments(token, id);
      if (args.size() != def.args.size())
        fail(token, "let '" + id + "' takes " + std::to_string(def.args.size()) + " arguments, " +
                        std::to_string(args.size()) + " given");
      return substitute(def.body, args);
    }
    if (auto option = options_declared_.find(id); option != options_declared_.end()) {
      Node node = at(token);
      node.value = option->second;
      return make_node(std::move(node));
    }
    if (auto param = param_index_.find(id); param != param_index_.end()) {
      Node node = at(token);
      node.kind = NodeKind::kParam;
      node.index = param->second;
      return make_node(std::move(node));
    }
    if (id == "pow2" && is_punct(peek(), "[")) return pow2_set(token);
    if (const Builtin* fn = builtin(id); fn != nullptr && is_punct(peek(), "(")) {
      std::vector<NodePtr> args = call_arguments(token, id);
      const int count = static_cast<int>(args.size());
      if (count < fn->min_args || (fn->max_args >= 0 && count > fn->max_args))
        fail(token, id + "() takes " +
                        (fn->max_args < 0 ? "at least " + std::to_string(fn->min_args)
                                          : std::to_string(fn->min_args)) +
                        " argument" + (fn->min_args == 1 && fn->max_args == 1 ? "" : "s") + ", " +
                        std::to_string(count) + " given");
      if (fn->op == vm::kCeilDiv) check_divisor(*args[1]);
      if (fn->min_args == 1) {
        Node node = at(token);
        node.kind = NodeKind::kUnary;
        node.op = fn->op;
        node.kids = {args[0]};
        return make_node(std::move(node));
      }
      NodePtr result = args[0];
      for (size_t i = 1; i < args.size(); ++i) result = binary(token, fn->op, result, args[i]);
      return result;
    }
    int field = -1;
    if (find_field(id, &field)) {
      Node node = at(token);
      node.kind = NodeKind::kField;
      node.index = field;
      return make_node(std::move(node));
    }
    int64_t value = 0;
    if (find_symbol(id, &value, &field)) {  // symbolic values: F, FP16, NCHW, gfx906, a definition's...
      Node node = at(token);
      node.value = value;
      node.symbol_field = field;
      return make_node(std::move(node));
    }
    if (auto future = future_lets_.find(id); future != future_lets_.end())
      fail(token, "let '" + id + "' used before its definition (line " + std::to_string(future->second) + ")");
    if (builtin(id) != nullptr) fail(token, "builtin '" + id + "' needs arguments: " + id + "(...)");
    fail(token, "unknown name '" + id + "'");
  }

  std::vector<NodePtr> call_arguments(const Token& callee, const std::string& id) {
    if (!is_punct(peek(), "(")) fail(callee, "'" + id + "' needs arguments: " + id + "(...)");
    next();
    std::vector<NodePtr> args;
    if (!is_punct(peek(), ")")) {
      do {
        args.push_back(number(expression()));
      } while (accept(","));
    }
    expect(")", "to close the argument list");
    return args;
  }

  std::string_view text_;
  const CompileOptions& options_;
  CompiledRules* out_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;

  std::map<std::string, LetDef> lets_;
  std::map<std::string, int> future_lets_;  // every let in the file -> its line
  std::map<std::string, int64_t> options_declared_;
  std::map<std::string, int> param_index_;
  bool seen_params_ = false;
  bool own_params_ = false;  // named by `param` statements
  size_t param_statements_ = 0;
  bool own_fields_ = false;  // `field` statements
  std::vector<ir::ProblemFieldDef> schema_;  // empty: the convolution problem
  std::vector<std::optional<std::vector<int64_t>>> domains_;  // per parameter
  struct WideRange {  // a constant `require p in [lo..hi]` of more values than a domain holds
    int64_t lo = 0, hi = 0;
    int line = 0, col = 0;  // of its first rule
  };
  std::vector<std::optional<WideRange>> wide_;  // per parameter, the intersection of those ranges
  const std::vector<std::string>* current_args_ = nullptr;
  int parse_depth_ = 0;  // unary() frames on the stack

  std::optional<ir::Encoding> encoding_;
  std::vector<int> cell_line_;  // line of the encode statement owning each input cell, 0 if none
  std::vector<ir::FeatureRange> ranges_;
  int first_range_line_ = 0;
  int first_range_col_ = 0;
  uint32_t fields_used_ = 0;
  uint32_t encoding_fields_ = 0;
};

}  // namespace

Status compile(std::string_view text, std::string_view source, const CompileOptions& options, CompiledRules* out) {
  *out = CompiledRules();
  try {
    Parser parser(text, options, out);
    parser.run();
  } catch (const CompileError& error) {
    *out = CompiledRules();
    return Status::error(StatusCode::kInvalidArgument, "%.*s:%d:%d: %s", static_cast<int>(source.size()),
                         source.data(), error.line, error.col, error.message.c_str());
  }
  return Status::ok();
}

Status compile(std::string_view text, std::string_view source, CompiledRules* out) {
  return compile(text, source, CompileOptions(), out);
}

Status compile_with_params(std::string_view text, std::string_view source, const std::vector<std::string>& params,
                           CompiledRules* out) {
  CompileOptions options;
  options.params = params;
  return compile(text, source, options, out);
}

Status compile_file(const std::string& path, const CompileOptions& options, CompiledRules* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::error(StatusCode::kNotFound, "cannot open rules file %s", path.c_str());
  std::ostringstream buffer;
  buffer << file.rdbuf();
  if (file.bad()) return Status::error(StatusCode::kIoError, "cannot read rules file %s", path.c_str());
  return compile(buffer.str(), path, options, out);
}

}  // namespace tunecast::rules
