// Bad inputs, each expecting one specific, readable error (docs/errors.md lists them): broken
// blobs, broken bytecode, bad prediction arguments, bad problems, and the CLI's missing files,
// broken perf DBs and "nothing half-written" promise.
#include <doctest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tiny_models.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/dataset_split.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/ir_json.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/problem_forms.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/predict.h"

namespace {

using namespace tunecast;
using tunecast_test::AlignedBlob;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

#define CHECK_ERROR(status_expr, code_value, text)                         \
  do {                                                                     \
    const ::tunecast::Status check_status_ = (status_expr);                \
    CHECK(check_status_.code() == (code_value));                           \
    CHECK_MESSAGE(contains(check_status_.message(), text),                 \
                  (std::string(check_status_.message()) + " | expected: " + std::string(text))); \
  } while (0)

std::vector<uint8_t> blob_of(const ir::Model& model) {
  std::vector<uint8_t> bytes;
  const Status status = codegen::write_blob(model, &bytes);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  return bytes;
}

// The serializer without write_blob's verification: blobs the runtime must refuse.
std::vector<uint8_t> raw_blob_of(const ir::Model& model) {
  std::vector<uint8_t> bytes;
  codegen::serialize_blob_unverified(model, &bytes);
  return bytes;
}

Status load(const std::vector<uint8_t>& bytes, AlignedBlob* keep, Model* model) {
  keep->assign(bytes);
  return Model::load(keep->bytes.get(), keep->size, model);
}

Status load(const std::vector<uint8_t>& bytes) {
  AlignedBlob keep;
  Model model;
  return load(bytes, &keep, &model);
}

// The tiny model with its rules, plus `extra_rules` lines (an `applies`, a `require` reading the arch).
ir::Model tiny_with_rules(const std::string& extra_rules = "") {
  ir::Model m;
  const std::string rules = tunecast_test::tiny_rules_text() + extra_rules;
  const Status status = tunecast_test::tiny_seq2seq_with_rules(&m, rules.c_str());
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  return m;
}

// Generated tables derive privately from flatbuffers::Table; a C-style cast reaches the base to
// edit a scalar in place (the blob stays the same size, so only the edited field changes).
template <typename Schema, typename T>
void set_scalar(const Schema* table, flatbuffers::voffset_t field, T value) {
  auto* base = (flatbuffers::Table*)(const_cast<Schema*>(table));  // NOLINT: private base
  REQUIRE_MESSAGE(base->SetField<T>(field, value), "field absent from the blob");
}

template <typename T>
void set_element(const flatbuffers::Vector<T>* vector, uint32_t index, T value) {
  REQUIRE(vector != nullptr);
  REQUIRE(index < vector->size());
  const_cast<flatbuffers::Vector<T>*>(vector)->Mutate(index, value);
}

// A loaded copy of a valid blob whose bytes a test may edit before loading it again.
struct EditableBlob {
  AlignedBlob bytes;
  const schema::Model* root = nullptr;

  explicit EditableBlob(const ir::Model& model) {
    bytes.assign(blob_of(model));
    root = schema::GetModel(bytes.bytes.get());
  }
  Status load() const {
    Model model;
    return Model::load(bytes.bytes.get(), bytes.size, &model);
  }
};

Problem problem_of(const char* text) {
  Problem problem;
  const Status status = parse_problem(text, &problem);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  return problem;
}

constexpr const char* kTinyProblem = "dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1";

}  // namespace

// ---- blobs ------------------------------------------------------------------------------------

TEST_CASE("bad blob: every truncation fails cleanly, the buffer minus one byte fails verification") {
  const std::vector<uint8_t> full = blob_of(tiny_with_rules());
  REQUIRE(load(full).is_ok());
  for (size_t size = 0; size < full.size(); ++size) {
    CAPTURE(size);
    // Exact-size heap copies: under ASan a read one byte past the prefix is caught.
    std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size));
    const Status status = load(prefix);
    REQUIRE_FALSE(status.is_ok());
    CHECK(status.code() == StatusCode::kCorruptModel);
    if (size < 8) {
      CHECK(contains(status.message(), "empty or truncated"));
    } else {
      CHECK_MESSAGE(contains(status.message(), "failed FlatBuffers verification"), std::string(status.message()));
    }
  }
  std::vector<uint8_t> minus_one(full.begin(), full.end() - 1);
  CHECK_ERROR(load(minus_one), StatusCode::kCorruptModel, "failed FlatBuffers verification");
}

TEST_CASE("bad blob: wrong file identifier, misaligned or empty buffer") {
  std::vector<uint8_t> bytes = blob_of(tunecast_test::tiny_seq2seq());
  std::memcpy(bytes.data() + 4, "ONNX", 4);
  CHECK_ERROR(load(bytes), StatusCode::kCorruptModel,
              "not a tunecast model: file identifier 'ONNX', expected 'TCMD'");
  std::memcpy(bytes.data() + 4, "\x01\x02\x03\x04", 4);
  CHECK_ERROR(load(bytes), StatusCode::kCorruptModel, "file identifier '?\?\?\?'");

  Model model;
  CHECK_ERROR(Model::load(nullptr, 0, &model), StatusCode::kCorruptModel, "empty or truncated (0 bytes)");
  AlignedBlob aligned;
  aligned.assign(blob_of(tunecast_test::tiny_seq2seq()));
  CHECK_ERROR(Model::load(aligned.bytes.get() + 4, aligned.size - 4, &model),
              StatusCode::kInvalidArgument, "must be 8-byte aligned");
  CHECK_FALSE(model.loaded());
}

TEST_CASE("bad blob: newer (or zero) format version") {
  EditableBlob blob(tunecast_test::tiny_seq2seq());
  set_scalar<schema::Model, uint32_t>(blob.root, schema::Model::VT_FORMAT_VERSION, kFormatVersion + 1);
  CHECK_ERROR(blob.load(), StatusCode::kUnsupported, "model format version 4; this runtime reads versions 1 to 3");
  set_scalar<schema::Model, uint32_t>(blob.root, schema::Model::VT_FORMAT_VERSION, 0);
  CHECK_ERROR(blob.load(), StatusCode::kUnsupported, "model format version 0");
}

TEST_CASE("bad blob: shape mismatches") {
  SUBCASE("Dense kernel rows edited in a valid blob") {
    EditableBlob blob(tunecast_test::tiny_seq2seq());
    const schema::Layer* carry = blob.root->graphs()->Get(1)->layers()->Get(1);
    REQUIRE(std::string(carry->name()->c_str()) == "carry");
    set_scalar<schema::Matrix, uint32_t>(carry->kernel(), schema::Matrix::VT_ROWS, 3);
    CHECK_ERROR(blob.load(), StatusCode::kCorruptModel,
                "layer 'carry': kernel weights are [3, 2], expected [2, 2]");
  }
  SUBCASE("Dense kernel rows vs input cols, serialized without verification") {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.graphs[1].layers[1].kernel = {3, 2, {1, 0, 0, 1, 0, 0}};
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
                "layer 'carry': kernel weights are [3, 2], expected [2, 2]");
    // The compiler refuses the same model before serializing it.
    CHECK_ERROR(check_ir(m), StatusCode::kInvalidArgument, "carry");
  }
  SUBCASE("weight count vs declared shape") {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.graphs[1].layers[0].kernel.data.resize(12);  // embedding table declared [4, 4]
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
                "layer 'transitions': embedding weights hold 12 floats, shape needs 16");
  }
  SUBCASE("decoder scores vs vocabulary size") {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.vocabulary.token_values.push_back(40);
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
                "seq2seq: the decoder gives 4 scores, the vocabulary has 5 tokens");
  }
  SUBCASE("a value read before it is computed") {
    ir::Model m = tunecast_test::tiny_seq2seq();
    std::swap(m.graphs[0].layers[0].inputs, m.graphs[0].layers[0].outputs);
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
                "layer 'state' reads value 1 before it is computed");
  }
}

TEST_CASE("bad blob: vocabulary indices out of range") {
  SUBCASE("end token") {
    EditableBlob blob(tunecast_test::tiny_seq2seq());
    set_element<uint16_t>(blob.root->vocabulary()->end_tokens(), 0, 7);
    CHECK_ERROR(blob.load(), StatusCode::kCorruptModel, "vocabulary: end token 7 out of range (4 tokens)");
  }
  SUBCASE("token allowed at a position") {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.vocabulary.parameters[1].tokens = {1, 9};
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
                "vocabulary: position 1 allows token 9, beyond the 4 tokens");
  }
  SUBCASE("start token") {
    EditableBlob blob(tunecast_test::tiny_seq2seq());
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.seq2seq->start_token = 4;
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel, "seq2seq: start token 4 out of range");
  }
  SUBCASE("state link") {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.seq2seq->states[0].encoder_output = 3;
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel, "seq2seq: state link out of range");
  }
  SUBCASE("constraint position beyond the parameters") {
    ir::Model m = tiny_with_rules();
    m.constraints[0].position = 3;
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel, "constraint 0 is placed at position 3 of 3");
  }
  SUBCASE("an applicability condition that reads a parameter") {
    ir::Model m = tiny_with_rules();
    m.applicability = {{0, {{4, 0}}, "a > 0"}};  // LOAD_PARAM 0: a problem-only program may not
    CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
                "applicability condition 0 'a > 0': reads parameter 0, but no parameter is known here");
  }
}

