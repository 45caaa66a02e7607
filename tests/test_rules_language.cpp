// The rules language: compiler (parse, positions, errors) and the runtime's stack machine
// (semantics, verifier against hand-made malicious bytecode).
#include <doctest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "constraint_vm.h"
#include "test_data.h"
#include "tunecast/codegen/rules_compiler.h"

using namespace tunecast;

namespace {

vm::ProgramView view_of(const ir::Program& program) {
  return {program.code.data(), static_cast<uint32_t>(program.code.size()), program.constants.data(),
          static_cast<uint32_t>(program.constants.size())};
}

Problem make_problem(const char* text) {
  Problem problem;
  const Status status = parse_problem(text, &problem);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  return problem;
}

// Evaluates `expr` as a 1x1 feature on `problem`; returns false if evaluation fails.
bool eval_expr(const std::string& expr, const Problem& problem, int64_t* value) {
  rules::CompiledRules out;
  const Status status = rules::compile("input 1 x 1\nencode 0 0 raw " + expr + "\n", "expr", &out);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  REQUIRE(out.encoding.has_value());
  const ir::Program& program = out.encoding->features.at(0).program;
  REQUIRE(vm::verify(view_of(program), 0, "expr").is_ok());
  return vm::evaluate(view_of(program), problem, nullptr, value);
}

// parse_problem takes no negative values and no zero sizes; the semantics tests need them.
Problem with(Problem problem, ProblemField field, int64_t value) {
  problem.set(field, value);
  return problem;
}

int64_t eval_ok(const std::string& expr, const Problem& problem) {
  int64_t value = -999;
  INFO(expr);
  CHECK(eval_expr(expr, problem, &value));
  return value;
}

std::string compile_error(const std::string& text, const std::vector<std::string>& params = {}) {
  rules::CompiledRules out;
  const Status status = rules::compile_with_params(text, "t.tcr", params, &out);
  return status.is_ok() ? std::string("(compiled)") : std::string(status.message());
}

}  // namespace

TEST_CASE("rules: arithmetic follows C semantics on int64") {
  // Fields keep the compiler from folding, so the stack machine computes every value here.
  const Problem p = with(with(make_problem("dir=F,dtype=FP32,n=7,c=2,k=3,h=1,w=64,y=1,x=1"), ProblemField::kK, -3),
                         ProblemField::kH, 0);
  CHECK(eval_ok("n + c * k", p) == 1);
  CHECK(eval_ok("(n + c) * k", p) == -27);
  CHECK(eval_ok("k * n / c", p) == -10);  // -21 / 2 truncates toward zero
  CHECK(eval_ok("k * n % c", p) == -1);   // sign of the dividend
  CHECK(eval_ok("n % k", p) == 1);
  CHECK(eval_ok("-n", p) == -7);
  CHECK(eval_ok("ceil_div(n, c)", p) == 4);
  CHECK(eval_ok("ceil_div(-n, c)", p) == -3);
  CHECK(eval_ok("ceil_div(n, k)", p) == -2);
  CHECK(eval_ok("min(n, c, k)", p) == -3);
  CHECK(eval_ok("max(n, c, k)", p) == 7);
  CHECK(eval_ok("abs(k)", p) == 3);
  CHECK(eval_ok("is_pow2(w) + is_pow2(n) * 10 + is_pow2(h) * 100 + is_pow2(k) * 1000", p) == 1);
  CHECK(eval_ok("ilog2(w) * 100 + ilog2(n)", p) == 602);
  CHECK(eval_ok("n << c", p) == 28);
  CHECK(eval_ok("k >> 1", p) == -2);  // arithmetic shift
  CHECK(eval_ok("n > c && c >= 2 && k < 0 && k <= -3 && n != c && !(n == c)", p) == 1);
  CHECK(eval_ok("n in {1, 4, 7}", p) == 1);
  CHECK(eval_ok("c in {1, 4, 7}", p) == 0);
  CHECK(eval_ok("w in pow2[1..64]", p) == 1);
  CHECK(eval_ok("n in pow2[1..64]", p) == 0);
  CHECK(eval_ok("n in [c..w]", p) == 1);
  CHECK(eval_ok("k in [c..w]", p) == 0);
  CHECK(eval_ok("n in [7..7]", p) == 1);
  CHECK(eval_ok("n > c ? w : h", p) == 64);
  CHECK(eval_ok("n < c ? w : c > 5 ? 1 : 2", p) == 2);  // right-associative
  CHECK(eval_ok("dir == F && dtype == FP32 && layout == NCHW", p) == 1);
  CHECK(eval_ok("dir == B || dir == W", p) == 0);
  CHECK(eval_ok("n && w", p) == 1);  // && and || yield 0/1
  CHECK(eval_ok("0x10 + 1", p) == 17);
  CHECK(eval_ok("9223372036854775807", p) == std::numeric_limits<int64_t>::max());
}

