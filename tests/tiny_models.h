// Tiny IR models, small enough to read whole: the bad-input tests edit them into broken blobs and
// the fuzzers start from their blobs (fuzz/make_seeds.cpp), so mutations hit structure quickly.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/codegen/rules_compiler.h"

namespace tunecast_test {

namespace tiny_ir = tunecast::ir;

// A layer with the fields every layer sets; callers add its weights and options.
inline tiny_ir::Layer tiny_layer(tiny_ir::LayerType type, const char* name, std::vector<uint32_t> inputs,
                                 std::vector<uint32_t> outputs, uint32_t units = 0) {
  tiny_ir::Layer layer;
  layer.type = type;
  layer.name = name;
  layer.inputs = std::move(inputs);
  layer.outputs = std::move(outputs);
  layer.units = units;
  return layer;
}

// Next-token scores of tiny_seq2seq, row = previous token. From the start 1 looks best, but after
// 1 nothing is likely while after 2 the next token is almost sure: greedy misses the best sequence
// (tests/test_beam_search.cpp works the exact answers out from this table).
inline constexpr float kTinyTransitions[4][4] = {
    {-10.0f, 2.0f, 1.5f, 0.0f},
    {-10.0f, 0.1f, -3.0f, 0.0f},
    {-10.0f, 5.0f, 0.5f, 0.0f},
    {-10.0f, 0.3f, 0.2f, 0.1f},
};

// A seq2seq model whose decoder scores depend only on the previous token (an Embedding lookup
// table), with one Dense "state" the decoder carries along. Tokens: 0 ends (and starts), 1..3 mean
// 10, 20, 30; three positions a, b, m. The encoder reads one feature x.
inline tiny_ir::Model tiny_seq2seq(tunecast::schema::EndPolicy policy = tunecast::schema::EndPolicy::FixedLength) {
  tiny_ir::Model m;
  m.name = "tiny";
  tiny_ir::Graph enc;
  enc.name = "encoder";
  const uint32_t x = enc.add_value("x", 1, 1);
  const uint32_t s = enc.add_value("s", 1, 2);
  tiny_ir::Layer dense = tiny_layer(tiny_ir::LayerType::Dense, "state", {x}, {s}, 2);
  dense.kernel = {1, 2, {1.0f, -1.0f}};
  dense.bias = {0.5f, 0.25f};
  enc.layers.push_back(dense);
  enc.inputs = {x};
  enc.outputs = {s};

  tiny_ir::Graph dec;
  dec.name = "decoder";
  dec.batched = true;
  const uint32_t token = dec.add_value("token", 0, 1);
  const uint32_t state = dec.add_value("state", 0, 2);
  const uint32_t logits = dec.add_value("logits", 0, 4);
  const uint32_t state_out = dec.add_value("state_out", 0, 2);
  tiny_ir::Layer table = tiny_layer(tiny_ir::LayerType::Embedding, "transitions", {token}, {logits});
  table.kernel.rows = 4;
  table.kernel.cols = 4;
  for (const auto& row : kTinyTransitions) table.kernel.data.insert(table.kernel.data.end(), row, row + 4);
  tiny_ir::Layer carry = tiny_layer(tiny_ir::LayerType::Dense, "carry", {state}, {state_out}, 2);
  carry.activation = tiny_ir::Activation::Tanh;
  carry.kernel = {2, 2, {1.0f, 0.0f, 0.0f, 1.0f}};
  dec.layers = {table, carry};
  dec.inputs = {token, state};
  dec.outputs = {logits, state_out};
  m.graphs = {enc, dec};

  tiny_ir::Seq2Seq s2s;
  s2s.encoder = 0;
  s2s.decoder = 1;
  s2s.token_input = 0;
  s2s.logits_output = 0;
  s2s.states = {{1, 0, 1}};
  m.seq2seq = s2s;
  m.vocabulary.token_values = {-1, 10, 20, 30};
  m.vocabulary.end_tokens = {0};
  m.vocabulary.parameters = {{"a", {}}, {"b", {}}, {"m", {}}};
  m.vocabulary.end_policy = policy;
  m.metadata["source"] = "tiny";
  return m;
}

// Rules for tiny_seq2seq: an encoding from the problem, a range seen in training, and constraints
// at every position (they leave several valid candidates).
inline const char* tiny_rules_text() {
  return "params a, b, m\n"
         "input 1 x 1\n"
         "encode 0 0 log2 n * c\n"
         "require a <= k\n"
         "require b != a || dir == F\n"
         "require m in {10, 30} && a + b + m <= 80\n";
}

// tiny_seq2seq with `rules_text` (default tiny_rules_text) compiled in and a training range for n
// ([1, 64]).
inline tunecast::Status tiny_seq2seq_with_rules(tiny_ir::Model* out, const char* rules_text = tiny_rules_text()) {
  *out = tiny_seq2seq();
  tunecast::rules::CompiledRules rules;
  TUNECAST_RETURN_IF_ERROR(tunecast::rules::compile(rules_text, "tiny.tcr", &rules));
  out->constraints = rules.constraints;
  out->applicability = rules.applicability;
  out->encoding = rules.encoding;
  out->encoding->required_fields = rules.fields_used;
  out->encoding->ranges = {{"n", 1, 64}};
  return tunecast::Status::ok();
}

// A plain feed-forward model (no seq2seq, no vocabulary): input [1, 3] -> Dense 4 relu -> Dense 2.
inline tiny_ir::Model tiny_feed_forward() {
  tiny_ir::Model m;
  m.name = "tiny_mlp";
  tiny_ir::Graph g;
  g.name = "mlp";
  const uint32_t x = g.add_value("x", 1, 3);
  const uint32_t h = g.add_value("h", 1, 4);
  const uint32_t y = g.add_value("y", 1, 2);
  tiny_ir::Layer d1 = tiny_layer(tiny_ir::LayerType::Dense, "hidden", {x}, {h}, 4);
  d1.activation = tiny_ir::Activation::Relu;
  d1.kernel = {3, 4, {0.1f, 0.2f, 0.3f, 0.4f, -0.5f, 0.6f, -0.7f, 0.8f, 0.9f, -1.0f, 1.1f, 1.2f}};
  d1.bias = {0.0f, 0.1f, 0.2f, 0.3f};
  tiny_ir::Layer d2 = tiny_layer(tiny_ir::LayerType::Dense, "out", {h}, {y}, 2);
  d2.kernel = {4, 2, {1.0f, -1.0f, 0.5f, 0.5f, -0.25f, 0.25f, 2.0f, 0.0f}};
  g.layers = {d1, d2};
  g.inputs = {x};
  g.outputs = {y};
  m.graphs = {g};
  return m;
}

}  // namespace tunecast_test
