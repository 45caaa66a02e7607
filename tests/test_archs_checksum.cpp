// Issue 24, items 2 and 7: architectures by name (any gfx name, target features dropped, covered or
// not by a model), the weights checksum (recorded by the compiler, checked on request), and no
// build paths in metadata.
#include <doctest.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/predict.h"
#include "tunecast/problem.h"

using namespace tunecast;
using tunecast_test::CompiledModel;
using tunecast_test::compile_model;
using tunecast_test::tiny_seq2seq_with_rules;

namespace {

bool ok(const Status& status) { return status.is_ok(); }

int64_t code_of(const char* name) {
  int64_t code = -1;
  REQUIRE_MESSAGE(arch_code(name, &code), name);
  return code;
}

std::string name_of(int64_t code) {
  char name[kMaxArchNameLength + 1];
  return format_arch(code, name, sizeof name) ? name : "<none>";
}

// Marks Model table field `index` absent in a finished blob (its vtable entry 0), as a blob written
// before the field existed reads: archs is field 9, weights_fnv1a64 field 10.
void drop_model_field(uint8_t* blob, int index) {
  uint32_t root;
  std::memcpy(&root, blob, 4);
  int32_t to_vtable;
  std::memcpy(&to_vtable, blob + root, 4);
  uint8_t* vtable = blob + root - to_vtable;
  uint16_t vtable_size;
  std::memcpy(&vtable_size, vtable, 2);
  if (4 + 2 * index + 2 <= vtable_size) std::memset(vtable + 4 + 2 * index, 0, 2);
}

}  // namespace

TEST_CASE("architectures: any name, features dropped, the six fixed names keep their codes") {
  const char* fixed[] = {"gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030"};
  for (int i = 0; i < 6; ++i) {
    CHECK(code_of(fixed[i]) == i);
    CHECK(name_of(i) == fixed[i]);
  }
  CHECK(code_of("gfx90a:sramecc+:xnack-") == kGfx90a);
  CHECK(code_of("GFX906") == kGfx906);
  for (const char* name : {"gfx1100", "gfx1201", "gfx950", "gfx10-3-generic", "gfx9-4-generic", "h100",
                           "mi300x-oam", "gfx"}) {
    CAPTURE(name);
    const int64_t code = code_of(name);
    CHECK(code >= kArchNameCodeBase);
    CHECK(name_of(code) == name);
    CHECK(std::string(problem_symbol_name(ProblemField::kArch, code)) == name);
  }
  CHECK(code_of("gfx1100:xnack+") == code_of("gfx1100"));
  // The trainer's copy (tools/tunecast_train/data.py arch_code) gives the same codes.
  CHECK(code_of("gfx1100") == 251463368329775808ll);
  CHECK(code_of("h100") == 113342707674034880ll);
  CHECK(code_of("gfx10-3-generic") == 728599116439351616ll);
  CHECK(code_of("gfx1100") != code_of("gfx1101"));
  CHECK(code_of("gfx90c") != code_of("gfx90a"));
  int64_t code = 0;
  CHECK_FALSE(arch_code("", &code));
  CHECK_FALSE(arch_code(":xnack-", &code));
  // Target features are a name and + or -, as LLVM's target IDs write them.
  CHECK_FALSE(arch_code("gfx906:bogus", &code));
  CHECK_FALSE(arch_code("gfx90a:sramecc+:", &code));
  CHECK_FALSE(arch_code("gfx90a:+", &code));
  CHECK_FALSE(arch_code("gfx90a:xn$ck-", &code));
  CHECK(code_of("gfx90a:xnack+ ") == kGfx90a);
  CHECK_FALSE(arch_code("gfx9$0", &code));
  CHECK_FALSE(arch_code("gfx123456789012", &code));  // 12 characters after "gfx"
  CHECK_FALSE(format_arch(7, nullptr, 0));           // between the fixed codes and the names
  char name[kMaxArchNameLength + 1];
  CHECK_FALSE(format_arch(-1, name, sizeof name));

  Problem p;
  REQUIRE(ok(parse_problem("dir=F,dtype=FP32,n=1,c=8,k=8,h=7,w=7,y=1,x=1,arch=gfx90a:sramecc+:xnack-", &p)));
  CHECK(p.get(ProblemField::kArch) == kGfx90a);
  REQUIRE(ok(parse_problem("dir=F,arch=gfx1100", &p)));
  char text[256];
  format_problem(p, text, sizeof text);
  CHECK(std::string(text).find("arch=gfx1100") != std::string::npos);
  Problem again;
  REQUIRE(ok(parse_problem(text, &again)));
  CHECK(again.get(ProblemField::kArch) == p.get(ProblemField::kArch));
  const Status bad = parse_problem("dir=F,arch=gfx9$0", &p);
  CHECK(bad.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(bad.message()).find("problem field 'arch' takes an architecture name") != std::string::npos);
}