TEST_CASE("rules: folded constants agree with the stack machine") {
  const Problem p = with(make_problem("dir=F,dtype=FP32,n=7,c=2,k=3,h=1,w=64,y=1,x=1"), ProblemField::kH, 0);
  CHECK(eval_ok("-21 / 2", p) == -10);
  CHECK(eval_ok("-21 % 2", p) == -1);
  CHECK(eval_ok("ceil_div(-7, 2)", p) == -3);
  CHECK(eval_ok("min(3, 1, 2) + max(3, 1, 2) * 10", p) == 31);
  rules::CompiledRules out;
  REQUIRE(rules::compile("input 1 x 1\nencode 0 0 raw 2 * 3 + 1\n", "t", &out).is_ok());
  const ir::Program& program = out.encoding->features.at(0).program;
  CHECK(program.code == std::vector<int32_t>{vm::kPushInt, 7});
}

TEST_CASE("rules: evaluation failures make the result invalid") {
  const Problem p = with(with(make_problem("dir=F,dtype=FP32,n=7,c=1,k=1,h=4611686018427387904,w=64,y=1,x=1"),
                              ProblemField::kK, -1),
                         ProblemField::kC, 0);
  int64_t value = 0;
  CHECK_FALSE(eval_expr("n / c", p, &value));
  CHECK_FALSE(eval_expr("n % c", p, &value));
  CHECK_FALSE(eval_expr("ceil_div(n, c)", p, &value));
  CHECK_FALSE(eval_expr("h * 2", p, &value));
  CHECK_FALSE(eval_expr("h + h", p, &value));
  CHECK_FALSE(eval_expr("-h - h - h", p, &value));
  CHECK_FALSE(eval_expr("h << 1", p, &value));
  CHECK_FALSE(eval_expr("n << 64", p, &value));
  CHECK_FALSE(eval_expr("n >> k", p, &value));
  CHECK_FALSE(eval_expr("ilog2(c)", p, &value));
  CHECK_FALSE(eval_expr("(-h - h) / k", p, &value));  // INT64_MIN / -1
  CHECK(eval_ok("(-h - h) % k", p) == 0);
  // Short-circuit: the failing operand is never evaluated.
  CHECK(eval_ok("c == 0 || n / c > 1", p) == 1);
  CHECK(eval_ok("c != 0 && n / c > 1", p) == 0);
  CHECK(eval_ok("c == 0 ? 5 : n / c", p) == 5);
  CHECK_FALSE(eval_expr("c != 0 ? 5 : n / c", p, &value));
}

TEST_CASE("rules: constraint positions come from the parameters referenced, through lets") {
  rules::CompiledRules out;
  const char* text =
      "params a, b, c_mult, last\n"
      "let e = dtype == FP32 ? 1 : 2\n"
      "let uses_last = last * 2\n"
      "let sum(x, y) = x + y + b\n"
      "require c % e == 0\n"           // no params: position 0
      "require a in [1..4]\n"          // 0
      "require b % e == 0\n"           // 1
      "require uses_last < 100\n"      // 3 (through a let)
      "require sum(a, 1) < 9\n"        // 1 (through a let's body)
      "require c_mult <= 4 ||\n"       // 2 (continued line)
      "        a == 1\n";
  const Status status = rules::compile(text, "pos.tcr", &out);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  REQUIRE(out.constraints.size() == 6);
  CHECK(out.params == std::vector<std::string>{"a", "b", "c_mult", "last"});
  CHECK(out.constraints[0].position == 0);
  CHECK(out.constraints[1].position == 0);
  CHECK(out.constraints[2].position == 1);
  CHECK(out.constraints[3].position == 3);
  CHECK(out.constraints[4].position == 1);
  CHECK(out.constraints[5].position == 2);
  CHECK(out.constraints[5].text == "c_mult <= 4 || a == 1");
  CHECK(out.fields_used == std::vector<std::string>{"dtype", "c"});
  CHECK_FALSE(out.encoding.has_value());

  // Every program verifies with exactly the parameters known at its position.
  for (const ir::Constraint& c : out.constraints) {
    CHECK(vm::verify(view_of(c.program), static_cast<int>(c.position) + 1, c.text.c_str()).is_ok());
    if (c.position > 0) CHECK_FALSE(vm::verify(view_of(c.program), static_cast<int>(c.position), "x").is_ok());
  }

  const Problem p = make_problem("dir=F,dtype=FP16,n=1,c=4,k=4,h=1,w=1,y=1,x=1");
  const int64_t params[] = {2, 4, 8, 60};
  int64_t result = 0;
  REQUIRE(vm::evaluate(view_of(out.constraints[4].program), p, params, &result));
  CHECK(result == 1);  // 2 + 1 + 4 < 9
  REQUIRE(vm::evaluate(view_of(out.constraints[5].program), p, params, &result));
  CHECK(result == 0);  // 8 > 4 and a != 1
}