TEST_CASE("bad blob: constraint bytecode that reads past its operands") {
  auto with_constraint = [](std::vector<int32_t> code, std::vector<int64_t> constants, uint32_t position) {
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.constraints = {{position, {std::move(code), std::move(constants)}, "evil"}};
    return load(raw_blob_of(m));
  };
  // PUSH_INT without its immediate.
  CHECK_ERROR(with_constraint({2}, {}, 0), StatusCode::kCorruptModel,
              "constraint 0 'evil': PUSH_INT at word 0 is truncated (needs 1 operand words)");
  // IN_SET with one of its two operands.
  CHECK_ERROR(with_constraint({2, 1, 26, 0}, {5}, 0), StatusCode::kCorruptModel,
              "IN_SET at word 2 is truncated (needs 2 operand words)");
  // Parameter 2 read by a constraint placed at position 0 (only parameter 0 is known there).
  CHECK_ERROR(with_constraint({4, 2}, {}, 0), StatusCode::kCorruptModel,
              "reads parameter 2 but only positions 0..0 are known here");
  CHECK_ERROR(with_constraint({4, -1}, {}, 2), StatusCode::kCorruptModel, "reads parameter -1");
  // Constant 5 of 1, and an IN_SET run past the constants.
  CHECK_ERROR(with_constraint({1, 5}, {42}, 0), StatusCode::kCorruptModel,
              "constant index 5 out of range (1 constants)");
  CHECK_ERROR(with_constraint({2, 1, 26, 0, 2}, {5}, 0), StatusCode::kCorruptModel,
              "IN_SET constants [0, 2) out of range (1 constants)");
  // Problem field beyond the table, unknown opcode, jump out of the code, stack underflow.
  CHECK_ERROR(with_constraint({3, kProblemFieldCount}, {}, 0), StatusCode::kCorruptModel,
              "problem field 25 out of range");
  CHECK_ERROR(with_constraint({99}, {}, 0), StatusCode::kCorruptModel, "unknown opcode 99 at word 0");
  CHECK_ERROR(with_constraint({2, 1, 28, 5}, {}, 0), StatusCode::kCorruptModel, "leaves the code");
  CHECK_ERROR(with_constraint({5}, {}, 0), StatusCode::kCorruptModel, "stack underflow at word 0");
  CHECK_ERROR(with_constraint({}, {}, 0), StatusCode::kCorruptModel, "empty bytecode");
  // A feature encoding reads no parameters at all.
  ir::Model m = tiny_with_rules();
  m.encoding->features[0].program = {{4, 0}, {}};
  CHECK_ERROR(load(raw_blob_of(m)), StatusCode::kCorruptModel,
              "encoding feature 0 'n * c': reads parameter 0, but no parameter is known here");
}

// ---- NaN and Inf weights ------------------------------------------------------------------------

TEST_CASE("NaN/Inf weights: refused at compile time, naming layer and index") {
  ir::Model m = tunecast_test::tiny_seq2seq();
  m.graphs[1].layers[0].kernel.data[6] = std::numeric_limits<float>::quiet_NaN();
  CHECK_ERROR(check_ir(m), StatusCode::kInvalidArgument, "transitions");
  CHECK_ERROR(check_ir(m), StatusCode::kInvalidArgument, "NaN at index 6");
  m = tunecast_test::tiny_seq2seq();
  m.graphs[0].layers[0].bias[1] = std::numeric_limits<float>::infinity();
  CHECK_ERROR(check_ir(m), StatusCode::kInvalidArgument, "Inf at index 1");

  // The Keras importer refuses them while reading the weights.
  const std::vector<float> weights = {1, 2, std::nanf(""), 4, 5, 6};
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "architecture": {"class_name": "Functional", "config": {"name": "tiny", "layers": [
        {"class_name": "InputLayer", "name": "input_1", "inbound_nodes": [],
         "config": {"batch_input_shape": [null, 2], "name": "input_1"}},
        {"class_name": "Dense", "name": "dense", "inbound_nodes": [[["input_1", 0, 0, {}]]],
         "config": {"name": "dense", "units": 3, "activation": "relu", "use_bias": false}}],
      "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}},
    "trainable_params": {"dense": {"weights": []}}})");
  nlohmann::json bad = doc;
  bad["trainable_params"]["dense"]["weights"] = {encode_floats_base64(weights.data(), weights.size())};
  ir::Graph graph;
  const Status status = keras::import_graph(bad, "tiny.json", false, &graph);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(contains(status.message(), "dense"), std::string(status.message()));
  CHECK_MESSAGE(contains(status.message(), "NaN at index 2"), std::string(status.message()));
}

TEST_CASE("NaN weights that reach the runtime: loads (no per-weight work), predict says 'NaN scores'") {
  ir::Model m = tiny_with_rules();
  for (float& w : m.graphs[1].layers[0].kernel.data) w = std::numeric_limits<float>::quiet_NaN();
  AlignedBlob keep;
  Model model;
  REQUIRE(load(raw_blob_of(m), &keep, &model).is_ok());
  std::vector<unsigned char> scratch(model.scratch_bytes(2));
  Candidate out[2];
  PredictInfo info;
  for (int beam : {1, 2}) {
    PredictOptions options;
    options.beam_width = beam;
    CHECK_ERROR(predict(model, problem_of(kTinyProblem), options, scratch.data(), scratch.size(), out, 2, &info),
                StatusCode::kCorruptModel, "the decoder produced NaN scores at position 0");
  }
}

// ---- prediction arguments -----------------------------------------------------------------------

TEST_CASE("bad prediction arguments: beam width, capacity, scratch size") {
  tunecast_test::CompiledModel c;
  tunecast_test::compile_model(tiny_with_rules(), &c);
  const Problem problem = problem_of(kTinyProblem);
  std::vector<unsigned char> scratch(c.model.scratch_bytes(kMaxBeamWidth));
  Candidate out[4];
  PredictInfo info;
  PredictOptions options;
  for (int beam : {0, -1, kMaxBeamWidth + 1}) {
    options.beam_width = beam;
    CHECK_ERROR(predict(c.model, problem, options, scratch.data(), scratch.size(), out, 4, &info),
                StatusCode::kInvalidArgument,
                "beam width " + std::to_string(beam) + " is outside 1..256");
  }
  options.beam_width = 1;
  CHECK_ERROR(predict(c.model, problem, options, scratch.data(), scratch.size(), out, 0, &info),
              StatusCode::kInvalidArgument, "output capacity must be at least 1");
  const size_t need = c.model.scratch_bytes(2);
  options.beam_width = 2;
  CHECK_ERROR(predict(c.model, problem, options, scratch.data(), need - 1, out, 4, &info),
              StatusCode::kBufferTooSmall,
              "scratch holds " + std::to_string(need - 1) + " bytes, beam width 2 needs " + std::to_string(need));
  const float feature = 1.0f;
  CHECK_ERROR(predict_from_features(c.model, &feature, 1, nullptr, options, scratch.data(), need - 1, out, 4, &info),
              StatusCode::kBufferTooSmall, "beam width 2 needs");
  CHECK_ERROR(predict_from_features(c.model, &feature, 2, nullptr, options, scratch.data(), need, out, 4, &info),
              StatusCode::kInvalidArgument, "the encoder reads 1 x 1 features, 2 were given");
  // run_graph: batch, arity and scratch.
  float x = 1.0f, y[2];
  const float* inputs[] = {&x};
  float* outputs[] = {y};
  CHECK_ERROR(run_graph(c.model, 0, 2, inputs, 1, outputs, 1, scratch.data(), scratch.size()),
              StatusCode::kInvalidArgument, "batch 2 is invalid for graph 'encoder'");
  CHECK_ERROR(run_graph(c.model, 5, 1, inputs, 1, outputs, 1, scratch.data(), scratch.size()),
              StatusCode::kInvalidArgument, "graph 5 does not exist");
  CHECK_ERROR(run_graph(c.model, 0, 1, inputs, 2, outputs, 1, scratch.data(), scratch.size()),
              StatusCode::kInvalidArgument, "graph takes 1 inputs and gives 1 outputs (2 and 1 passed)");
  CHECK_ERROR(run_graph(c.model, 0, 1, inputs, 1, outputs, 1, scratch.data(), 16),
              StatusCode::kBufferTooSmall, "scratch holds 16 bytes");
  // Token indices fed to the decoder are data: a bad one is refused, not looked up.
  float token = 7.0f, state[2] = {0, 0}, logits[4], state_out[2];
  const float* dec_in[] = {&token, state};
  float* dec_out[] = {logits, state_out};
  CHECK_ERROR(run_graph(c.model, 1, 1, dec_in, 2, dec_out, 2, scratch.data(), scratch.size()),
              StatusCode::kInvalidArgument, "embedding 'transitions': token index 7 is not in [0, 4)");
}

TEST_CASE("bad problems: unknown, repeated, malformed and missing fields") {
  Problem p;
  CHECK_ERROR(parse_problem("dir=F,colour=3", &p), StatusCode::kInvalidArgument, "unknown problem field 'colour'");
  CHECK_ERROR(parse_problem("n=3,n=4", &p), StatusCode::kInvalidArgument, "problem field 'n' is given twice");
  CHECK_ERROR(parse_problem("n=-3", &p), StatusCode::kInvalidArgument,
              "problem field 'n' needs a non-negative integer, got '-3'");
  CHECK_ERROR(parse_problem("n=12abc", &p), StatusCode::kInvalidArgument, "needs a non-negative integer");
  CHECK_ERROR(parse_problem("n=99999999999999999999", &p), StatusCode::kInvalidArgument,
              "problem field 'n' is out of range");
  CHECK_ERROR(parse_problem("n=", &p), StatusCode::kInvalidArgument, "problem field 'n' has no number");
  CHECK_ERROR(parse_problem("dir=Sideways", &p), StatusCode::kInvalidArgument,
              "problem field 'dir' does not take the value 'Sideways'");
  CHECK_ERROR(parse_problem("dir", &p), StatusCode::kInvalidArgument, "problem item 'dir' is not name=value");
  CHECK_ERROR(parse_problem(" , ", &p), StatusCode::kInvalidArgument, "the problem is empty");
  CHECK_ERROR(parse_problem("dir=F,c=0", &p), StatusCode::kInvalidArgument,
              "problem field 'c' must be at least 1, got 0");
  CHECK_ERROR(parse_problem("dir=F,stride_h=0", &p), StatusCode::kInvalidArgument,
              "problem field 'stride_h' must be at least 1, got 0");
  CHECK_ERROR(parse_problem("dir=F,spatial_dim=4", &p), StatusCode::kInvalidArgument,
              "problem field 'spatial_dim' must be 2 or 3, got 4");
  CHECK_ERROR(parse_problem("dir=F,spatial_dim=3,d=0", &p), StatusCode::kInvalidArgument,
              "problem field 'd' must be at least 1, got 0");

  tunecast_test::CompiledModel c;
  tunecast_test::compile_model(tiny_with_rules(), &c);
  std::vector<unsigned char> scratch(c.model.scratch_bytes(1));
  Candidate out[1];
  PredictInfo info;
  CHECK_ERROR(predict(c.model, problem_of("dir=F,dtype=FP32,c=4,k=30,h=7,w=7,y=1,x=1"), PredictOptions(),
                      scratch.data(), scratch.size(), out, 1, &info),
              StatusCode::kInvalidArgument, "problem field 'n' is missing");
  // An encoding that cannot be computed (log2 of an overflowing product) is an argument error too.
  Problem huge = problem_of(kTinyProblem);
  huge.set(ProblemField::kN, int64_t{1} << 62);
  huge.set(ProblemField::kC, 8);
  CHECK_ERROR(predict(c.model, huge, PredictOptions(), scratch.data(), scratch.size(), out, 1, &info),
              StatusCode::kInvalidArgument, "encoding feature 0 (encode 0 0: 'n * c') cannot be computed");
}