TEST_CASE("architectures: a model lists what it covers, predict flags the others, rules name any") {
  tunecast::ir::Model ir;
  REQUIRE(ok(tiny_seq2seq_with_rules(&ir, "params a, b, m\n"
                                       "input 1 x 1\n"
                                       "encode 0 0 log2 n * c\n"
                                       "require a <= k || arch == gfx1100\n")));
  ir.metadata["arch"] = "gfx1100:xnack-, h100,not an arch";
  CompiledModel compiled;
  compile_model(ir, &compiled);
  const Model& model = compiled.model;
  REQUIRE(model.arch_count() == 2);
  CHECK(name_of(model.arch(0)) == "gfx1100");
  CHECK(name_of(model.arch(1)) == "h100");
  std::vector<unsigned char> scratch(model.scratch_bytes(4));
  const auto run = [&](const char* text, PredictInfo* info) {
    Problem problem;
    REQUIRE(ok(parse_problem(text, &problem)));
    Candidate best[4];
    return predict(model, problem, PredictOptions(), scratch.data(), scratch.size(), best, 4, info);
  };
  PredictInfo info;
  CHECK(ok(run("dir=F,n=2,c=2,k=10,arch=gfx1100", &info)));
  CHECK_FALSE(info.arch_not_covered);
  CHECK(ok(run("dir=F,n=2,c=2,k=10,arch=h100", &info)));
  CHECK_FALSE(info.arch_not_covered);
  CHECK(ok(run("dir=F,n=2,c=2,k=10,arch=gfx90a:sramecc+", &info)));  // predicted, flagged
  CHECK(info.arch_not_covered);

  // The rule compares the problem's arch with gfx1100's code.
  Problem problem;
  const int64_t values[3] = {20, 10, 10};
  REQUIRE(ok(parse_problem("dir=F,n=2,c=2,k=10,arch=gfx906", &problem)));
  CHECK_FALSE(check_candidate(model, problem, values, 3, nullptr));
  REQUIRE(ok(parse_problem("dir=F,n=2,c=2,k=10,arch=gfx1100", &problem)));
  CHECK(check_candidate(model, problem, values, 3, nullptr));

  // A blob written before `archs` existed: its metadata "arch" stands in.
  drop_model_field(compiled.blob.bytes.get(), 9);
  Model old;
  REQUIRE(ok(Model::load(compiled.blob.bytes.get(), compiled.blob.size, &old)));
  CHECK(old.root()->archs() == nullptr);
  REQUIRE(old.arch_count() == 2);
  CHECK(old.covers_arch(code_of("gfx1100")));
  CHECK_FALSE(old.covers_arch(kGfx906));

  // A model trained on a GPU the perf DBs do not name (the trainer's DEVICE_ARCHS, rows with arch
  // unset): it lists it, and problems without an arch are not flagged.
  tunecast::ir::Model device;
  REQUIRE(ok(tiny_seq2seq_with_rules(&device)));
  device.metadata["arch"] = "h100";
  CompiledModel on_h100;
  compile_model(device, &on_h100);
  REQUIRE(on_h100.model.arch_count() == 1);
  CHECK(on_h100.model.covers_arch(code_of("h100")));
  CHECK_FALSE(on_h100.model.covers_arch(kGfx906));
  std::vector<unsigned char> device_scratch(on_h100.model.scratch_bytes(1));
  Problem unnamed;
  REQUIRE(ok(parse_problem("dir=F,n=2,c=2,k=10", &unnamed)));
  Candidate best;
  CHECK(ok(predict(on_h100.model, unnamed, PredictOptions(), device_scratch.data(), device_scratch.size(), &best, 1, &info)));
  CHECK_FALSE(info.arch_not_covered);  // no arch given: nothing to flag
}