TEST_CASE("rules: options, constant requirements and params from the model") {
  const char* text =
      "option reading = 0\n"
      "let size = reading == 0 ? h : reading == 1 ? 2 * h : 1 / reading\n"
      "require reading in [0..2]\n"  // constant true: dropped
      "require k_mult * size < 100\n";
  rules::CompileOptions options;
  options.params = {"k_mult"};
  rules::CompiledRules out;
  REQUIRE(rules::compile(text, "opt.tcr", options, &out).is_ok());
  REQUIRE(out.constraints.size() == 1);
  CHECK(out.params == options.params);
  const Problem p = make_problem("dir=F,dtype=FP32,n=1,c=1,k=1,h=30,w=1,y=1,x=1");
  const int64_t params[] = {3};
  int64_t result = 0;
  REQUIRE(vm::evaluate(view_of(out.constraints[0].program), p, params, &result));
  CHECK(result == 1);
  options.defines["reading"] = 1;
  REQUIRE(rules::compile(text, "opt.tcr", options, &out).is_ok());
  REQUIRE(vm::evaluate(view_of(out.constraints[0].program), p, params, &result));
  CHECK(result == 0);
  options.defines["reading"] = 7;
  const Status status = rules::compile(text, "opt.tcr", options, &out);
  CHECK(std::string(status.message()) == "opt.tcr:3:1: this requirement is always false: reading in [0..2]");
}

TEST_CASE("rules: compile errors name file:line:col and the problem") {
  CHECK(compile_error("params k_mult\nrequire kmult > 1\n") == "t.tcr:2:9: unknown name 'kmult'");
  CHECK(compile_error("params a, b, a\n") == "t.tcr:1:14: duplicate param 'a'");
  {  // a constraint's parameters are a bit mask: more than the runtime's 16 are refused, not shifted
    std::string many = "params p0";
    for (int i = 1; i <= 40; ++i) many += ", p" + std::to_string(i);
    CHECK(compile_error(many + "\nrequire p40 > 0\n").find("at most 16 params (tunecast::kMaxParameters)") !=
          std::string::npos);
  }
  CHECK(compile_error("params a\nrequire a / 0 == 1\n") == "t.tcr:2:13: division by literal zero");
  CHECK(compile_error("params a\nrequire a % 0 == 1\n") == "t.tcr:2:13: division by literal zero");
  CHECK(compile_error("params a\nrequire ceil_div(a, 0) == 1\n") == "t.tcr:2:21: division by literal zero");
  CHECK(compile_error("params a\nlet zero = 2 - 2\nrequire a / zero == 1\n") ==
        "t.tcr:3:11: division by zero (the divisor is the constant 0)");
  CHECK(compile_error("params a\nrequire a < later\nlet later = 4\n") ==
        "t.tcr:2:13: let 'later' used before its definition (line 3)");
  CHECK(compile_error("params a\nrequire a + {1, 2} > 0\n") ==
        "t.tcr:2:13: a set is not a number (sets only follow 'in')");
  CHECK(compile_error("params a\nlet s = {1, 2}\nrequire s > 0\n") ==
        "t.tcr:2:9: a set is not a number (sets only follow 'in')");
  CHECK(compile_error("params a\nlet s = {1, 2}\nrequire a in s\n") == "(compiled)");
  CHECK(compile_error("params a\nrequire a in 4\n") ==
        "t.tcr:2:14: expected a set {a, b, ...}, pow2[lo..hi] or a range [lo..hi] after 'in'");
  CHECK(compile_error("params a\nrequire a in {a, 2}\n") == "t.tcr:2:15: set elements must be constants");
  CHECK(compile_error("params a\nrequire dir == FP32\n") ==
        "t.tcr:2:16: this symbol is a value of 'dtype', compared with 'dir'");
  CHECK(compile_error("params a\nrequire a > 1.5\n") ==
        "t.tcr:2:13: floating-point literal '1.5' in an integer expression");
  CHECK(compile_error("params a\nrequire (a > 1\n") == "t.tcr:3:1: expected ')' to close '(', found end of line");
  CHECK(compile_error("params a\nrequire a >\n") == "t.tcr:3:1: expected an expression, found end of file");
  CHECK(compile_error("params a\nrequire a > 1 2\n") ==
        "t.tcr:2:15: unexpected '2' after the end of the statement");
  CHECK(compile_error("params a\nrequre a > 1\n") ==
        "t.tcr:2:1: expected a statement (kernel, field, param, params, let, option, require, applies, feature, input, encode, range), found 'requre'");
  CHECK(compile_error("params a, c\n") == "t.tcr:1:11: param 'c' clashes with a problem field of the same name");
  CHECK(compile_error("params a\nlet f(x) = x + a\nrequire f(1, 2) > 0\n") ==
        "t.tcr:3:9: let 'f' takes 1 arguments, 2 given");
  CHECK(compile_error("params a\nrequire min(a) > 0\n") == "t.tcr:2:9: min() takes at least 2 arguments, 1 given");
  CHECK(compile_error("params a\nrequire a $ 2\n") == "t.tcr:2:11: unexpected character '$'");
  CHECK(compile_error("params a\nrequire a \xff 2\n") == "t.tcr:2:11: unexpected character '\\xff'");
  CHECK(compile_error("params a\nrequire a == 99999999999999999999\n") ==
        "t.tcr:2:14: integer literal '99999999999999999999' out of int64 range");
  // Parameter names from the model.
  CHECK(compile_error("params a, b\nrequire b > a\n", {"a", "b"}) == "(compiled)");
  CHECK(compile_error("require b > a\n", {"a", "b"}) == "(compiled)");
  CHECK(compile_error("params a, b\n", {"a", "b", "q2"}) ==
        "t.tcr:1:1: params statement lists 2 parameters but the model has 3");
  CHECK(compile_error("params a, q\n", {"a", "b"}) == "t.tcr:1:11: param 1 is 'q' here but 'b' in the model");
  // Encodings.
  CHECK(compile_error("encode 0 0 raw n\n") == "t.tcr:1:1: encode needs an earlier 'input ROWS x COLS' statement");
  CHECK(compile_error("params a\ninput 2 x 2\nencode 0 0 raw a\n") ==
        "t.tcr:3:16: encode expressions cannot read tuning parameters ('a')");
  CHECK(compile_error("input 2 x 2\nencode 0 1 onehot 2 dir\n") ==
        "t.tcr:2:10: column 1 (one-hot width 2) outside the input's 2 columns");
  CHECK(compile_error("input 2 x 2\nencode 0 0 raw n\nencode 0 0 log2 c\n") ==
        "t.tcr:3:10: cell [0][0] is already encoded at line 2");
  CHECK(compile_error("input 2 x 2\nencode 0 0 standardize 1 0 n\n") ==
        "t.tcr:2:26: standard deviation must not be 0");
  CHECK(compile_error("range c 1 2048\n") == "t.tcr:1:1: range needs an 'input' statement");
  // Applicability: the problem alone.
  CHECK(compile_error("params a\nlet twice = 2 * a\napplies c > 0 && twice < 8\n") ==
        "t.tcr:3:9: applies conditions read the problem alone ('a' is a tuning parameter; use require)");
  CHECK(compile_error("params a\napplies 1 == 2\n") == "t.tcr:2:1: this kernel never applies: 1 == 2");
  CHECK(compile_error("params a\napplies y == 1 && c % 2 == 0\n") == "(compiled)");
}