TEST_CASE("a feature outside the training range: predict works and says so") {
  tunecast_test::CompiledModel c;
  tunecast_test::compile_model(tiny_with_rules(), &c);
  std::vector<unsigned char> scratch(c.model.scratch_bytes(1));
  Candidate out[1];
  PredictInfo info;
  REQUIRE(predict(c.model, problem_of(kTinyProblem), PredictOptions(), scratch.data(), scratch.size(), out, 1, &info)
              .is_ok());
  CHECK(info.out_of_range_fields == 0u);
  const Status status = predict(c.model, problem_of("dir=F,dtype=FP32,n=1000,c=4,k=30,h=7,w=7,y=1,x=1"),
                                PredictOptions(), scratch.data(), scratch.size(), out, 1, &info);
  CHECK_MESSAGE(status.is_ok(), std::string(status.message()));
  CHECK(info.out_of_range_fields == (1u << static_cast<int>(ProblemField::kN)));
  CHECK(info.candidates == 1);
}

// ---- the CLI ------------------------------------------------------------------------------------

namespace {

using tunecast_test::CliResult;
using tunecast_test::read_text;
using tunecast_test::run_cli;
using tunecast_test::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

// A failure: non-zero exit and exactly one line on stderr, containing `text`.
void check_one_line_error(const CliResult& r, const std::string& text) {
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
  CHECK_MESSAGE(contains(r.err, text), r.err);
  CHECK_MESSAGE(r.err.rfind("tunecast", 0) == 0, r.err);
}

void write_blob_file(const std::string& path, const ir::Model& model) {
  const std::vector<uint8_t> bytes = blob_of(model);
  write_text(path, std::string(bytes.begin(), bytes.end()));
}

}  // namespace

TEST_CASE("CLI: missing, unreadable and corrupt files give one clear line and a non-zero exit") {
  TempDir dir;
  check_one_line_error(run_cli(dir, "inspect " + dir.file("absent.tcm")), "absent.tcm");
  check_one_line_error(run_cli(dir, "inspect " + dir.file("absent.tcm")), "No such file or directory");
  std::filesystem::create_directory(dir.file("folder.tcm"));
  check_one_line_error(run_cli(dir, "inspect " + dir.file("folder.tcm")), "is not a regular file");
  write_text(dir.file("empty.tcm"), "");
  check_one_line_error(run_cli(dir, "predict " + dir.file("empty.tcm") + " --problem n=1"), "is empty");
  write_text(dir.file("text.tcm"), "this is not a model at all\n");
  check_one_line_error(run_cli(dir, "inspect " + dir.file("text.tcm")), "not a tunecast model");
  std::vector<uint8_t> bytes = blob_of(tunecast_test::tiny_seq2seq());
  bytes.resize(bytes.size() / 2);
  write_text(dir.file("half.tcm"), std::string(bytes.begin(), bytes.end()));
  check_one_line_error(run_cli(dir, "predict " + dir.file("half.tcm") + " --problem n=1"),
                       "failed FlatBuffers verification");
  check_one_line_error(run_cli(dir, "compile " + dir.file("absent.tcir.json") + " -o " + dir.file("x.tcm")),
                       "absent.tcir.json");
  check_one_line_error(run_cli(dir, "import-keras " + dir.file("gfx908_Nothing") + " -o " + dir.file("x.tcm")),
                       "gfx908_Nothing");
  // A long parser message (it quotes what it read) is cut before the file's name, never the name.
  write_text(dir.file("gfx908_Cut_encoder.ktn.model"), "{\"architecture\": \"" + std::string(400, 'A'));
  write_text(dir.file("gfx908_Cut_decoder.ktn.model"), "{}");
  write_text(dir.file("gfx908_Cut_metadata.ktn.model"), "{}");
  const CliResult cut = run_cli(dir, "import-keras " + dir.file("gfx908_Cut") + " -o " + dir.file("x.tcm"));
  check_one_line_error(cut, "malformed JSON");
  CHECK_MESSAGE(contains(cut.err, "... in " + dir.file("gfx908_Cut_encoder.ktn.model") + "\n"), cut.err);
  write_blob_file(dir.file("tiny.tcm"), tiny_with_rules());
  check_one_line_error(run_cli(dir, "table " + dir.file("tiny.tcm") + " --problems " + dir.file("absent.txt") +
                                        " -o " + dir.file("t.inc")),
                       "absent.txt");
  check_one_line_error(run_cli(dir, "compile " + dir.file("tiny.tcm") + " --rules " + dir.file("absent.tcr") +
                                        " -o " + dir.file("x.tcm")),
                       "");
}

TEST_CASE("CLI: a blob whose weights changed after compilation is refused; inspect reports it") {
  TempDir dir;
  const std::vector<uint8_t> original = blob_of(tiny_with_rules());
  // The offset of the encoder's first weight matrix, found through a loaded copy.
  AlignedBlob blob;
  blob.assign(original);
  Model model;
  REQUIRE(Model::load(blob.bytes.get(), blob.size, &model).is_ok());
  const schema::Matrix* kernel = model.root()->graphs()->Get(0)->layers()->Get(0)->kernel();
  REQUIRE(kernel != nullptr);
  const uint8_t* weight = kernel->data() ? reinterpret_cast<const uint8_t*>(kernel->data()->data())
                                         : reinterpret_cast<const uint8_t*>(kernel->half_data()->data());
  std::vector<uint8_t> flipped = original;
  flipped[static_cast<size_t>(weight - blob.bytes.get()) + 1] ^= 0x10;
  write_text(dir.file("ok.tcm"), std::string(original.begin(), original.end()));
  write_text(dir.file("flipped.tcm"), std::string(flipped.begin(), flipped.end()));
  write_text(dir.file("problems.txt"), std::string(kTinyProblem) + "\n");

  CHECK(run_cli(dir, "predict " + dir.file("ok.tcm") + " --problem " + kTinyProblem).exit_code == 0);
  for (const std::string command :
       {"predict " + dir.file("flipped.tcm") + " --problem " + kTinyProblem,
        "table " + dir.file("flipped.tcm") + " --problems " + dir.file("problems.txt") + " -o " + dir.file("t.inc"),
        "emit-cpp " + dir.file("flipped.tcm") + " -o " + dir.file("gen") + " --name P"}) {
    CAPTURE(command);
    const CliResult r = run_cli(dir, command);
    check_one_line_error(r, "flipped.tcm: weights checksum mismatch");
    CHECK(r.exit_code == 1);
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("t.inc")));
  const CliResult inspect = run_cli(dir, "inspect " + dir.file("flipped.tcm"));
  CHECK(inspect.exit_code == 1);
  CHECK_MESSAGE(contains(inspect.out, "mismatch"), inspect.out);
}

TEST_CASE("CLI: bad problems and beam widths; a field outside the training range is a warning") {
  TempDir dir;
  write_blob_file(dir.file("tiny.tcm"), tiny_with_rules());
  const std::string model = dir.file("tiny.tcm");
  check_one_line_error(run_cli(dir, "predict " + model + " --problem colour=3"), "unknown problem field 'colour'");
  check_one_line_error(run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,c=4,k=30,h=7,w=7"),
                       "problem field 'n' is missing");
  check_one_line_error(run_cli(dir, "predict " + model + " --beam 0 --problem " + kTinyProblem),
                       "beam width 0 is outside 1..256");
  check_one_line_error(run_cli(dir, "predict " + model + " --beam 257 --problem " + kTinyProblem),
                       "beam width 257 is outside 1..256");
  const CliResult r = run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=1000,c=4,k=30,h=7,w=7");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "warning: problem field n is 1000 (1..64 in training): outside what the model "
                                "learned from"),
                r.err);
  CHECK_FALSE(r.out.empty());

  // A field the encoding never reads is flagged too when its training range says so (a 1x1
  // kernel's y); symbolic fields are named by symbol.
  ir::Model fixed = tiny_with_rules();
  fixed.encoding->ranges.push_back({"y", 1, 1});
  fixed.encoding->ranges.push_back({"dir", 0, 1});
  write_blob_file(dir.file("fixed.tcm"), fixed);
  const CliResult w = run_cli(dir, "predict " + dir.file("fixed.tcm") + " --problem dir=W,dtype=FP32,n=8,c=4,k=30,h=7,w=7,y=3");
  CHECK_MESSAGE(w.exit_code == 0, w.err);
  CHECK_MESSAGE(contains(w.err, "problem field dir is W (F or B in training)"), w.err);
  CHECK_MESSAGE(contains(w.err, "problem field y is 3 (always 1 in training)"), w.err);
  CHECK_FALSE(contains(w.err, "field n "));
}

TEST_CASE("CLI compile: a model refuses an encoding other than the one it was trained with") {
  TempDir dir;
  write_text(dir.file("own.tce"), "input 1 x 1\nencode 0 0 log2 n * c   # the trainer's\n");
  write_text(dir.file("spaced.tce"), "# comments, blanks and ranges do not matter\ninput 1 x 1\nencode 0 0 log2 n*c\nrange n 1 8\n");
  write_text(dir.file("other.tce"), "input 1 x 1\nencode 0 0 log2 n * k\n");  // same shape, another feature
  ir::Model m = tunecast_test::tiny_seq2seq();
  {
    ir::Model with_own = m;
    REQUIRE(tunecast::codegen::attach_rules(&with_own, "", dir.file("own.tce")).is_ok());
    m.metadata["encoding_digest"] = tunecast::codegen::encoding_digest(*with_own.encoding);
  }
  std::string text;
  REQUIRE(write_ir_json(m, &text).is_ok());
  write_text(dir.file("model.tcir.json"), text);
  const std::string compile = "compile " + dir.file("model.tcir.json") + " -o " + dir.file("out.tcm") + " --encoding ";
  CliResult r = run_cli(dir, compile + dir.file("own.tce"));
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  r = run_cli(dir, compile + dir.file("spaced.tce") + " --force");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  std::filesystem::remove(dir.file("out.tcm"));
  check_one_line_error(run_cli(dir, compile + dir.file("other.tce")),
                       "other.tce is not the encoding this model was trained with");
  CHECK_FALSE(std::filesystem::exists(dir.file("out.tcm")));
  // The fp16 check's options are not silently ignored without --weights fp16, nor half given.
  const std::string own = compile + dir.file("own.tce");
  check_one_line_error(run_cli(dir, own + " --check-perfdb x.db --check-solver S"), "they need --weights fp16");
  check_one_line_error(run_cli(dir, own + " --weights fp16 --check-perfdb x.db"),
                       "--check-perfdb and --check-solver go together");
  check_one_line_error(run_cli(dir, own + " --weights fp16 --check-perfdb x.db --check-solver S --check-limit -1"),
                       "--check-limit must be 0 (all) or more");
  CHECK_FALSE(std::filesystem::exists(dir.file("out.tcm")));
}

