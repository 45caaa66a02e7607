// Fuzzer findings and seeds as regression tests: every file under tests/regressions/<target>/
// and fuzz/seeds/<target>/ goes through the same code as the fuzz target (fuzz/*.cpp, linked in
// without libFuzzer's entry point), so under build-asan's sanitizers a fixed crash stays fixed.
// A finding's specific error message is checked by its own test case below.
#include <doctest.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "constraint_vm.h"
#include "test_data.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/model.h"
#include "tunecast/status.h"

namespace tunecast_fuzz {
int blob_one_input(const uint8_t* data, size_t size);
int rules_one_input(const uint8_t* data, size_t size);
int vm_one_input(const uint8_t* data, size_t size);
int json_one_input(const uint8_t* data, size_t size);
}  // namespace tunecast_fuzz

namespace {

std::vector<std::string> files_in(const std::string& relative) {
  std::vector<std::string> out;
  std::error_code error;
  const std::string dir = tunecast_test::source_path(relative);
  if (!std::filesystem::is_directory(dir, error)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int replay(const char* target, int (*one_input)(const uint8_t*, size_t), const std::vector<std::string>& dirs) {
  int count = 0;
  for (const std::string& dir : dirs) {
    for (const std::string& path : files_in(dir)) {
      CAPTURE(path);
      const std::vector<uint8_t> bytes = bytes_of(path);
      CHECK(one_input(bytes.data(), bytes.size()) == 0);
      ++count;
    }
  }
  MESSAGE(std::string(target) << ": " << count << " committed inputs replayed");
  return count;
}

}  // namespace

TEST_CASE("fuzz regressions and seeds replay cleanly through every fuzz target") {
  replay("fuzz_blob", tunecast_fuzz::blob_one_input, {"tests/regressions/blob"});
  CHECK(replay("fuzz_rules", tunecast_fuzz::rules_one_input,
               {"tests/regressions/rules", "weights/rules", "weights/encodings"}) > 0);
  CHECK(replay("fuzz_vm", tunecast_fuzz::vm_one_input, {"tests/regressions/vm", "fuzz/seeds/vm"}) > 0);
  CHECK(replay("fuzz_json", tunecast_fuzz::json_one_input, {"tests/regressions/json", "fuzz/seeds/keras"}) > 0);
}

// fuzz_blob, 2024 run 1 (on the KTN seed): a blob whose [long] constants vector starts 4 bytes off
// an 8-byte boundary passed the FlatBuffers verifier (it checks the 4-byte length prefix only), and
// IN_SET then read misaligned int64s (UBSan: "load of misaligned address"). vm::verify and
// Model::load now refuse misaligned int64 vectors (constants, vocabulary token values).
TEST_CASE("regression: misaligned int64 constants are refused by the bytecode verifier") {
  alignas(8) int64_t storage[3] = {0, 0, 0};
  const int64_t* misaligned = reinterpret_cast<const int64_t*>(reinterpret_cast<const char*>(storage) + 4);
  const int32_t code[] = {2, 1, 26, 0, 1};  // PUSH_INT 1, IN_SET 0 1
  const tunecast::vm::ProgramView view{code, 5, misaligned, 1};
  const tunecast::Status status = tunecast::vm::verify(view, 1, "constraint 0 'a in {1}'");
  CHECK(status.code() == tunecast::StatusCode::kCorruptModel);
  CHECK(std::string(status.message()) == "constraint 0 'a in {1}': constants are not 8-byte aligned in the blob");
  const tunecast::vm::ProgramView aligned{code, 5, storage, 1};
  CHECK(tunecast::vm::verify(aligned, 1, "ok").is_ok());
}

TEST_CASE("regression: fuzz_blob's misaligned-constants blob is refused at load") {
  const std::vector<uint8_t> bytes = bytes_of(tunecast_test::source_path("tests/regressions/blob/misaligned_constants.tcm"));
  REQUIRE(!bytes.empty());
  // Loaded from 8-byte aligned memory, as the runtime requires.
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  tunecast::Model model;
  const tunecast::Status status = tunecast::Model::load(aligned.data(), bytes.size(), &model);
  CHECK(status.code() == tunecast::StatusCode::kCorruptModel);
  CHECK_MESSAGE(std::string(status.message()).find("constants are not 8-byte aligned in the blob") != std::string::npos,
                status.message());
}

// fuzz_rules, 2026-11-23 (a 5-minute run on weights/rules): "{{{{..." inside an expression made
// the recursive-descent parser recurse until the stack overflowed (ASan: stack-overflow in
// Parser::unary). Parsing and every pass over an expression tree now stop at 200 levels. Found
// next by hand: a let chain that doubles at each step ran out of memory while inlining; an
// expression now stops at 100 000 nodes once lets are inlined.
TEST_CASE("regression: deeply nested or exponentially large rules expressions are refused, not a crash") {
  const std::string too_deep = "expression nested more than 200 levels deep";
  auto compile = [](const std::string& text) {
    tunecast::rules::CompiledRules rules;
    return tunecast::rules::compile(text, "deep.tcr", &rules);
  };
  const std::string head = "params a\nrequire ";
  for (const std::string& expression :
       {std::string(100000, '-') + "a", std::string(100000, '(') + "a" + std::string(100000, ')'),
        "a in " + std::string(100000, '{'), std::string(201, '!') + "a"}) {
    const tunecast::Status status = compile(head + expression + "\n");
    CHECK(status.code() == tunecast::StatusCode::kInvalidArgument);
    CHECK_MESSAGE(std::string(status.message()).find(too_deep) != std::string::npos, status.message());
  }
  // A long flat chain parses iteratively but builds a deep tree: refused by the tree's depth.
  std::string chain = "a";
  for (int i = 0; i < 100000; ++i) chain += " + a";
  const tunecast::Status flat = compile(head + chain + " > 0\n");
  CHECK_MESSAGE(std::string(flat.message()).find(too_deep) != std::string::npos, flat.message());
  // Deep but sane nesting still compiles.
  CHECK(compile(head + std::string(150, '(') + "a" + std::string(150, ')') + " > 0\n").is_ok());
  // Lets that double at each step: 2^39 nodes inlined (it exhausted memory), refused by size.
  std::string doubling = "params a\nlet l0 = a\n";
  for (int i = 1; i < 40; ++i) {
    const std::string previous = "l" + std::to_string(i - 1);
    doubling += "let l" + std::to_string(i) + " = " + previous + " + " + previous + "\n";
  }
  const tunecast::Status huge = compile(doubling + "require l39 > 0\n");
  CHECK_MESSAGE(std::string(huge.message()).find("nodes once lets are inlined") != std::string::npos, huge.message());
  const std::vector<uint8_t> finding =
      bytes_of(tunecast_test::source_path("tests/regressions/rules/nested_braces.tcr"));
  REQUIRE(!finding.empty());
  const tunecast::Status status = compile(std::string(finding.begin(), finding.end()));
  CHECK_MESSAGE(std::string(status.message()).find(too_deep) != std::string::npos, status.message());
}