TEST_CASE("rules: applies statements compile to problem-only conditions, in order") {
  rules::CompiledRules out;
  const Status status = rules::compile("params a\nlet e = dtype == FP16 ? 2 : 1\napplies 1 == 1\n"
                                       "applies y == 1 && x == 1\napplies c % e == 0\nrequire a <= c\n",
                                       "t.tcr", &out);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  REQUIRE(out.applicability.size() == 2);  // the always-true one leaves nothing to check
  CHECK(out.applicability[0].text == "y == 1 && x == 1");
  CHECK(out.applicability[1].text == "c % e == 0");
  CHECK(out.constraints.size() == 1);
  auto holds = [&](size_t i, const char* problem_text) {
    Problem problem;
    REQUIRE(parse_problem(problem_text, &problem).is_ok());
    const vm::ProgramView view = view_of(out.applicability[i].program);
    REQUIRE(vm::verify(view, 0, "applies").is_ok());  // reads no parameter
    int64_t result = 0;
    return vm::evaluate(view, problem, nullptr, &result) && result != 0;
  };
  CHECK(holds(0, "n=1,c=3,k=1,h=1,w=1,y=1,x=1"));
  CHECK_FALSE(holds(0, "n=1,c=3,k=1,h=1,w=1,y=3,x=3"));
  CHECK(holds(1, "dtype=FP32,n=1,c=3,k=1,h=1,w=1"));
  CHECK_FALSE(holds(1, "dtype=FP16,n=1,c=3,k=1,h=1,w=1"));
}