TEST_CASE("CLI: a failing command leaves no output file behind and keeps an existing one") {
  TempDir dir;
  write_text(dir.file("broken.tcir.json"), R"({"format": "tunecast-ir", "version": 1, "graphs": [)");
  write_text(dir.file("nan.tcir.json"), "");
  {
    // A model that parses but fails check_ir (NaN weight).
    ir::Model m = tunecast_test::tiny_seq2seq();
    m.graphs[0].layers[0].kernel.data[1] = std::numeric_limits<float>::quiet_NaN();
    std::string text;
    REQUIRE(write_ir_json(m, &text).is_ok());
    write_text(dir.file("nan.tcir.json"), text);
  }
  write_text(dir.file("tiny_encoder.ktn.model"), "{\"architecture\": 3}");
  write_text(dir.file("tiny_decoder.ktn.model"), "{}");
  write_text(dir.file("tiny_metadata.ktn.model"), "{}");
  write_text(dir.file("bad.tcm"), "not a blob, not at all, not even close");
  write_blob_file(dir.file("tiny.tcm"), tiny_with_rules());
  write_text(dir.file("problems.txt"), std::string(kTinyProblem) + "\ncolour=3\n");
  write_text(dir.file("bad.tcr"), "params a, b, m\nrequire a <= \n");
  std::filesystem::create_directory(dir.file("emit"));

  struct Case {
    const char* what;
    std::string args;
    std::vector<std::string> outputs;
  };
  const std::vector<Case> cases = {
      {"compile (malformed JSON)", "compile " + dir.file("broken.tcir.json") + " -o " + dir.file("out.tcm"),
       {dir.file("out.tcm")}},
      {"compile (NaN weight)", "compile " + dir.file("nan.tcir.json") + " -o " + dir.file("out.tcm"),
       {dir.file("out.tcm")}},
      {"import-keras (bad JSON)", "import-keras " + dir.file("tiny") + " -o " + dir.file("out.tcm"),
       {dir.file("out.tcm")}},
      {"table (bad problem line)",
       "table " + dir.file("tiny.tcm") + " --problems " + dir.file("problems.txt") + " -o " + dir.file("out.inc"),
       {dir.file("out.inc")}},
      {"table (bad model)",
       "table " + dir.file("bad.tcm") + " --problems " + dir.file("problems.txt") + " -o " + dir.file("out.inc"),
       {dir.file("out.inc")}},
      {"emit-cpp (bad model)", "emit-cpp " + dir.file("bad.tcm") + " -o " + dir.file("emit") + " --name p",
       {dir.file("emit/p.h"), dir.file("emit/p.cpp")}},
      {"emit-cpp (beam above the runtime's maximum)",
       "emit-cpp " + dir.file("tiny.tcm") + " -o " + dir.file("emit") + " --name p --max-beam 257",
       {dir.file("emit/p.h"), dir.file("emit/p.cpp")}},
  };
  const std::vector<std::string> before = dir.names();
  for (const Case& c : cases) {
    CAPTURE(c.what);
    // No output yet: none afterwards.
    CliResult r = run_cli(dir, c.args);
    CHECK_MESSAGE(r.exit_code != 0, r.out);
    CHECK_MESSAGE(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
    for (const std::string& out : c.outputs) CHECK_FALSE(std::filesystem::exists(out));
    CHECK(dir.names() == before);  // no temporary file left either
    // An existing output: untouched.
    for (const std::string& out : c.outputs) write_text(out, "previous contents\n");
    r = run_cli(dir, c.args);
    CHECK(r.exit_code != 0);
    for (const std::string& out : c.outputs) {
      CHECK(read_text(out) == "previous contents\n");
      std::remove(out.c_str());
    }
  }
  // A rules file that does not compile: no blob either.
  write_text(dir.file("tiny.tcir.json"), "");
  {
    std::string text;
    REQUIRE(write_ir_json(tunecast_test::tiny_seq2seq(), &text).is_ok());
    write_text(dir.file("tiny.tcir.json"), text);
  }
  const CliResult r = run_cli(dir, "compile " + dir.file("tiny.tcir.json") + " --rules " + dir.file("bad.tcr") +
                                       " -o " + dir.file("out.tcm"));
  check_one_line_error(r, "bad.tcr:3:1: expected an expression, found end of file");
  CHECK_FALSE(std::filesystem::exists(dir.file("out.tcm")));
}

// ---- perf DBs -----------------------------------------------------------------------------------

namespace {

void make_db(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, message);
}

// MIOpen's config table, every column the perf DB reader needs.
constexpr const char* kMiopenConfigTable =
    "CREATE TABLE config (id INTEGER PRIMARY KEY, layout TEXT, data_type TEXT, direction TEXT,"
    " spatial_dim INT, in_channels INT, in_h INT, in_w INT, in_d INT, fil_h INT, fil_w INT,"
    " fil_d INT, out_channels INT, batchsize INT, pad_h INT, pad_w INT, pad_d INT,"
    " conv_stride_h INT, conv_stride_w INT, conv_stride_d INT, dilation_h INT, dilation_w INT,"
    " dilation_d INT, bias INT, group_count INT);";

// A perf DB of twelve problems (n = 1..12, otherwise the same) of a solver named Tiny, the tuned
// vector of problem n given by `params_of(n)`, in MIOpen's two tables.
template <typename ParamsOf>
// Twelve problems, batch sizes first_n .. first_n + 11 (another first_n: other problems).
void make_tiny_perf_db(const std::string& path, ParamsOf params_of, int first_n = 1) {
  std::string sql = std::string(kMiopenConfigTable) +
      "CREATE TABLE perf_db (id INTEGER PRIMARY KEY, solver TEXT, config INT, params TEXT);";
  for (int n = first_n; n < first_n + 12; ++n) {
    const std::string id = std::to_string(n);
    sql += "INSERT INTO config VALUES (" + id + ", 'NCHW', 'FP32', 'F', 2, 4, 7, 7, 1, 1, 1, 1, 30, " + id +
           ", 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1);"
           "INSERT INTO perf_db VALUES (" + id + ", 'Tiny', " + id + ", '" + params_of(n) + "');";
  }
  make_db(path, sql.c_str());
}

}  // namespace

TEST_CASE("bad perf DBs: missing tables and columns, not SQLite, absent") {
  TempDir dir;
  PerfDb db;
  make_db(dir.file("no_tables.db"), "CREATE TABLE something (id INTEGER);");
  CHECK_ERROR(PerfDb::open(dir.file("no_tables.db"), &db), StatusCode::kNotFound, "has no table perf_db");
  make_db(dir.file("no_perf.db"), kMiopenConfigTable);
  CHECK_ERROR(PerfDb::open(dir.file("no_perf.db"), &db), StatusCode::kNotFound, "has no table perf_db");
  make_db(dir.file("no_column.db"),
          "CREATE TABLE config (id INTEGER PRIMARY KEY, layout TEXT);"
          "CREATE TABLE perf_db (id INTEGER PRIMARY KEY, solver TEXT, config INT, params TEXT);");
  CHECK_ERROR(PerfDb::open(dir.file("no_column.db"), &db), StatusCode::kNotFound,
              "table config has no column data_type");
  write_text(dir.file("text.db"), std::string(4096, 'x'));
  const Status not_sqlite = PerfDb::open(dir.file("text.db"), &db);
  CHECK_FALSE(not_sqlite.is_ok());
  CHECK_MESSAGE(contains(not_sqlite.message(), "text.db"), std::string(not_sqlite.message()));
  const Status absent = PerfDb::open(dir.file("absent.db"), &db);
  CHECK(absent.code() == StatusCode::kNotFound);
  CHECK_MESSAGE(contains(absent.message(), "absent.db"), std::string(absent.message()));
  CHECK_FALSE(db.is_open());
  // The CLI: one line, non-zero exit; opening an absent DB read-only does not create it.
  write_blob_file(dir.file("tiny.tcm"), tiny_with_rules());
  check_one_line_error(run_cli(dir, "eval " + dir.file("tiny.tcm") + " --perfdb " + dir.file("no_perf.db") +
                                        " --solver ConvAsm1x1U"),
                       "has no table perf_db");
  check_one_line_error(run_cli(dir, "eval " + dir.file("tiny.tcm") + " --perfdb " + dir.file("absent.db") +
                                        " --solver ConvAsm1x1U"),
                       "absent.db");
  CHECK_FALSE(std::filesystem::exists(dir.file("absent.db")));
}

