// Writes the fuzzers' generated seeds into a directory: small blobs of every structure the
// runtime supports (seq2seq with Embedding / LSTM decoders, constraints and an encoding, a
// feed-forward model) and the tunecast-ir JSON of the same models. Run at build time.
#include <cstdio>
#include <string>
#include <vector>

#include "tiny_models.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/file_io.h"
#include "tunecast/codegen/ir_json.h"

namespace {

using namespace tunecast;

// A seq2seq model with LSTMs on both sides: encoder LSTM over a [2, 3] input, decoder a
// token-input LSTM step whose states come from the encoder, then Dense logits over 4 tokens.
ir::Model tiny_lstm() {
  ir::Model m = tunecast_test::tiny_seq2seq(schema::EndPolicy::EndTokenAfterLast);
  m.name = "tiny_lstm";
  const uint32_t u = 2;
  auto weights = [](uint32_t rows, uint32_t cols, float scale) {
    ir::Matrix w{rows, cols, {}};
    for (uint32_t i = 0; i < rows * cols; ++i) w.data.push_back(scale * float((i * 37) % 11) / 11.0f - 0.3f);
    return w;
  };
  ir::Graph enc;
  enc.name = "encoder";
  const uint32_t x = enc.add_value("x", 2, 3);
  const uint32_t seq = enc.add_value("seq", 1, u);
  const uint32_t h = enc.add_value("h", 1, u);
  const uint32_t c = enc.add_value("c", 1, u);
  ir::Layer lstm = tunecast_test::tiny_layer(ir::LayerType::Lstm, "enc_lstm", {x}, {seq, h, c}, u);
  lstm.kernel = weights(3, 4 * u, 1.0f);
  lstm.recurrent = weights(u, 4 * u, 0.5f);
  lstm.bias.assign(4 * u, 0.1f);
  enc.layers = {lstm};
  enc.inputs = {x};
  enc.outputs = {seq, h, c};

  ir::Graph dec;
  dec.name = "decoder";
  dec.batched = true;
  const uint32_t token = dec.add_value("token", 0, 1);
  const uint32_t h0 = dec.add_value("h0", 0, u);
  const uint32_t c0 = dec.add_value("c0", 0, u);
  const uint32_t dseq = dec.add_value("dseq", 0, u);
  const uint32_t dh = dec.add_value("dh", 0, u);
  const uint32_t dc = dec.add_value("dc", 0, u);
  const uint32_t logits = dec.add_value("logits", 0, 4);
  ir::Layer step = tunecast_test::tiny_layer(ir::LayerType::Lstm, "dec_lstm", {token, h0, c0}, {dseq, dh, dc}, u);
  step.token_input = true;
  step.kernel = weights(4, 4 * u, 1.0f);
  step.recurrent = weights(u, 4 * u, 0.7f);
  ir::Layer out = tunecast_test::tiny_layer(ir::LayerType::Dense, "logits", {dseq}, {logits}, 4);
  out.kernel = weights(u, 4, 2.0f);
  dec.layers = {step, out};
  dec.inputs = {token, h0, c0};
  dec.outputs = {logits, dh, dc};
  m.graphs = {enc, dec};
  m.seq2seq->states = {{1, 1, 1}, {2, 2, 2}};
  m.vocabulary.parameters = {{"a", {1, 2}}, {"b", {}}, {"m", {2, 3}}};
  return m;
}

int write(const std::string& path, const std::vector<uint8_t>& bytes) {
  const Status status = codegen::write_file_atomic(path, bytes);
  if (!status) {
    std::fprintf(stderr, "make_seeds: %s\n", status.message());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tunecast_fuzz_seeds BLOB_DIR IR_JSON_DIR\n");
    return 2;
  }
  const std::string blob_dir = argv[1];
  const std::string json_dir = argv[2];
  std::vector<std::pair<std::string, ir::Model>> models;
  models.emplace_back("tiny_fixed", tunecast_test::tiny_seq2seq());
  models.emplace_back("tiny_end", tunecast_test::tiny_seq2seq(schema::EndPolicy::EndTokenAfterLast));
  ir::Model with_rules;
  Status status = tunecast_test::tiny_seq2seq_with_rules(&with_rules);
  if (!status) {
    std::fprintf(stderr, "make_seeds: %s\n", status.message());
    return 1;
  }
  models.emplace_back("tiny_rules", with_rules);
  // Applicability conditions too, so mutations start from blobs that carry them.
  const std::string applies_text = std::string(tunecast_test::tiny_rules_text()) +
                                   "applies n % 2 == 0\napplies c * k < 65536 && dir != W\n";
  ir::Model with_applies;
  status = tunecast_test::tiny_seq2seq_with_rules(&with_applies, applies_text.c_str());
  if (!status || with_applies.applicability.size() != 2) {
    std::fprintf(stderr, "make_seeds: applicability seed: %s\n", status ? "2 conditions expected" : status.message());
    return 1;
  }
  models.emplace_back("tiny_applies", with_applies);
  models.emplace_back("tiny_lstm", tiny_lstm());
  models.emplace_back("tiny_mlp", tunecast_test::tiny_feed_forward());
  int failures = 0;
  for (const auto& [name, model] : models) {
    std::vector<uint8_t> blob;
    status = codegen::write_blob(model, &blob);
    if (!status) {
      std::fprintf(stderr, "make_seeds: %s: %s\n", name.c_str(), status.message());
      ++failures;
      continue;
    }
    failures += write(blob_dir + "/" + name + ".tcm", blob);
    std::string text;
    if (write_ir_json(model, &text)) {
      // fuzz_json's first byte picks the reader: 2 = tunecast-ir JSON.
      std::vector<uint8_t> bytes{2};
      bytes.insert(bytes.end(), text.begin(), text.end());
      failures += write(json_dir + "/" + name + ".tcir.json", bytes);
    }
  }
  return failures ? 1 : 0;
}