TEST_CASE("rules: feature encodings") {
  rules::CompiledRules out;
  const char* text =
      "input 3x4\n"
      "encode 0 0 raw dtype == FP32 ? 2 : 1\n"
      "encode 0 1 log2 n\n"
      "encode 1 0 onehot 3 dir   # columns 0..2\n"
      "encode 2 3 standardize 12.5 -3e-1 c\n"
      "range c 1 2048\n"
      "range n -1 512\n";
  const Status status = rules::compile(text, "enc.tce", &out);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  REQUIRE(out.encoding.has_value());
  const ir::Encoding& e = *out.encoding;
  CHECK(e.rows == 3);
  CHECK(e.cols == 4);
  REQUIRE(e.features.size() == 4);
  CHECK(e.features[1].transform == ir::FeatureTransform::Log2);
  CHECK(e.features[2].transform == ir::FeatureTransform::OneHot);
  CHECK(e.features[2].width == 3);
  CHECK(e.features[2].text == "dir");
  CHECK(e.features[3].row == 2);
  CHECK(e.features[3].col == 3);
  CHECK(e.features[3].mean == doctest::Approx(12.5));
  CHECK(e.features[3].std == doctest::Approx(-0.3));
  CHECK(e.required_fields == std::vector<std::string>{"dir", "dtype", "n", "c"});
  REQUIRE(e.ranges.size() == 2);
  CHECK(e.ranges[1].field == "n");
  CHECK(e.ranges[1].min == -1);
  CHECK(e.ranges[1].max == 512);
  CHECK(out.constraints.empty());
}

TEST_CASE("rules: the gfx908 ConvAsm1x1U encoding is MIOpen's diagonal") {
  rules::CompiledRules out;
  const Status status =
      rules::compile_file(tunecast_test::source_path("weights/encodings/gfx908_ConvAsm1x1U.tce"), {}, &out);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  REQUIRE(out.encoding.has_value());
  CHECK(out.encoding->rows == 8);
  CHECK(out.encoding->cols == 8);
  auto matrix = [&](const Problem& problem) {
    std::vector<int64_t> m(64, 0);
    for (const ir::FeatureEncoding& f : out.encoding->features) {
      CHECK(f.transform == ir::FeatureTransform::Raw);
      int64_t value = 0;
      REQUIRE(vm::evaluate(view_of(f.program), problem, nullptr, &value));
      m[f.row * 8 + f.col] = value;
    }
    return m;
  };
  const std::vector<int64_t> forward = matrix(make_problem("dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=14,y=1,x=1"));
  CHECK(forward == std::vector<int64_t>{2, 0, 0, 0, 0, 0, 0, 0,   0, 1, 0, 0, 0, 0, 0, 0,  //
                                        0, 0, 0, 0, 0, 0, 0, 0,   0, 0, 0, 64, 0, 0, 0, 0,  //
                                        0, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0,  //
                                        0, 0, 0, 0, 0, 0, 14, 0,  0, 0, 0, 0, 0, 0, 0, 16});
  const std::vector<int64_t> backward = matrix(make_problem("dir=B,dtype=FP16,n=16,c=64,k=128,h=28,w=14,y=1,x=1"));
  CHECK(backward == std::vector<int64_t>{1, 0, 0, 0, 0, 0, 0, 0,   0, 0, 0, 0, 0, 0, 0, 0,  //
                                         0, 0, 1, 0, 0, 0, 0, 0,   0, 0, 0, 128, 0, 0, 0, 0,  //
                                         0, 0, 0, 0, 64, 0, 0, 0,  0, 0, 0, 0, 0, 28, 0, 0,  //
                                         0, 0, 0, 0, 0, 0, 14, 0,  0, 0, 0, 0, 0, 0, 0, 16});
}

TEST_CASE("rules: the shipped rule files compile and verify") {
  for (const char* kernel : {"ConvAsm1x1U", "ConvOclDirectFwd1x1", "ConvAsmBwdWrW1x1", "ConvAsmBwdWrW3x3"}) {
    INFO(kernel);
    rules::CompiledRules out;
    const Status status =
        rules::compile_file(tunecast_test::source_path(std::string("weights/rules/") + kernel + ".tcr"), {}, &out);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    CHECK_FALSE(out.params.empty());
    CHECK_FALSE(out.constraints.empty());
    for (const ir::Constraint& c : out.constraints) {
      CHECK(c.position < out.params.size());
      const Status verified = vm::verify(view_of(c.program), static_cast<int>(c.position) + 1, c.text.c_str());
      CHECK_MESSAGE(verified.is_ok(), std::string(verified.message()));
    }
  }
}

// ---- verifier ------------------------------------------------------------------------------------

namespace {

std::string verify_error(const std::vector<int32_t>& code, const std::vector<int64_t>& constants = {},
                         int readable_params = 2) {
  const vm::ProgramView view{code.data(), static_cast<uint32_t>(code.size()), constants.data(),
                             static_cast<uint32_t>(constants.size())};
  const Status status = vm::verify(view, readable_params, "constraint 3 'k_mult % e == 0'");
  if (status.is_ok()) return "(ok)";
  CHECK(status.code() == StatusCode::kCorruptModel);
  return status.message();
}

}  // namespace