TEST_CASE("CLI eval: a model's fit_on marks evaluated splits it learned from as in-sample") {
  TempDir dir;
  make_tiny_perf_db(dir.file("tiny.db"), [](int) { return "10,20,30"; });  // one valid vector for all
  make_tiny_perf_db(dir.file("holdout.db"), [](int) { return "10,20,30"; }, 13);  // none of tiny.db's
  PerfDb db;
  REQUIRE(PerfDb::open(dir.file("tiny.db"), &db).is_ok());
  std::vector<PerfDbRow> rows;
  REQUIRE(db.rows("Tiny", {}, &rows).is_ok());
  std::map<std::string, int> per_split;
  for (const PerfDbRow& row : rows) ++per_split[tunecast::codegen::split_name(tunecast::codegen::split_of(row.problem, 0))];
  REQUIRE(per_split["test"] > 0);
  REQUIRE(per_split["train"] + per_split["val"] > 0);
  ir::Model refit = tiny_with_rules();
  refit.metadata["fit_on"] = "train+val";
  refit.metadata["split_seed"] = "0";
  write_blob_file(dir.file("refit.tcm"), refit);
  write_blob_file(dir.file("plain.tcm"), tiny_with_rules());  // no fit_on: nothing is known
  const std::string common = " --perfdb " + dir.file("tiny.db") + " --solver Tiny --beam 1,2 --json";

  CliResult r = run_cli(dir, "eval " + dir.file("refit.tcm") + common);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["in_sample_splits"] == nlohmann::json({"train", "val"}));
  CHECK(nlohmann::json::parse(r.out)["in_sample_problems"] == per_split["train"] + per_split["val"]);
  CHECK_MESSAGE(contains(r.err, std::to_string(per_split["train"] + per_split["val"]) +
                                    " of 12 evaluated problems are among the train, val problems it learned "
                                    "(fit_on train+val, split seed 0)"),
                r.err);
  // With the model's own DB named, a holdout's problems count as what they are: never learned.
  r = run_cli(dir, "eval " + dir.file("refit.tcm") + " --perfdb " + dir.file("holdout.db") +
                       " --solver Tiny --beam 1,2 --json --train-perfdb " + dir.file("tiny.db"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["in_sample_problems"] == 0);
  CHECK_MESSAGE(contains(r.err, "0 of 12 evaluated problems are problems of"), r.err);
  CHECK(nlohmann::json::parse(r.out)["in_sample_basis"] == "train_perfdb");
  CHECK_MESSAGE(contains(r.err, "every figure is out-of-sample"), r.err);
  r = run_cli(dir, "eval " + dir.file("refit.tcm") + common + " --train-perfdb " + dir.file("tiny.db") + " --no-baselines");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["in_sample_problems"] == per_split["train"] + per_split["val"]);
  // A DB of another arch cannot say which of these problems the model learned: unknown, not 0.
  make_tiny_perf_db(dir.file("gfx900_1.db"), [](int) { return "10,20,30"; });
  make_tiny_perf_db(dir.file("gfx906_1.db"), [](int) { return "10,20,30"; });
  r = run_cli(dir, "eval " + dir.file("refit.tcm") + " --perfdb " + dir.file("gfx906_1.db") +
                       " --solver Tiny --beam 1 --json --no-baselines --train-perfdb " + dir.file("gfx900_1.db"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["in_sample_problems"].is_null());
  CHECK(nlohmann::json::parse(r.out)["in_sample_basis"] == "unknown");
  CHECK_MESSAGE(contains(r.err, "holds another arch than the evaluated problems"), r.err);
  // Another split seed deals the problems differently: each evaluated problem is placed in the
  // model's splits with the model's seed.
  int seed1_test = 0, seed1_test_learned = 0;
  for (const PerfDbRow& row : rows) {
    if (tunecast::codegen::split_name(tunecast::codegen::split_of(row.problem, 1)) != std::string("test")) continue;
    ++seed1_test;
    seed1_test_learned += tunecast::codegen::split_name(tunecast::codegen::split_of(row.problem, 0)) != std::string("test");
  }
  REQUIRE(seed1_test > 0);
  r = run_cli(dir, "eval " + dir.file("refit.tcm") + common + " --split test --split-seed 1");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["n"] == seed1_test);
  CHECK(nlohmann::json::parse(r.out)["in_sample_splits"] == nlohmann::json({"train", "val"}));
  CHECK(nlohmann::json::parse(r.out)["in_sample_problems"] == seed1_test_learned);
  CHECK_MESSAGE(contains(r.err, "this evaluation's split seed 1 is not the model's (0)"), r.err);
  r = run_cli(dir, "eval " + dir.file("plain.tcm") + common);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["in_sample_splits"].empty());
  // Baselines learn from the named splits, minus the evaluated problems; a bad name is refused.
  r = run_cli(dir, "eval " + dir.file("plain.tcm") + common + " --split test");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["baselines"]["train_rows"] == per_split["train"]);
  r = run_cli(dir, "eval " + dir.file("plain.tcm") + common + " --split test --baselines-fit-on all");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json baselines = nlohmann::json::parse(r.out)["baselines"];
  CHECK(baselines["train_rows"] == 12 - per_split["test"]);
  CHECK(baselines["fit_on"] == "all");
  check_one_line_error(run_cli(dir, "eval " + dir.file("plain.tcm") + common + " --baselines-fit-on everything"),
                       "--baselines-fit-on must be train, train+val or all");
}

TEST_CASE("CLI eval: the arch of a DB named without one, repeated lists, plot names, baselines of another arch") {
  TempDir dir;
  make_tiny_perf_db(dir.file("tiny.db"), [](int) { return "10,20,30"; });
  make_tiny_perf_db(dir.file("gfx900_1.db"), [](int) { return "10,20,30"; });
  make_tiny_perf_db(dir.file("gfx906_1.db"), [](int) { return "10,20,30"; });
  // A model whose rules read the arch cannot score problems of unknown arch: said before the work.
  write_blob_file(dir.file("arch.tcm"), tiny_with_rules("require a <= 30 || arch == gfx900\n"));
  const std::string eval = "eval " + dir.file("arch.tcm") + " --solver Tiny --json --perfdb ";
  check_one_line_error(run_cli(dir, eval + dir.file("tiny.db")),
                       "the arch of " + dir.file("tiny.db") + "'s problems is unknown");
  CliResult r = run_cli(dir, eval + dir.file("tiny.db") + " --arch gfx906");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["n"] == 12);
  CHECK(nlohmann::json::parse(r.out)["archs"] == nlohmann::json({"gfx906"}));
  check_one_line_error(run_cli(dir, eval + dir.file("gfx900_1.db") + " --arch gfx906"),
                       "--arch gfx906 disagrees with the arch gfx900 that the file name");
  // Any architecture name is one (gfx1100 too); what is no name is refused.
  check_one_line_error(run_cli(dir, eval + dir.file("tiny.db") + " --arch gfx9%0"), "unknown arch 'gfx9%0'");
  // Baselines that learn from another GPU's DB say so.
  r = run_cli(dir, eval + dir.file("gfx906_1.db") + " --split test --train-perfdb " + dir.file("gfx900_1.db"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "the baselines learn from gfx900 tunings"), r.err);
  // A width or precision named twice is a typo, not two columns.
  check_one_line_error(run_cli(dir, eval + dir.file("gfx906_1.db") + " --beam 1,2,1"), "beam width 1 is given twice");
  check_one_line_error(run_cli(dir, eval + dir.file("gfx906_1.db") + " --precision FP32,FP32"),
                       "precision FP32 is given twice");
  // The plot's format is checked before the work; so is an option's integer range.
  check_one_line_error(run_cli(dir, eval + dir.file("gfx906_1.db") + " --plot " + dir.file("p.txt")),
                       "must end with .png, .svg or .pdf");
  check_one_line_error(run_cli(dir, eval + dir.file("gfx906_1.db") + " --limit 2147483647"),
                       "option --limit: 2147483647 is out of range");
}

TEST_CASE("CLI: JSON output survives names that are not UTF-8; no valid candidate still prints its object") {
  TempDir dir;
  ir::Model m = tiny_with_rules("applies k >= 10\n");
  m.metadata["solver"] = "Tiny";
  const std::string odd = dir.file("odd\xff.tcm");
  write_blob_file(odd, m);
  CliResult r = run_cli(dir, "inspect '" + odd + "' --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(nlohmann::json::parse(r.out)["file"].get<std::string>(), "odd\xef\xbf\xbd.tcm"));  // U+FFFD
  // k = 1 leaves no valid `a` (require a <= k) and fails `applies`: the JSON says both, exit 3.
  r = run_cli(dir, "predict '" + odd + "' --json --problem dir=F,dtype=FP32,n=16,c=4,k=1,h=7,w=7,y=1,x=1");
  CHECK(r.exit_code == 3);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["candidates"].empty());
  CHECK(j["applicable"] == false);
  CHECK(j["not_applicable"] == "k >= 10");
  CHECK(contains(j["error"].get<std::string>(), "no valid candidate"));
  r = run_cli(dir, "predict '" + odd + "' --problem dir=F,dtype=FP32,n=16,c=4,k=1,h=7,w=7,y=1,x=1");
  CHECK(r.exit_code == 3);
  CHECK_MESSAGE(contains(r.err, "warning: Tiny does not apply to this problem: `k >= 10` fails"), r.err);
  CHECK_MESSAGE(contains(r.err, "tunecast: no valid candidate"), r.err);
  // Features given with the problem: its notes still come when no candidate is valid.
  r = run_cli(dir, "predict '" + odd + "' --json --features 5.9 --problem dir=F,dtype=FP32,n=1000,c=4,k=1,h=7,w=7,y=1,x=1");
  CHECK(r.exit_code == 3);
  const nlohmann::json f = nlohmann::json::parse(r.out);
  CHECK(f["applicable"] == false);
  CHECK(f["out_of_range_fields"] == nlohmann::json({"n"}));
  // --features: commas or white space between values; an empty or non-numeric item is named by its place.
  r = run_cli(dir, "predict '" + odd + "' --json --features ' 5.9 ,'");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  check_one_line_error(run_cli(dir, "predict '" + odd + "' --features '1 2'"), "the encoder reads 1 x 1 features, 2 were given");
  check_one_line_error(run_cli(dir, "predict '" + odd + "' --features 1,,2"), "--features: value 2 is empty");
  check_one_line_error(run_cli(dir, "predict '" + odd + "' --features 1,x"), "value 2 ('x') is not a finite number");
}

TEST_CASE("Status::error_with_tail: the tail survives whole, the head is cut at a character") {
  const std::string tail = " in model.json";
  std::string head(300, 'a');
  Status s = Status::error_with_tail(StatusCode::kInvalidArgument, head.c_str(), tail.c_str());
  std::string m = s.message();
  CHECK(m.size() == Status::kMaxMessage - 1);
  CHECK(m.compare(m.size() - tail.size() - 3, std::string::npos, "..." + tail) == 0);
  // A tail that fits only with the "..." and no head at all still comes whole.
  const std::string long_tail = " " + std::string(Status::kMaxMessage - 5, 't');  // room - 3 bytes
  m = Status::error_with_tail(StatusCode::kInvalidArgument, head.c_str(), long_tail.c_str()).message();
  CHECK(m == "..." + long_tail);
  // No UTF-8 character is cut in two: "é" is two bytes.
  std::string accents;
  while (accents.size() < 300) accents += "\xc3\xa9";
  m = Status::error_with_tail(StatusCode::kInvalidArgument, accents.c_str(), tail.c_str()).message();
  const std::string kept = m.substr(0, m.size() - tail.size() - 3);
  CHECK(kept.size() % 2 == 0);
  CHECK(m.size() <= Status::kMaxMessage - 1);
  // What fits is left alone.
  CHECK(std::string(Status::error_with_tail(StatusCode::kInvalidArgument, "short", tail.c_str()).message()) ==
        "short" + tail);
}