TEST_CASE("weights checksum: recorded at compile time, checked on request, a flipped byte caught") {
  tunecast::ir::Model ir;
  REQUIRE(ok(tiny_seq2seq_with_rules(&ir)));
  for (const auto storage : {codegen::WeightStorage::kFp32, codegen::WeightStorage::kFp16}) {
    CAPTURE(static_cast<int>(storage));
    codegen::BlobOptions options;
    options.weights = storage;
    CompiledModel compiled;
    compile_model(ir, &compiled, options);
    const Model& model = compiled.model;
    CHECK(model.recorded_weights_checksum() != 0);
    CHECK(model.recorded_weights_checksum() == model.compute_weights_checksum());
    CHECK(ok(model.verify_checksum()));
    LoadOptions verify;
    verify.verify_checksum = true;
    Model checked;
    CHECK(ok(Model::load(compiled.blob.bytes.get(), compiled.blob.size, verify, &checked)));

    // Flip one byte of the encoder's first weight matrix.
    const schema::Matrix* kernel = model.root()->graphs()->Get(0)->layers()->Get(0)->kernel();
    uint8_t* weight = kernel->data() ? const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(kernel->data()->data()))
                                     : const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(kernel->half_data()->data()));
    weight[1] ^= 0x10;
    Model plain;
    CHECK(ok(Model::load(compiled.blob.bytes.get(), compiled.blob.size, &plain)));  // the default load reads no weight
    const Status mismatch = plain.verify_checksum();
    CHECK(mismatch.code() == StatusCode::kCorruptModel);
    CHECK(std::string(mismatch.message()).find("weights checksum mismatch") != std::string::npos);
    const Status refused = Model::load(compiled.blob.bytes.get(), compiled.blob.size, verify, &checked);
    CHECK(refused.code() == StatusCode::kCorruptModel);
    CHECK_FALSE(checked.loaded());
    weight[1] ^= 0x10;
    CHECK(ok(plain.verify_checksum()));

    // A blob compiled before the checksum: loads as ever, says so when asked.
    drop_model_field(compiled.blob.bytes.get(), 10);
    REQUIRE(ok(Model::load(compiled.blob.bytes.get(), compiled.blob.size, &plain)));
    CHECK(plain.recorded_weights_checksum() == 0);
    CHECK(plain.verify_checksum().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("metadata: absolute paths are written as their last component") {
  CHECK(codegen::strip_absolute_paths("/usr/bin/python3 tools/train.py --out /root/out/s/asm_m80_s0_all --x=/tmp/sw12/y/ ; "
                                      "a ~/z/w,/q") == "python3 tools/train.py --out asm_m80_s0_all --x=y ; a w,q");
  CHECK(codegen::strip_absolute_paths("sha256('<split_seed>:<descriptor>') mod 1000: <800 train, 1/2") ==
        "sha256('<split_seed>:<descriptor>') mod 1000: <800 train, 1/2");
  tunecast::ir::Model ir;
  REQUIRE(ok(tiny_seq2seq_with_rules(&ir)));
  ir.metadata["training_command"] = "/usr/bin/python3 tools/train.py --out /tmp/sw12/asm_attention_s1_all";
  CompiledModel compiled;
  compile_model(ir, &compiled);
  CHECK(std::string(compiled.model.metadata("training_command")) == "python3 tools/train.py --out asm_attention_s1_all");

  // The shipped exports carry none either.
  const std::regex absolute(R"((^|[\s=,;:(\["'])(/|~/)[^\s])");
  for (const char* kernel : {"ConvAsm1x1U", "ConvAsmBwdWrW1x1", "ConvAsmBwdWrW3x3", "ConvOclDirectFwd1x1"}) {
    std::ifstream in(std::string(TUNECAST_SOURCE_DIR) + "/weights/" + kernel + "/model.tcir.json");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string json = text.str();
    const size_t metadata = json.find("\"metadata\"");
    REQUIRE(metadata != std::string::npos);
    const std::string head = json.substr(metadata, json.find("\"graphs\"") - metadata);
    CAPTURE(kernel);
    CHECK_FALSE(std::regex_search(head, absolute));
  }
}