TEST_CASE("rules: the verifier accepts well-formed bytecode") {
  using namespace vm;
  CHECK(verify_error({kPushInt, 1}) == "(ok)");
  CHECK(verify_error({kLoadParam, 1, kPushConst, 0, kMod, kPushInt, 0, kEq}, {2}) == "(ok)");
  // c ? a : b, a && b, a || b; a jump may land on the end.
  CHECK(verify_error({kLoadField, 3, kJumpIfFalse, 4, kPushInt, 1, kJump, 2, kPushInt, 2}) == "(ok)");
  CHECK(verify_error({kLoadParam, 0, kAndThen, 3, kLoadParam, 1, kToBool}) == "(ok)");
  CHECK(verify_error({kLoadParam, 0, kOrElse, 3, kLoadParam, 1, kToBool}) == "(ok)");
  CHECK(verify_error({kLoadParam, 0, kInSet, 0, 3}, {1, 4, 8}) == "(ok)");
  CHECK(verify_error({kLoadParam, 0, kInSet, 3, 0}, {1, 4, 8}) == "(ok)");  // empty set at the end
}

TEST_CASE("rules: the verifier rejects malicious bytecode with readable messages") {
  using namespace vm;
  const std::string name = "constraint 3 'k_mult % e == 0': ";
  CHECK(verify_error({}) == name + "empty bytecode");
  CHECK(verify_error({0}) == name + "unknown opcode 0 at word 0");
  CHECK(verify_error({kPushInt, 1, 999}) == name + "unknown opcode 999 at word 2");
  CHECK(verify_error({-5}) == name + "unknown opcode -5 at word 0");
  CHECK(verify_error({kPushConst, 2}, {1, 2}) == name + "constant index 2 out of range (2 constants) at word 0");
  CHECK(verify_error({kPushConst, -1}, {1, 2}) == name + "constant index -1 out of range (2 constants) at word 0");
  CHECK(verify_error({kLoadField, kProblemFieldCount}) ==
        name + "problem field " + std::to_string(kProblemFieldCount) + " out of range (" +
            std::to_string(kProblemFieldCount) + " fields) at word 0");
  CHECK(verify_error({kLoadField, -1}).find("problem field -1 out of range") != std::string::npos);
  CHECK(verify_error({kLoadParam, 2}) == name + "reads parameter 2 but only positions 0..1 are known here (word 0)");
  CHECK(verify_error({kLoadParam, 0}, {}, 0) ==
        name + "reads parameter 0, but no parameter is known here (word 0)");
  CHECK(verify_error({kLoadParam, 0, kInSet, 2, 2}, {1, 4, 8}) ==
        name + "IN_SET constants [2, 4) out of range (3 constants) at word 2");
  CHECK(verify_error({kLoadParam, 0, kInSet, 0, -1}, {1}).find("IN_SET constants [0, -1) out of range") !=
        std::string::npos);
  CHECK(verify_error({kLoadParam, 0, kInSet, 0x7fffffff, 0x7fffffff}, {1}).find("out of range") != std::string::npos);
  // Control flow.
  CHECK(verify_error({kPushInt, 1, kJump, -4, kPushInt, 2}) == name + "backward jump (offset -4) at word 2");
  CHECK(verify_error({kPushInt, 1, kJumpIfFalse, -2, kPushInt, 1}) == name + "backward jump (offset -2) at word 2");
  CHECK(verify_error({kPushInt, 1, kJump, 5}) == name + "jump at word 2 leaves the code (target 9, size 4)");
  CHECK(verify_error({kPushInt, 1, kJumpIfFalse, 0x7fffffff, kPushInt, 1}).find("leaves the code") !=
        std::string::npos);
  CHECK(verify_error({kPushInt, 0, kJumpIfFalse, 1, kPushInt, 5}) ==
        name + "a jump lands inside the operands of PUSH_INT at word 4");
  CHECK(verify_error({kPushInt, 1, kJump, 2, kPushInt, 2}) == name + "unreachable instruction at word 4");
  // Stack.
  CHECK(verify_error({kAdd}) == name + "stack underflow at word 0 (ADD needs 2 values, has 0)");
  CHECK(verify_error({kPushInt, 1, kAdd}) == name + "stack underflow at word 2 (ADD needs 2 values, has 1)");
  CHECK(verify_error({kPushInt, 1, kPushInt, 2, kInRange}) ==
        name + "stack underflow at word 4 (IN_RANGE needs 3 values, has 2)");
  CHECK(verify_error({kJumpIfFalse, 0, kPushInt, 1}) ==
        name + "stack underflow at word 0 (JUMP_IF_FALSE needs 1 values, has 0)");
  std::vector<int32_t> deep;
  for (int i = 0; i <= kMaxStack; ++i) deep.insert(deep.end(), {kPushInt, i});
  for (int i = 0; i < kMaxStack; ++i) deep.push_back(kAdd);
  CHECK(verify_error(deep) == name + "stack overflow at word 64 (more than 32 values)");
  deep.erase(deep.begin(), deep.begin() + 2);
  deep.pop_back();
  CHECK(verify_error(deep) == "(ok)");  // exactly kMaxStack values is fine
  CHECK(verify_error({kPushInt, 1, kPushInt, 2}) == name + "leaves 2 values on the stack, must leave exactly 1");
  CHECK(verify_error({kPushInt, 1, kJumpIfFalse, 0}) == name + "leaves 0 values on the stack, must leave exactly 1");
  // Merging paths: `c ? a : (b, b2)` leaves 1 value on one path and 2 on the other.
  CHECK(verify_error({kLoadField, 3, kJumpIfFalse, 4, kPushInt, 1, kJump, 4, kPushInt, 2, kPushInt, 3}) ==
        name + "stack depths 1 and 2 meet at the end");
  CHECK(verify_error({kLoadField, 3, kJumpIfFalse, 2, kPushInt, 1, kPushInt, 2}) ==
        name + "stack depth 0 from a jump and 1 from the previous instruction meet at word 6");
  CHECK(verify_error({kLoadField, 3, kLoadField, 4, kAndThen, 2, kJumpIfFalse, 0, kPushInt, 1}) ==
        name + "stack depths 2 and 0 meet at word 8 (jump at word 6)");
  CHECK(verify_error({kPushInt, 1, kPushInt, 2, kJumpIfFalse, 4, kJumpIfFalse, 2, kPushInt, 3}) ==
        name + "stack depths 1 and 0 meet at word 10 (jump at word 6)");
  // Truncated operands.
  CHECK(verify_error({kPushInt}) == name + "PUSH_INT at word 0 is truncated (needs 1 operand words)");
  CHECK(verify_error({kLoadParam, 0, kInSet, 0}, {1}) == name + "IN_SET at word 2 is truncated (needs 2 operand words)");
  CHECK(verify_error({kPushInt, 1, kJumpIfFalse}) ==
        name + "JUMP_IF_FALSE at word 2 is truncated (needs 1 operand words)");
  // Sizes.
  std::vector<int32_t> huge(kMaxCodeLength + 1, kNot);
  huge[0] = kPushInt;
  CHECK(verify_error(huge) == name + "bytecode has 8193 words, more than the limit 8192");
  const std::vector<int32_t> push_const{kPushConst, 0};
  const vm::ProgramView no_constants{push_const.data(), 2, nullptr, 3};
  CHECK_FALSE(vm::verify(no_constants, 0, "x").is_ok());
}