TEST_CASE("CLI: applicability conditions are reported by predict, inspect, eval and table, never enforced") {
  TempDir dir;
  ir::Model m = tiny_with_rules("applies n % 2 == 0\n");
  m.metadata["solver"] = "Tiny";
  REQUIRE(m.applicability.size() == 1);
  write_blob_file(dir.file("tiny.tcm"), m);
  const std::string model = dir.file("tiny.tcm");

  CliResult r = run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_FALSE(contains(r.err, "does not apply"));
  r = run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=15,c=4,k=30,h=7,w=7,y=1,x=1");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "warning: Tiny does not apply to this problem: `n % 2 == 0` fails"), r.err);
  CHECK_MESSAGE(contains(r.out, " (beam "), r.out);  // predicted all the same
  r = run_cli(dir, "predict " + model + " --json --problem dir=F,dtype=FP32,n=15,c=4,k=30,h=7,w=7,y=1,x=1");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["applicable"] == false);
  CHECK(j["not_applicable"] == "n % 2 == 0");
  CHECK_FALSE(j["candidates"].empty());
  // From the encoder input itself: a --problem is still checked; without one nothing is known.
  r = run_cli(dir, "predict " + model + " --json --features 5.9 --problem dir=F,dtype=FP32,n=1000,c=4,k=30,h=7,w=7,y=1,x=1");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["applicable"] == true);
  CHECK(nlohmann::json::parse(r.out)["out_of_range_fields"] == nlohmann::json({"n"}));
  r = run_cli(dir, "predict " + model + " --json --features 5.9");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["applicable"].is_null());

  r = run_cli(dir, "inspect " + model + " --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["applies"] == nlohmann::json({"n % 2 == 0"}));

  // The tiny DB's problems have batch sizes 1..12: half of them fail.
  make_tiny_perf_db(dir.file("tiny.db"), [](int) { return "10,20,30"; });
  r = run_cli(dir, "eval " + model + " --perfdb " + dir.file("tiny.db") + " --solver Tiny --beam 1 --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["not_applicable_problems"] == 6);
  CHECK(nlohmann::json::parse(r.out)["not_applicable_by_condition"] == nlohmann::json({{"n % 2 == 0", 6}}));
  CHECK(nlohmann::json::parse(r.out)["n"] == 12);  // scored all the same
  CHECK_MESSAGE(contains(r.err, "6 of 12 evaluated problems fail the model's applicability conditions"), r.err);
  // Every row evaluated (--split all) leaves the baselines nothing to learn from: said, not silent.
  CHECK_MESSAGE(contains(r.err, "eval: note: no baselines: no train rows of"), r.err);
  CHECK_FALSE(nlohmann::json::parse(r.out).contains("baselines"));

  write_text(dir.file("problems.txt"), "dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1\n"
                                       "dir=F,dtype=FP32,n=15,c=4,k=30,h=7,w=7,y=1,x=1\n");
  r = run_cli(dir, "table " + model + " --problems " + dir.file("problems.txt") + " -o " + dir.file("t.inc"));
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "Tiny does not apply to 1 of 2 problems (" + dir.file("problems.txt") + ":2 `n % 2 == 0`)"),
                r.err);
  // A perf DB table holds one arch: two archs, or one line with an arch and one without, are refused.
  write_text(dir.file("archs.txt"), "dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1,arch=gfx900\n"
                                    "dir=F,dtype=FP32,n=8,c=4,k=30,h=7,w=7,y=1,x=1\n");
  check_one_line_error(run_cli(dir, "table " + model + " --problems " + dir.file("archs.txt") + " -o " +
                                        dir.file("t.db") + " --format perfdb --solver Tiny"),
                       "a perf DB holds one arch, and its key has no arch column: " + dir.file("archs.txt") +
                           ":1 is gfx900, " + dir.file("archs.txt") + ":2 is no arch");
  CHECK_FALSE(std::filesystem::exists(dir.file("t.db")));
}

