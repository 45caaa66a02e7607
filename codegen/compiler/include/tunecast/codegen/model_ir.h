// The compiler's in-memory model: what every importer produces and every emitter consumes.
// Host-only (std containers welcome). Weights are logical row-major [rows][cols]; packing for the
// runtime's kernels happens in the blob writer, never here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tunecast/problem.h"
#include "tunecast/tunecast_model_generated.h"

namespace tunecast::ir {

using schema::Activation;
using schema::EndPolicy;
using schema::FeatureTransform;
using schema::LayerType;

struct Matrix {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<float> data;  // rows * cols, row-major
  bool empty() const { return data.empty(); }
};

struct Layer {
  LayerType type = LayerType::Dense;
  std::string name;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  uint32_t units = 0;
  Activation activation = Activation::Linear;
  Matrix kernel;
  Matrix recurrent;
  std::vector<float> bias;
  bool return_sequences = false;
  bool reverse = false;
  Activation recurrent_activation = Activation::Sigmoid;
  Activation cell_activation = Activation::Tanh;
  bool token_input = false;
  uint32_t kernel_size = 1;
  bool padding_same = false;
};

struct Value {
  std::string name;
  uint32_t rows = 0;  // 0: one row per beam (step graphs only)
  uint32_t cols = 0;
};

struct Graph {
  std::string name;
  bool batched = false;
  std::vector<Value> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<Layer> layers;

  uint32_t add_value(std::string value_name, uint32_t rows, uint32_t cols) {
    values.push_back({std::move(value_name), rows, cols});
    return static_cast<uint32_t>(values.size() - 1);
  }
};

struct StateLink {
  uint32_t decoder_input = 0;
  uint32_t encoder_output = 0;
  uint32_t decoder_output = 0;
};

struct ContextLink {
  uint32_t decoder_input = 0;
  uint32_t encoder_output = 0;
};

struct Seq2Seq {
  uint32_t encoder = 0;
  uint32_t decoder = 1;
  uint32_t token_input = 0;
  uint32_t logits_output = 0;
  int32_t start_token = 0;
  std::vector<StateLink> states;
  std::vector<ContextLink> contexts;
  bool logits_are_probabilities = false;
};

struct Parameter {
  std::string name;
  std::vector<uint16_t> tokens;  // empty: every non-end token
  std::vector<int64_t> domain;   // the kernel definition's ordered domain; empty: none (schema: Parameter.domain)
};

struct Vocabulary {
  std::vector<int64_t> token_values;
  std::vector<uint16_t> end_tokens;
  std::vector<Parameter> parameters;
  EndPolicy end_policy = EndPolicy::FixedLength;
  std::vector<std::string> token_labels;  // empty, or one per token (see the schema)
  // Step s of the decoder emits parameters[decode_order[s]]; empty: the parameters' own order.
  std::vector<uint8_t> decode_order;
};

// Whether `order` lists each of the positions 0..count-1 once (a valid decode_order).
inline bool is_permutation(const std::vector<uint8_t>& order, size_t count) {
  std::vector<bool> seen(count, false);
  for (uint8_t position : order) {
    if (position >= count || seen[position]) return false;
    seen[position] = true;
  }
  return order.size() == count;
}

// Whether the vocabulary decodes its parameters in another order than it lists them.
inline bool reorders_parameters(const Vocabulary& v) {
  for (size_t s = 0; s < v.decode_order.size(); ++s) {
    if (v.decode_order[s] != s) return true;
  }
  return false;
}

// Compiled bytecode (see constraint_vm.h for the instruction set).
struct Program {
  std::vector<int32_t> code;
  std::vector<int64_t> constants;
};

struct Constraint {
  uint32_t position = 0;
  Program program;
  std::string text;
};

struct FeatureEncoding {
  uint32_t row = 0;
  uint32_t col = 0;
  FeatureTransform transform = FeatureTransform::Raw;
  uint32_t width = 1;
  float mean = 0.0f;
  float std = 1.0f;
  Program program;
  std::string text;
};

struct FeatureRange {
  std::string field;
  int64_t min = 0;
  int64_t max = 0;
};

struct Encoding {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<FeatureEncoding> features;
  std::vector<std::string> required_fields;
  std::vector<FeatureRange> ranges;
};

// A problem field of a kernel definition (schema: ProblemFieldDef; docs/kernels.md).
struct ProblemFieldDef {
  std::string name;
  FieldKind kind = FieldKind::kInteger;
  int64_t min = 0;
  int64_t max = 0;
  std::vector<std::string> symbols;  // kEnumeration
  bool has_default = false;
  int64_t default_value = 0;
};

struct Model {
  // The problem's fields; empty: MIOpen's convolution problem (built in).
  std::vector<ProblemFieldDef> problem;
  std::string name;
  std::vector<Graph> graphs;
  std::optional<Seq2Seq> seq2seq;
  Vocabulary vocabulary;
  std::vector<Constraint> constraints;
  std::optional<Encoding> encoding;
  std::map<std::string, std::string> metadata;
  std::vector<Constraint> applicability;  // `applies` statements: the problem alone, position 0
};

}  // namespace tunecast::ir