TEST_CASE("rules: every mutation of a compiled program either verifies or is rejected, never crashes") {
  rules::CompiledRules out;
  REQUIRE(rules::compile_file(tunecast_test::source_path("weights/rules/ConvAsm1x1U.tcr"), {}, &out).is_ok());
  const Problem p = make_problem("dir=B,dtype=FP16,n=16,c=64,k=128,h=28,w=28,y=1,x=1");
  const int64_t params[8] = {1, 8, 4, 16, 2, 2, 1, 4};
  int verified = 0;
  int rejected = 0;
  for (const ir::Constraint& c : out.constraints) {
    for (size_t i = 0; i < c.program.code.size(); ++i) {
      for (int32_t delta : {-1, 1, 7, -100, 1 << 20}) {
        std::vector<int32_t> code = c.program.code;
        code[i] += delta;
        const vm::ProgramView view{code.data(), static_cast<uint32_t>(code.size()), c.program.constants.data(),
                                   static_cast<uint32_t>(c.program.constants.size())};
        if (vm::verify(view, static_cast<int>(c.position) + 1, "mutant").is_ok()) {
          int64_t result = 0;
          (void)vm::evaluate(view, p, params, &result);  // must not crash (run under ASan in CI)
          ++verified;
        } else {
          ++rejected;
        }
      }
    }
  }
  CHECK(rejected > 0);
  CHECK(verified > 0);
}

// ---- domains from constant ranges (a black-box review: the `params` form took no domain, silently) -

namespace {

std::string domain_error(const std::string& text) {
  rules::CompiledRules out;
  const Status status = rules::compile(text, "d.tcr", &out);
  if (status.is_ok()) return "(ok)";
  CHECK(status.code() == StatusCode::kInvalidArgument);
  return status.message();
}

}  // namespace