TEST_CASE("CLI: a model's search_width makes one candidate the best of a wider beam") {
  TempDir dir;
  ir::Model wide = tiny_with_rules();
  wide.metadata["search_width"] = "4";
  write_blob_file(dir.file("wide.tcm"), wide);
  write_blob_file(dir.file("plain.tcm"), tiny_with_rules());
  const std::string problem = std::string(" --problem ") + kTinyProblem + " --json";
  const auto run_json = [&](const std::string& args) {
    const CliResult r = run_cli(dir, args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return nlohmann::json::parse(r.out);
  };

  const nlohmann::json best_of_4 = run_json("predict " + dir.file("wide.tcm") + problem);
  const nlohmann::json beam_4 = run_json("predict " + dir.file("plain.tcm") + problem + " --beam 4");
  CHECK(best_of_4["search_width"] == 4);
  REQUIRE(best_of_4["candidates"].size() == 1);
  CHECK(best_of_4["candidates"][0] == beam_4["candidates"][0]);
  const nlohmann::json greedy = run_json("predict " + dir.file("wide.tcm") + problem + " --greedy");
  const nlohmann::json plain = run_json("predict " + dir.file("plain.tcm") + problem);
  CHECK(greedy["search_width"] == 1);
  CHECK(greedy["candidates"] == plain["candidates"]);
  CHECK(greedy["candidates"][0]["values"] != best_of_4["candidates"][0]["values"]);  // the tiny model's trap
  CHECK(run_json("predict " + dir.file("plain.tcm") + problem + " --search-width 4")["candidates"] ==
        best_of_4["candidates"]);

  // eval: k = 1 under the model's width is the first candidate of a beam of 4.
  make_tiny_perf_db(dir.file("tiny.db"), [](int n) { return n % 2 ? "10,20,30" : "10,10,10"; });
  const std::string eval = " --perfdb " + dir.file("tiny.db") + " --solver Tiny --beam 1,4 --no-baselines --json";
  const nlohmann::json plain_eval = run_json("eval " + dir.file("plain.tcm") + eval);
  const nlohmann::json wide_eval = run_json("eval " + dir.file("wide.tcm") + eval);
  CHECK(plain_eval["search_width"] == 1);
  CHECK(wide_eval["search_width"] == 4);
  CHECK(wide_eval["perfect"]["1"] == plain_eval["top1"]["4"]);
  CHECK(wide_eval["perfect"]["4"] == plain_eval["perfect"]["4"]);
  CHECK(run_json("eval " + dir.file("wide.tcm") + eval + " --search-width 1")["perfect"] == plain_eval["perfect"]);

  wide.metadata["search_width"] = "wide";
  write_blob_file(dir.file("bad.tcm"), wide);
  check_one_line_error(run_cli(dir, "predict " + dir.file("bad.tcm") + problem),
                       "the model's metadata search_width 'wide' is not a width in 1..256");
  check_one_line_error(run_cli(dir, "predict " + dir.file("plain.tcm") + problem + " --search-width 0"),
                       "search width 0 is outside 1..256");
}

TEST_CASE("CLI eval --candidates: one line per problem that agrees with the metrics") {
  TempDir dir;
  write_blob_file(dir.file("plain.tcm"), tiny_with_rules());
  make_tiny_perf_db(dir.file("tiny.db"), [](int n) { return n % 3 ? "10,20,30" : "10,10,10"; });
  const std::string eval = "eval " + dir.file("plain.tcm") + " --perfdb " + dir.file("tiny.db") +
                           " --solver Tiny --beam 1,4 --no-baselines --json --candidates ";
  const CliResult r = run_cli(dir, eval + dir.file("c.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json metrics = nlohmann::json::parse(r.out);
  std::ifstream in(dir.file("c.jsonl"));
  std::string text;
  int lines = 0, at_1 = 0, within_4 = 0;
  int64_t previous_id = -1;
  while (std::getline(in, text)) {
    const nlohmann::json line = nlohmann::json::parse(text);
    ++lines;
    CHECK(line["config_id"].get<int64_t>() > previous_id);  // DB config order
    previous_id = line["config_id"];
    const nlohmann::json& cands = line["candidates"];
    REQUIRE(!cands.empty());
    CHECK(cands.size() <= 4u);
    int rank = 0;
    for (size_t c = 0; c < cands.size(); ++c) {
      if (rank == 0 && cands[c]["values"] == line["tuned"]) rank = static_cast<int>(c) + 1;
      if (c > 0) CHECK(cands[c]["score"].get<double>() <= cands[c - 1]["score"].get<double>());
    }
    CHECK(line["rank"] == rank);
    at_1 += rank == 1;
    within_4 += rank >= 1;
    CHECK(contains(line["problem"].get<std::string>(), "batchsize="));
  }
  REQUIRE(lines == metrics["n"]);
  CHECK(within_4 > 0);
  CHECK(metrics["perfect"]["4"].get<double>() == doctest::Approx(100.0 * within_4 / lines));
  CHECK(metrics["top1"]["4"].get<double>() == doctest::Approx(100.0 * at_1 / lines));
  // An unwritable path (a folder that cannot be made: under a file) fails the command before the
  // work and leaves nothing behind; a missing folder is made.
  check_one_line_error(run_cli(dir, eval + dir.file("tiny.db/c.jsonl")), "tiny.db/c.jsonl");

  // cut_short: only (30, b, 30) passes, checked at the last position. A beam of 9 holds all nine
  // (a, b) prefixes and returns the three valid vectors: exhaustive. A beam of 8 drops a prefix
  // and returns fewer than 8: cut short.
  ir::Model dead_ends;
  REQUIRE(tunecast_test::tiny_seq2seq_with_rules(
              &dead_ends, "params a, b, m\ninput 1 x 1\nencode 0 0 log2 n * c\nrequire a == 30 && m == 30\n")
              .is_ok());
  write_blob_file(dir.file("dead_ends.tcm"), dead_ends);
  const CliResult widths = run_cli(dir, "eval " + dir.file("dead_ends.tcm") + " --perfdb " + dir.file("tiny.db") +
                                            " --solver Tiny --beam 8,9 --no-baselines --json");
  REQUIRE_MESSAGE(widths.exit_code == 0, widths.err);
  const nlohmann::json cut = nlohmann::json::parse(widths.out)["cut_short"];
  CHECK(cut["8"] == 100.0);
  CHECK(cut["9"] == 0.0);
  CHECK_FALSE(std::filesystem::exists(dir.file("tiny.db/c.jsonl")));
}

TEST_CASE("CLI emit-cpp and embed create the output folder, and say when they cannot") {
  TempDir dir;
  write_blob_file(dir.file("tiny.tcm"), tiny_with_rules());
  for (const char* command : {"emit-cpp", "embed"}) {
    CAPTURE(command);
    const std::string out = dir.file(std::string(command) + "/nested");
    const CliResult r = run_cli(dir, std::string(command) + " " + dir.file("tiny.tcm") + " -o " + out + " --name p");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(std::filesystem::is_regular_file(out + "/p.h"));
    CHECK(std::filesystem::is_regular_file(out + "/p.cpp"));
  }
  write_text(dir.file("file"), "a file, not a folder\n");
  check_one_line_error(run_cli(dir, "embed " + dir.file("tiny.tcm") + " -o " + dir.file("file/sub") + " --name p"),
                       "cannot create");
}

TEST_CASE("problem defaults: depth stride and dilation follow MIOpen's keys (0 in 2-D, 1 in 3-D)") {
  const Problem flat = problem_of(kTinyProblem);
  CHECK(flat.get(ProblemField::kSpatialDim) == 2);
  CHECK(flat.get(ProblemField::kStrideD) == 0);  // every 2-D row of MIOpen's perf DBs
  CHECK(flat.get(ProblemField::kDilD) == 0);
  CHECK(flat.get(ProblemField::kD) == 1);
  CHECK(flat.get(ProblemField::kStrideH) == 1);
  const Problem deep = problem_of("dir=F,dtype=FP32,n=1,c=4,k=8,d=4,h=7,w=7,z=3,y=3,x=3,spatial_dim=3");
  CHECK(deep.get(ProblemField::kStrideD) == 1);
  CHECK(deep.get(ProblemField::kDilD) == 1);
  const Problem given = problem_of("dir=F,dtype=FP32,n=1,c=4,k=8,h=7,w=7,y=1,x=1,stride_d=1");
  CHECK(given.get(ProblemField::kStrideD) == 1);  // what the user gives stays
}

// ---- issue 24: MIOpen's forms and conventions, honest eval, tables a library can load, CLI ----

namespace {

Problem any_problem(const std::string& input, tunecast::codegen::ProblemForm expected) {
  Problem p;
  tunecast::codegen::ProblemForm form;
  const Status status = tunecast::codegen::parse_problem_any(input, &p, &form);
  const std::string why = input + ": " + status.message();
  REQUIRE_MESSAGE(status.is_ok(), why);
  CHECK(form == expected);
  return p;
}

std::string any_error(const std::string& input) {
  Problem p;
  const Status status = tunecast::codegen::parse_problem_any(input, &p);
  CHECK_FALSE(status.is_ok());
  return status.message();
}

}  // namespace

TEST_CASE("problem forms: MIOpenDriver lines, perf-DB keys and network configs read into one convention") {
  using tunecast::codegen::ProblemForm;
  const std::string base = "./bin/MIOpenDriver conv -n 16 -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 -p 0 -q 0 -u 2 -v 2 "
                           "-l 1 -j 1 -m conv -g 1 -t 1";
  // Forward: the driver's C, K and input size as they are.
  Problem f = any_problem(base + " -F 1", ProblemForm::kDriver);
  CHECK(f.get(ProblemField::kDir) == kForward);
  CHECK(f.get(ProblemField::kC) == 64);
  CHECK(f.get(ProblemField::kK) == 128);
  CHECK(f.get(ProblemField::kH) == 28);
  CHECK(f.get(ProblemField::kStrideH) == 2);
  // Backward data and weights: dy's channels (the forward K) and size (the forward output, 14).
  for (const char* flag : {" -F 2", " -F 4"}) {
    Problem b = any_problem(base + flag, ProblemForm::kDriver);
    CHECK(b.get(ProblemField::kDir) == (std::string(flag) == " -F 2" ? kBackwardData : kBackwardWeights));
    CHECK(b.get(ProblemField::kC) == 128);
    CHECK(b.get(ProblemField::kK) == 64);
    CHECK(b.get(ProblemField::kH) == 14);
    CHECK(b.get(ProblemField::kW) == 14);
  }
  // Long flags, other precisions, and name=value items for what the line does not carry.
  Problem h = any_problem("MIOpenDriver convfp16 --batchsize 8 --in_channels 32 --in_h 7 --in_w 7 --out_channels 16 "
                          "--fil_h 3 --fil_w 3 --pad_h 1 --pad_w 1 --forw 4 arch=gfx906",
                          ProblemForm::kDriver);
  CHECK(h.get(ProblemField::kDtype) == kFp16);
  CHECK(h.get(ProblemField::kC) == 16);
  CHECK(h.get(ProblemField::kH) == 7);
  CHECK(h.get(ProblemField::kArch) == kGfx906);
  CHECK(any_problem("convbfp16 -n 1 -c 2 -H 3 -W 3 -k 4 -y 1 -x 1 -F 1", ProblemForm::kDriver).get(ProblemField::kDtype) ==
        kBf16);
  // The perf DB's key and the find DB's network config are already in the convention.
  Problem key = any_problem("128-14-14-1x1-64-27-27-16-0x0-2x2-1x1-0-NCHW-FP32-B,arch=gfx906", ProblemForm::kPerfDbKey);
  CHECK(key.get(ProblemField::kDir) == kBackwardData);
  CHECK(key.get(ProblemField::kC) == 128);
  CHECK(key.get(ProblemField::kK) == 64);
  CHECK(key.get(ProblemField::kH) == 14);
  CHECK(key.get(ProblemField::kStrideW) == 2);
  CHECK(key.get(ProblemField::kArch) == kGfx906);
  CHECK(any_problem("64-28-28-1x1-128-28-28-16-0x0-1x1-1x1-0-NCHW-FP16-F_g2", ProblemForm::kPerfDbKey).get(ProblemField::kG) == 2);
  Problem net = any_problem("64x28x28x1x1x128x28x28x16xNCHWxFP32x0x0x1x1x1x1x1xFxDefault", ProblemForm::kNetworkConfig);
  CHECK(net.get(ProblemField::kK) == 128);
  CHECK(net.get(ProblemField::kN) == 16);
  CHECK(any_problem("dir=B,dtype=FP32,n=1,c=2,k=3,h=4,w=4,y=1,x=1", ProblemForm::kFields).get(ProblemField::kC) == 2);

  // What cannot be read is said.
  CHECK(contains(any_error(base + " -F 0"), "give one direction, -F 1 (forward), 2 (backward data) or 4"));
  CHECK(contains(any_error(base + " -F 3"), "give one direction"));
  CHECK(contains(any_error(base), "-F (none)"));
  CHECK(contains(any_error("MIOpenDriver conv -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 -F 1"), "flag -n (--batchsize) is missing"));
  CHECK(contains(any_error(base + " -F 1 -m trans"), "given twice"));
  CHECK(contains(any_error("MIOpenDriver conv -n 1 -c 2 -H 3 -W 3 -k 4 -y 1 -x 1 -F 1 -m trans"), "only -m conv is read"));
  CHECK(contains(any_error("MIOpenDriver conv -n 1 -c 2 -H 3 -W 3 -k 4 -y 1 -x 1 -F 1 -Q 3"), "'-Q' is not a flag"));
  CHECK(contains(any_error("MIOpenDriver pool -n 1"), "is not a convolution command"));
  CHECK(contains(any_error("MIOpenDriver conv -n 1 -c 2 -H 3 -W 3 -k 4 -y 5 -x 5 -F 2"), "the filter does not fit"));
  CHECK(contains(any_error("64-28-28-1x1-128-27-28-16-0x0-1x1-1x1-0-NCHW-FP32-F"), "does not follow from"));
  CHECK(contains(any_error("64-28-28-1x1-128-28-28-16-0x0-1x1-1x1-0-NCHW-FP32FP32FP16-F"), "mixed types"));
  CHECK(contains(any_error("64-28-28-1x1-128-28-28-16-0x0-1x1-1x1-0-NCHW-FP32-F,arch=gfx906,n=3"), "given twice"));
}

TEST_CASE("CLI: problems in MIOpen's forms are converted and shown; conventions of every command") {
  TempDir dir;
  ir::Model m = tiny_with_rules("applies n % 2 == 0\n");
  m.metadata["solver"] = "Tiny";
  write_blob_file(dir.file("tiny.tcm"), m);
  const std::string model = dir.file("tiny.tcm");

  // predict: a driver line, its problem on stderr in fields.
  CliResult r = run_cli(dir, "predict " + model + " --problem \"MIOpenDriver conv -n 16 -c 30 -H 7 -W 7 -k 4 -y 1 -x 1 -F 2\"");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "the MIOpenDriver command line reads as --problem \"dir=B,dtype=FP32,layout=NCHW,n=16,c=4,k=30,h=7,w=7"),
                r.err);
  // The same problem typed as fields: no conversion, but the convention is said (the driver's
  // order typed as fields is a silent wrong answer otherwise); forward fields need no note.
  r = run_cli(dir, "predict " + model + " --problem dir=B,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1");
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "dir=B fields are the perf DB's: c = the forward K, k = the forward C"), r.err);
  r = run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1");
  CHECK_MESSAGE(!contains(r.err, "fields are the perf DB's"), r.err);
  r = run_cli(dir, "predict --help");
  CHECK(r.exit_code == 0);
  CHECK_MESSAGE(contains(r.out, "c = the forward K"), r.out);
  CHECK(contains(run_cli(dir, "table --help").out, "c = the forward K"));
  // predict --among: a config with a value the model never emits is said, by line, not dropped silently.
  {
    const nlohmann::json top = nlohmann::json::parse(
        run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1 --json").out);
    std::string best;  // "v1,v2,..." of the top candidate
    for (const auto& v : top["candidates"][0]["values"]) best += (best.empty() ? "" : ",") + std::to_string(v.get<long long>());
    write_text(dir.file("among.txt"), "999" + best.substr(best.find(',')) + "\n" + best + "\n");
    r = run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1 --among " +
                         dir.file("among.txt"));
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(contains(r.err, "among.txt:1: 999 is not a value the model emits for "), r.err);
    write_text(dir.file("among_none.txt"), "999" + best.substr(best.find(',')) + "\n");
    r = run_cli(dir, "predict " + model + " --problem dir=F,dtype=FP32,n=16,c=4,k=30,h=7,w=7,y=1,x=1 --among " +
                         dir.file("among_none.txt"));
    CHECK(r.exit_code == 3);  // no candidate, as when the rules reject every config (tunecast_triton reads 3 so)
    CHECK_MESSAGE(contains(r.err, "among_none.txt:1: 999 is not a value the model emits for "), r.err);
    CHECK_MESSAGE(contains(r.err, "none of the 1 configs of --among"), r.err);
  }

  // --version and --help on every command; bare tunecast is a usage error on stderr.
  for (const char* command : {"inspect", "import-keras", "compile", "predict", "emit-cpp", "embed", "table", "eval"}) {
    r = run_cli(dir, std::string(command) + " --version");
    CHECK_MESSAGE(r.exit_code == 0, command);
    CHECK(r.out.rfind("tunecast ", 0) == 0);
    r = run_cli(dir, std::string(command) + " --help");
    CHECK_MESSAGE(r.exit_code == 0, command);
    CHECK(contains(r.out, "usage: tunecast"));
  }
  r = run_cli(dir, "");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "usage: tunecast COMMAND"));

  // table: driver lines and keys in the list; an output that is an input is refused before anything
  // is written; -o - is stdout; folders are created; the status line goes to stderr.
  write_text(dir.file("problems.txt"), "MIOpenDriver conv -n 16 -c 30 -H 7 -W 7 -k 4 -y 1 -x 1 -F 2\n"
                                       "4-7-7-1x1-30-7-7-15-0x0-1x1-1x1-0-NCHW-FP32-F\n"
                                       "dir=F,dtype=FP32,n=8,c=4,k=30,h=7,w=7,y=1,x=1\n");
  const std::string table = "table " + model + " --problems " + dir.file("problems.txt");
  const std::string before = read_text(model);
  check_one_line_error(run_cli(dir, table + " -o " + model), "is the input");
  check_one_line_error(run_cli(dir, table + " --format text -o " + dir.file("problems.txt")), "is the input");
  CHECK(read_text(model) == before);
  r = run_cli(dir, table + " --format text -o -");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.out, "dir=B,dtype=FP32,layout=NCHW,n=16,c=4,k=30,h=7,w=7"), r.out);
  CHECK_MESSAGE(contains(r.err, "2 lines are in MIOpen's forms, converted to fields"), r.err);
  CHECK_MESSAGE(contains(r.err, "table: wrote stdout"), r.err);
  CHECK_FALSE(std::filesystem::exists(dir.file("-")));
  // Not applicable (n = 15) is flagged in text and C++, left out of a perf DB.
  CHECK_MESSAGE(contains(r.out, "\t# not applicable: n % 2 == 0"), r.out);
  r = run_cli(dir, table + " -o " + dir.file("new/folder/t.inc"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.empty());
  CHECK_MESSAGE(contains(r.err, "table: wrote " + dir.file("new/folder/t.inc")), r.err);
  const std::string inc = read_text(dir.file("new/folder/t.inc"));
  CHECK(contains(inc, "bool applicable;"));
  CHECK_MESSAGE(contains(inc, ", true, false, {"), inc);  // found, not applicable
  CHECK(contains(inc, "// not applicable: n % 2 == 0"));
  r = run_cli(dir, table + " --format perfdb -o " + dir.file("t.db"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "they are left out of the perf DB"), r.err);
  std::vector<PerfDbRow> rows;
  REQUIRE(read_perf_db(dir.file("t.db"), "Tiny", {}, &rows).is_ok());
  CHECK(rows.size() == 2);
  for (const PerfDbRow& row : rows) CHECK(row.problem.get(ProblemField::kN) % 2 == 0);
  // An existing perf DB is merged into, not replaced: its other problems' and solvers' rows stay
  // (as MIOpen updates a user perf DB); a read-only one is refused; anything else is no perf DB.
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(dir.file("t.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "INSERT INTO perf_db (solver, config, params) SELECT 'Other', id, '1,2,3' FROM config",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  write_text(dir.file("more.txt"), "dir=F,dtype=FP32,n=4,c=4,k=30,h=7,w=7,y=1,x=1\n");
  r = run_cli(dir, "table " + model + " --problems " + dir.file("more.txt") + " --format perfdb -o " + dir.file("t.db"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.err, "merged into " + dir.file("t.db") + ": 1 rows written, 5 in the file"), r.err);
  rows.clear();
  REQUIRE(read_perf_db(dir.file("t.db"), "Tiny", {}, &rows).is_ok());
  CHECK(rows.size() == 3);
  rows.clear();
  REQUIRE(read_perf_db(dir.file("t.db"), "Other", {}, &rows).is_ok());
  CHECK(rows.size() == 2);
  REQUIRE(std::system(("chmod a-w '" + dir.file("t.db") + "'").c_str()) == 0);
  if (::access(dir.file("t.db").c_str(), W_OK) != 0) {  // root writes anyway: nothing to check then
    check_one_line_error(run_cli(dir, "table " + model + " --problems " + dir.file("more.txt") + " --format perfdb -o " +
                                          dir.file("t.db")),
                         "t.db exists and is read-only: its rows would be replaced");
  }
  write_text(dir.file("notes.db"), "not a database, just notes\n");
  check_one_line_error(run_cli(dir, "table " + model + " --problems " + dir.file("more.txt") + " --format perfdb -o " +
                                        dir.file("notes.db")),
                       "notes.db exists and is not a MIOpen perf DB this run can merge into");
  CHECK(read_text(dir.file("notes.db")) == "not a database, just notes\n");
  // tune --problems --perf-db: two archs are refused before anything is measured or recorded.
  write_text(dir.file("twoarch.txt"), "arch=gfx906,dir=F,dtype=FP32,n=8,c=4,k=30,h=7,w=7,y=1,x=1\n"
                                      "arch=gfx90a,dir=F,dtype=FP32,n=8,c=4,k=30,h=7,w=7,y=1,x=1\n");
  check_one_line_error(run_cli(dir, "tune " + model + " --problems " + dir.file("twoarch.txt") + " --budget 2 --record " +
                                        dir.file("arch.db") + " --bench-cmd 'echo 1' --perf-db " + dir.file("arch_perf.db")),
                       "--perf-db: a perf DB holds one arch (its key has none)");
  CHECK_FALSE(std::filesystem::exists(dir.file("arch.db")));
  // Fields beyond the perf DB's 32-bit columns are refused, naming the line and column.
  write_text(dir.file("big.txt"), "dir=F,dtype=FP32,n=8,c=1099511627776,k=30,h=7,w=7,y=1,x=1\n");
  check_one_line_error(run_cli(dir, "table " + model + " --problems " + dir.file("big.txt") + " --format perfdb -o " +
                                        dir.file("big.db")),
                       "big.txt:1: c = 1099511627776 does not fit the perf DB's column in_channels");  // before predicting
  CHECK_FALSE(std::filesystem::exists(dir.file("big.db")));
  // Nothing to write is an error, in every format.
  write_text(dir.file("odd.txt"), "dir=F,dtype=FP32,n=15,c=4,k=30,h=7,w=7,y=1,x=1\n");
  r = run_cli(dir, "table " + model + " --problems " + dir.file("odd.txt") + " --format perfdb -o " + dir.file("odd.db"));
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(contains(r.err, "tunecast: nothing to write: none of the 1 problems"), r.err);
  CHECK_FALSE(std::filesystem::exists(dir.file("odd.db")));
  write_text(dir.file("noarch.txt"), "dir=F,dtype=FP32,n=16,h=7,w=7,y=1,x=1\n");  // no c, k: no candidate
  r = run_cli(dir, "table " + model + " --problems " + dir.file("noarch.txt") + " -o " + dir.file("noarch.inc"));
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(contains(r.err, "tunecast: nothing to write: none of the 1 problems"), r.err);
  CHECK_FALSE(std::filesystem::exists(dir.file("noarch.inc")));
  // A blob to a terminal is refused; into a pipe or file it is fine.
  r = run_cli(dir, "compile " + model + " -o - > " + dir.file("x"));
  CHECK(r.exit_code != 0);  // not a .tcir.json, but -o - itself was accepted
  CHECK_FALSE(contains(r.err, "terminal"));
}

TEST_CASE("CLI eval: --solver is the model's, in-sample figures are said and shown without baselines") {
  TempDir dir;
  make_tiny_perf_db(dir.file("tiny.db"), [](int) { return "10,20,30"; });
  ir::Model m = tiny_with_rules();
  m.metadata["solver"] = "Tiny";
  write_blob_file(dir.file("tiny.tcm"), m);
  m.metadata["fit_on"] = "all";
  m.metadata["split_seed"] = "0";
  write_blob_file(dir.file("refit.tcm"), m);
  // --solver may be left out; another solver's rows are refused, even with as many parameters.
  CliResult r = run_cli(dir, "eval " + dir.file("tiny.tcm") + " --perfdb " + dir.file("tiny.db") + " --json --split test");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["solver"] == "Tiny");
  CHECK(j["in_sample"] == false);
  CHECK(j.contains("baselines"));
  check_one_line_error(run_cli(dir, "eval " + dir.file("tiny.tcm") + " --perfdb " + dir.file("tiny.db") + " --solver Other"),
                       "--solver Other: " + dir.file("tiny.tcm") + " predicts Tiny's parameters");
  // A refit on all: --split test is in-sample too; no baselines beside it, and the table says so.
  r = run_cli(dir, "eval " + dir.file("refit.tcm") + " --perfdb " + dir.file("tiny.db") + " --json --split test");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  j = nlohmann::json::parse(r.out);
  CHECK(j["in_sample"] == true);
  CHECK(j["in_sample_problems"] == j["n"]);
  CHECK_FALSE(j.contains("baselines"));
  CHECK(contains(j["baselines_omitted"].get<std::string>(), "in-sample for the model"));
  r = run_cli(dir, "eval " + dir.file("refit.tcm") + " --perfdb " + dir.file("tiny.db") + " --split test");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.out, "IN-SAMPLE: the model learned"), r.out);
  CHECK_MESSAGE(contains(r.out, "baselines: not shown"), r.out);
  CHECK_FALSE(contains(r.out, "nearest"));
  // The message for a solver the DB does not hold reads as a sentence.
  check_one_line_error(run_cli(dir, "eval " + dir.file("refit.tcm") + " --perfdb " + dir.file("tiny.db") +
                                        " --precision FP16"),
                       "holds no rows of solver Tiny for precision FP16");
  // An output naming an input is refused before the work.
  check_one_line_error(run_cli(dir, "eval " + dir.file("tiny.tcm") + " --perfdb " + dir.file("tiny.db") +
                                        " --candidates " + dir.file("tiny.db")),
                       "is the input");
}

TEST_CASE("rules: parameter names without commas are said to need them") {
  rules::CompiledRules out;
  const Status status = rules::compile("params a b c\n", "bad.tcr", &out);
  CHECK_FALSE(status.is_ok());
  CHECK_MESSAGE(contains(status.message(), "parameter names are separated by commas: 'params a, b, ...'"),
                std::string(status.message()));
}