TEST_CASE("rules: a require range too wide or empty for a domain is refused as a param domain is") {
  // The `param` form's error, also for the `params` form's `require p in [lo..hi]`.
  CHECK(domain_error("param a in [4..1]\n") == "d.tcr:1:9: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  CHECK(domain_error("param a in [1..100000]\n") ==
        "d.tcr:1:9: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  CHECK(domain_error("params a, b\nrequire a in [1..100000]\n") ==
        "d.tcr:2:1: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  CHECK(domain_error("params read_size\nrequire read_size in [4..1]\n") ==
        "d.tcr:2:1: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  // An empty range is no domain whatever else the parameter has.
  CHECK(domain_error("param a in {1, 2}\nrequire a in [4..1]\n") ==
        "d.tcr:2:1: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  // Bounds at the ends of int64: no overflow in the count.
  CHECK(domain_error("params a\nrequire a in [-9223372036854775807..9223372036854775807]\n") ==
        "d.tcr:2:1: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  // Compiled for a model (its vocabulary names the parameters and gives their values): a wide range
  // is a rule, not a domain; an empty one is still refused.
  {
    rules::CompiledRules out;
    rules::CompileOptions options;
    options.params = {"a", "b"};
    REQUIRE(rules::compile("params a, b\nrequire b in [1..5000]\n", "d.tcr", options, &out).is_ok());
    CHECK(out.constraints.size() == 1);
    CHECK(out.domains[1].empty());
    const Status status = rules::compile("params a, b\nrequire b in [5..1]\n", "d.tcr", options, &out);
    CHECK(std::string(status.message()) == "d.tcr:2:1: a domain [lo..hi] needs lo <= hi and at most 4096 values");
  }

  // A wide range beside a domain from elsewhere restricts it, in either order; two wide ranges that
  // narrow each other to a domain's size give it; nothing left is the usual error.
  rules::CompiledRules out;
  REQUIRE(rules::compile("params a\nrequire a in [0..100000]\nrequire a in {1, 2, 200000}\n", "d.tcr", &out).is_ok());
  CHECK(out.domains[0] == std::vector<int64_t>{1, 2});
  REQUIRE(rules::compile("params a\nrequire a in {1, 2, 200000}\nrequire a in [0..100000]\n", "d.tcr", &out).is_ok());
  CHECK(out.domains[0] == std::vector<int64_t>{1, 2});
  REQUIRE(rules::compile("param a in [1..4]\nrequire a in [3..100000]\n", "d.tcr", &out).is_ok());
  CHECK(out.domains[0] == std::vector<int64_t>{3, 4});
  CHECK(out.constraints.size() == 1);  // still a rule too
  REQUIRE(rules::compile("params a\nrequire a in [0..100000]\nrequire a in [99998..200000]\n", "d.tcr", &out).is_ok());
  CHECK(out.domains[0] == std::vector<int64_t>{99998, 99999, 100000});
  CHECK(domain_error("param a in [1..4]\nrequire a in [5..100000]\n") ==
        "d.tcr:2:1: parameter 'a' has no value left in its domain");
  CHECK(domain_error("params a\nrequire a in [0..100000]\nrequire a in [200000..300000]\n") ==
        "d.tcr:3:1: parameter 'a' has no value left in its domain");
  // A range that is no constant is a rule, not a domain.
  REQUIRE(rules::compile("params a\nrequire a in [1..n]\n", "d.tcr", &out).is_ok());
  CHECK(out.domains[0].empty());
  // A parameter no range or set bounds keeps no domain (a model's vocabulary gives its values).
  REQUIRE(rules::compile("params a, b\nrequire a in [1..8]\nrequire b > 0\n", "d.tcr", &out).is_ok());
  CHECK(out.domains[0].size() == 8);
  CHECK(out.domains[1].empty());
}

TEST_CASE("rules: every shipped definition compiles with the domains its constant requires give") {
  for (const char* kernel : {"ConvAsm1x1U", "ConvAsmBwdWrW1x1", "ConvAsmBwdWrW3x3", "ConvOclDirectFwd1x1",
                             "TritonGemm1x1", "TritonGemmSplitK"}) {
    INFO(kernel);
    rules::CompiledRules out;
    const Status status =
        rules::compile_file(tunecast_test::source_path(std::string("weights/rules/") + kernel + ".tcr"), {}, &out);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    REQUIRE(out.domains.size() == out.params.size());
  }
  rules::CompiledRules wrw1x1;
  REQUIRE(rules::compile_file(tunecast_test::source_path("weights/rules/ConvAsmBwdWrW1x1.tcr"), {}, &wrw1x1).is_ok());
  CHECK(wrw1x1.domains.back() == std::vector<int64_t>{0, 1, 2, 3, 4});  // require data_prefetch in [0..4]
  rules::CompiledRules wrw3x3;
  REQUIRE(rules::compile_file(tunecast_test::source_path("weights/rules/ConvAsmBwdWrW3x3.tcr"), {}, &wrw3x3).is_ok());
  CHECK(wrw3x3.domains.back() == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});  // require n_per_group in [1..8]
}
