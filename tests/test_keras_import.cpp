// Keras (frugally-deep) import of MIOpen's models, the interchange format, and check_ir.
#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/ir_json.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/model.h"

namespace {

using nlohmann::json;
using namespace tunecast;

// MIOpen's models under the shared data directory; empty when absent.
std::string models_dir() {
  const std::string dir = tunecast_test::data_path("miopen/models");
  std::error_code error;
  return std::filesystem::is_directory(dir, error) ? dir : std::string();
}

#define REQUIRE_MODELS(dir)                                                     \
  const std::string dir = models_dir();                                         \
  if (dir.empty()) {                                                            \
    MESSAGE("skipped: no MIOpen models (set TUNECAST_DATA_DIR to shared/data)"); \
    return;                                                                     \
  }

bool contains(const Status& s, const char* text) {
  return std::strstr(s.message(), text) != nullptr;
}

std::string b64(const std::vector<float>& v) { return encode_floats_base64(v.data(), v.size()); }

// ---- a small synthetic frugally-deep model ------------------------------------------------------

json dense_model() {
  return json::parse(R"({
    "architecture": {"class_name": "Functional", "config": {
      "name": "tiny",
      "layers": [
        {"class_name": "InputLayer", "name": "input_1", "inbound_nodes": [],
         "config": {"batch_input_shape": [null, 2], "name": "input_1"}},
        {"class_name": "Dense", "name": "dense", "inbound_nodes": [[["input_1", 0, 0, {}]]],
         "config": {"name": "dense", "units": 3, "activation": "relu", "use_bias": true}}
      ],
      "input_layers": [["input_1", 0, 0]],
      "output_layers": [["dense", 0, 0]]}},
    "trainable_params": {"dense": {"weights": [], "bias": []}}
  })");
}

json valid_dense_model() {
  json m = dense_model();
  m["trainable_params"]["dense"]["weights"] = json::array({b64({1, 2, 3, 4, 5, 6})});
  m["trainable_params"]["dense"]["bias"] = json::array({b64({0.5f, -0.5f, 0})});
  return m;
}

// `inbound` is a vector, not a json: `{ref("x")}` as a json would be an array under GCC but the
// ref itself under Clang (brace-initialization picks different constructors).
json layer_entry(const char* cls, const char* name, json config, const std::vector<json>& inbound) {
  config["name"] = name;
  json node = json::array();
  for (const json& r : inbound) node.push_back(r);
  return json{{"class_name", cls}, {"name", name}, {"config", config},
              {"inbound_nodes", json::array({node})}};
}

json ref(const char* layer, int tensor = 0) { return json::array({layer, 0, tensor, json::object()}); }

// ---- deep comparison of IR models ---------------------------------------------------------------

bool same_matrix(const ir::Matrix& a, const ir::Matrix& b) {
  return a.rows == b.rows && a.cols == b.cols && a.data == b.data;
}

bool same_model(const ir::Model& a, const ir::Model& b) {
  if (a.name != b.name || a.metadata != b.metadata || a.graphs.size() != b.graphs.size()) {
    return false;
  }
  for (size_t g = 0; g < a.graphs.size(); ++g) {
    const ir::Graph& x = a.graphs[g];
    const ir::Graph& y = b.graphs[g];
    if (x.name != y.name || x.batched != y.batched || x.inputs != y.inputs ||
        x.outputs != y.outputs || x.values.size() != y.values.size() ||
        x.layers.size() != y.layers.size()) {
      return false;
    }
    for (size_t v = 0; v < x.values.size(); ++v) {
      if (x.values[v].name != y.values[v].name || x.values[v].rows != y.values[v].rows ||
          x.values[v].cols != y.values[v].cols) {
        return false;
      }
    }
    for (size_t l = 0; l < x.layers.size(); ++l) {
      const ir::Layer& p = x.layers[l];
      const ir::Layer& q = y.layers[l];
      if (p.type != q.type || p.name != q.name || p.inputs != q.inputs || p.outputs != q.outputs ||
          p.units != q.units || p.activation != q.activation || !same_matrix(p.kernel, q.kernel) ||
          !same_matrix(p.recurrent, q.recurrent) || p.bias != q.bias ||
          p.return_sequences != q.return_sequences || p.reverse != q.reverse ||
          p.recurrent_activation != q.recurrent_activation ||
          p.cell_activation != q.cell_activation || p.token_input != q.token_input ||
          p.kernel_size != q.kernel_size || p.padding_same != q.padding_same) {
        return false;
      }
    }
  }
  if (a.seq2seq.has_value() != b.seq2seq.has_value()) return false;
  if (a.seq2seq) {
    const ir::Seq2Seq& s = *a.seq2seq;
    const ir::Seq2Seq& t = *b.seq2seq;
    if (s.encoder != t.encoder || s.decoder != t.decoder || s.token_input != t.token_input ||
        s.logits_output != t.logits_output || s.start_token != t.start_token ||
        s.logits_are_probabilities != t.logits_are_probabilities ||
        s.states.size() != t.states.size() || s.contexts.size() != t.contexts.size()) {
      return false;
    }
    for (size_t i = 0; i < s.states.size(); ++i) {
      if (s.states[i].decoder_input != t.states[i].decoder_input ||
          s.states[i].encoder_output != t.states[i].encoder_output ||
          s.states[i].decoder_output != t.states[i].decoder_output) {
        return false;
      }
    }
    for (size_t i = 0; i < s.contexts.size(); ++i) {
      if (s.contexts[i].decoder_input != t.contexts[i].decoder_input ||
          s.contexts[i].encoder_output != t.contexts[i].encoder_output) {
        return false;
      }
    }
  }
  const ir::Vocabulary& v = a.vocabulary;
  const ir::Vocabulary& w = b.vocabulary;
  if (v.token_values != w.token_values || v.end_tokens != w.end_tokens ||
      v.end_policy != w.end_policy || v.parameters.size() != w.parameters.size()) {
    return false;
  }
  for (size_t p = 0; p < v.parameters.size(); ++p) {
    if (v.parameters[p].name != w.parameters[p].name ||
        v.parameters[p].tokens != w.parameters[p].tokens) {
      return false;
    }
  }
  return true;
}

const char* const kTnArchs[] = {"gfx908", "gfx90a", "gfx942"};

}  // namespace

TEST_CASE("keras: gfx908 ConvAsm1x1U kernel tuning net") {
  REQUIRE_MODELS(dir);
  ir::Model model;
  const Status status = keras::import_ktn(dir + "/gfx908_ConvAsm1x1U", &model);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  CHECK(check_ir(model).is_ok());
  CHECK(model.name == "gfx908_ConvAsm1x1U");
  REQUIRE(model.graphs.size() == 2);

  SUBCASE("encoder: [8, 8] -> Dense(32, no bias) -> LSTM(128) -> LSTM(128), 4 states out") {
    const ir::Graph& enc = model.graphs[0];
    CHECK(enc.name == "encoder");
    CHECK_FALSE(enc.batched);
    REQUIRE(enc.inputs.size() == 1);
    CHECK(enc.values[enc.inputs[0]].rows == 8);
    CHECK(enc.values[enc.inputs[0]].cols == 8);
    REQUIRE(enc.layers.size() == 3);
    CHECK(enc.layers[0].type == ir::LayerType::Dense);
    CHECK(enc.layers[0].units == 32);
    CHECK(enc.layers[0].bias.empty());
    CHECK(enc.layers[0].kernel.rows == 8);
    CHECK(enc.values[enc.layers[0].outputs[0]].rows == 8);
    for (int i : {1, 2}) {
      const ir::Layer& lstm = enc.layers[i];
      CHECK(lstm.type == ir::LayerType::Lstm);
      CHECK(lstm.units == 128);
      CHECK(lstm.kernel.cols == 512);
      CHECK(lstm.recurrent.rows == 128);
      CHECK(lstm.bias.size() == 512);
      CHECK(lstm.recurrent_activation == ir::Activation::Sigmoid);
      CHECK(lstm.cell_activation == ir::Activation::Tanh);
    }
    CHECK(enc.layers[1].return_sequences);
    CHECK(enc.values[enc.layers[1].outputs[0]].rows == 8);
    CHECK_FALSE(enc.layers[2].return_sequences);
    REQUIRE(enc.outputs.size() == 4);
    for (uint32_t id : enc.outputs) {
      CHECK(enc.values[id].rows == 1);
      CHECK(enc.values[id].cols == 128);
    }
  }

  SUBCASE("decoder: token -> Embedding(38, 8) -> LSTM -> LSTM -> Dense(38), per beam") {
    const ir::Graph& dec = model.graphs[1];
    CHECK(dec.name == "decoder");
    CHECK(dec.batched);
    REQUIRE(dec.inputs.size() == 5);
    CHECK(dec.values[dec.inputs[0]].rows == 0);
    CHECK(dec.values[dec.inputs[0]].cols == 1);
    for (size_t i = 1; i < 5; ++i) CHECK(dec.values[dec.inputs[i]].cols == 128);
    REQUIRE(dec.layers.size() == 4);
    CHECK(dec.layers[0].type == ir::LayerType::Embedding);
    CHECK(dec.layers[0].kernel.rows == 38);
    CHECK(dec.layers[0].kernel.cols == 8);
    CHECK(dec.layers[1].inputs.size() == 3);  // x, h0, c0
    CHECK(dec.layers[3].type == ir::LayerType::Dense);
    REQUIRE(dec.outputs.size() == 5);
    CHECK(dec.values[dec.outputs[0]].rows == 0);
    CHECK(dec.values[dec.outputs[0]].cols == 38);
  }

  SUBCASE("seq2seq, vocabulary and metadata") {
    REQUIRE(model.seq2seq.has_value());
    const ir::Seq2Seq& s = *model.seq2seq;
    CHECK(s.token_input == 0);
    CHECK(s.logits_output == 0);
    CHECK(s.start_token == 0);
    CHECK_FALSE(s.logits_are_probabilities);
    REQUIRE(s.states.size() == 4);
    for (uint32_t i = 0; i < 4; ++i) {
      CHECK(s.states[i].decoder_input == i + 1);
      CHECK(s.states[i].encoder_output == i);
      CHECK(s.states[i].decoder_output == i + 1);
    }
    const ir::Vocabulary& v = model.vocabulary;
    REQUIRE(v.token_values.size() == 38);
    CHECK(v.token_values[1] == 4);
    CHECK(v.token_values[18] == 64);
    CHECK(v.end_tokens == std::vector<uint16_t>{0, 37});
    REQUIRE(v.parameters.size() == 8);
    CHECK(v.parameters[0].name == "p0");
    CHECK(v.parameters[7].name == "p7");
    CHECK(v.parameters[3].tokens.empty());
    CHECK(v.end_policy == ir::EndPolicy::FixedLength);
    CHECK(model.metadata.at("arch") == "gfx908");
    CHECK(model.metadata.at("solver") == "ConvAsm1x1U");
    CHECK(model.metadata.at("encoder_hash") ==
          "3a1329d9cf4bc878fba73e2a5bf080b00dcb8a72b79ee068db568658e0c50d4d");
    CHECK(model.metadata.count("decoder_hash") == 1);
    CHECK(model.metadata.at("source").find("gfx908_ConvAsm1x1U_metadata.ktn.model") !=
          std::string::npos);
  }

  SUBCASE("one direction") {
    ir::Model fwd;
    const Status s = keras::import_ktn(dir + "/gfx908_ConvAsm1x1U", "fwd", &fwd);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    CHECK(fwd.metadata.at("direction") == "fwd");
    const Status wrw = keras::import_ktn(dir + "/gfx908_ConvAsm1x1U", "wrw", &fwd);
    CHECK(wrw.code() == StatusCode::kInvalidArgument);
    CHECK(contains(wrw, "no 'wrw' (has bwd 8, fwd 8)"));
  }
}

TEST_CASE("keras: every MIOpen KTN's graphs import and link; vocabularies import or are refused") {
  REQUIRE_MODELS(dir);
  struct Expected {
    const char* prefix;
    const char* refusal;  // nullptr: imports
  };
  // Newer KTNs hold string tokens ("Default", kernel names: imported as labelled symbolic tokens),
  // per-direction parameter counts (imported one direction at a time), or let the first token
  // pick the count (predict_type 1: beyond tunecast's fixed-length vocabularies for now).
  const Expected expected[] = {
      {"gfx908_ConvAsm1x1U", nullptr},
      {"gfx90a_ConvHipIgemmGroupFwdXdlops", nullptr},
      {"gfx90a_ConvHipIgemmGroupXdlops", "parameter count differs by direction (bwd 14, fwd 13, wrw 14)"},
      {"gfx942_ConvHipIgemmGroupFwdXdlops", "predict_type 1"},
      {"gfx942_ConvHipIgemmGroupWrwXdlops", "predict_type 1"},
      {"gfx942_ConvHipIgemmGroupXdlops", "parameter count differs by direction"},
  };
  size_t found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = "_encoder.ktn.model";
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(),
                                                     suffix) != 0) {
      continue;
    }
    const std::string prefix = file.substr(0, file.size() - suffix.size());
    CAPTURE(prefix);
    CHECK(std::any_of(std::begin(expected), std::end(expected),
                      [&](const Expected& e) { return prefix == e.prefix; }));
    ++found;
  }
  CHECK(found == std::size(expected));
  for (const Expected& e : expected) {
    const std::string name = e.prefix;
    CAPTURE(name);
    const std::string prefix = dir + "/" + e.prefix;
    ir::Model model;
    const Status status = keras::import_ktn(prefix, &model);
    if (e.refusal) {
      CHECK(status.code() == StatusCode::kUnsupported);
      CHECK_MESSAGE(contains(status, e.refusal), std::string(status.message()));
      CHECK_MESSAGE(contains(status, "_metadata.ktn.model"), std::string(status.message()));
    } else {
      CHECK_MESSAGE(status.is_ok(), std::string(status.message()));
    }

    // The networks themselves import everywhere: link them with a placeholder vocabulary of the
    // logits' width and check the whole seq2seq structure.
    json enc_json, dec_json;
    REQUIRE(keras::load_json_file(prefix + "_encoder.ktn.model", &enc_json).is_ok());
    REQUIRE(keras::load_json_file(prefix + "_decoder.ktn.model", &dec_json).is_ok());
    ir::Model linked;
    linked.graphs.resize(2);
    Status s = keras::import_graph(enc_json, "encoder", false, &linked.graphs[0]);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    s = keras::import_graph(dec_json, "decoder", true, &linked.graphs[1]);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    const ir::Graph& dec = linked.graphs[1];
    REQUIRE(dec.outputs.size() == 5);
    ir::Seq2Seq seq;
    for (uint32_t i = 0; i < 4; ++i) seq.states.push_back({i + 1, i, i + 1});
    linked.seq2seq = seq;
    linked.vocabulary.token_values.assign(dec.values[dec.outputs[0]].cols, 1);
    linked.vocabulary.end_tokens = {static_cast<uint16_t>(dec.values[dec.outputs[0]].cols - 1)};
    linked.vocabulary.parameters = {{"p0", {}}};
    s = check_ir(linked);
    CHECK_MESSAGE(s.is_ok(), std::string(s.message()));

    // Keras test vectors match the imported input and output shapes.
    std::vector<keras::TestVector> tests;
    s = keras::read_test_vectors(prefix + "_encoder.ktn.model", &tests);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    REQUIRE(tests.size() == 1);
    const ir::Value& in = linked.graphs[0].values[linked.graphs[0].inputs[0]];
    REQUIRE(tests[0].input_shapes.size() == 1);
    CHECK(tests[0].input_shapes[0] == std::vector<uint32_t>{in.rows, in.cols});
    CHECK(tests[0].inputs[0].size() == size_t{in.rows} * in.cols);
    CHECK(tests[0].outputs.size() == 4);
  }

  // One direction of a KTN whose parameter count depends on it, with symbolic tokens.
  ir::Model model;
  const Status fwd = keras::import_ktn(dir + "/gfx90a_ConvHipIgemmGroupXdlops", "fwd", &model);
  REQUIRE_MESSAGE(fwd.is_ok(), std::string(fwd.message()));
  CHECK(model.vocabulary.parameters.size() == 13);
  const auto& labels = model.vocabulary.token_labels;
  REQUIRE(labels.size() == model.vocabulary.token_values.size());
  const auto symbolic = std::find(labels.begin(), labels.end(), "Default");
  REQUIRE(symbolic != labels.end());
  const size_t token = static_cast<size_t>(symbolic - labels.begin());
  CHECK(model.vocabulary.token_values[token] == tunecast::kSymbolicTokenBase - static_cast<int64_t>(token));
  CHECK(check_ir(model).is_ok());
  const auto numeric = std::find(labels.begin(), labels.end(), "256");
  REQUIRE(numeric != labels.end());
  CHECK(model.vocabulary.token_values[numeric - labels.begin()] == 256);
  // A vocabulary of numbers only keeps no labels.
  ir::Model plain;
  REQUIRE(keras::import_ktn(dir + "/gfx908_ConvAsm1x1U", &plain).is_ok());
  CHECK(plain.vocabulary.token_labels.empty());
}

TEST_CASE("keras: TunaNet solver-selection MLPs") {
  REQUIRE_MODELS(dir);
  const uint32_t inputs[] = {24, 18, 18};
  const uint32_t outputs[] = {18, 36, 21};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(kTnArchs[i]);
    ir::Model model;
    const Status s = keras::import_tn(dir + "/" + kTnArchs[i] + ".tn.model", &model);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    CHECK(check_ir(model).is_ok());
    CHECK_FALSE(model.seq2seq.has_value());
    REQUIRE(model.graphs.size() == 1);
    const ir::Graph& g = model.graphs[0];
    CHECK_FALSE(g.batched);
    CHECK(g.values[g.inputs[0]].rows == 1);
    CHECK(g.values[g.inputs[0]].cols == inputs[i]);
    REQUIRE(g.outputs.size() == 1);
    CHECK(g.values[g.outputs[0]].cols == outputs[i]);
    CHECK(g.layers.size() == 19);  // 10 Dense, 6 ReLU, 3 Add (residual blocks)
    CHECK(model.metadata.at("arch") == kTnArchs[i]);
    const std::string& solvers = model.metadata.at("solvers");
    const size_t count = static_cast<size_t>(std::count(solvers.begin(), solvers.end(), ',')) + 1;
    CHECK(std::to_string(count) == model.metadata.at("num_solvers"));
    CHECK(std::to_string(outputs[i] - count) == model.metadata.at("solver_offset"));
    const std::string& mean = model.metadata.at("feature_mean");
    CHECK(static_cast<size_t>(std::count(mean.begin(), mean.end(), ',')) + 1 == inputs[i]);
  }
  std::vector<keras::TestVector> tests;
  CHECK(keras::read_test_vectors(dir + "/gfx908.tn.model", &tests).code() ==
        StatusCode::kNotFound);
  const Status s = keras::read_test_vectors(dir + "/gfx90a.tn.model", &tests);
  REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
  REQUIRE(tests.size() == 1);
  CHECK(tests[0].input_shapes[0] == std::vector<uint32_t>{18});
  CHECK(tests[0].outputs[0].size() == 36);
}

TEST_CASE("keras: malformed models are rejected with a message naming file, layer and field") {
  ir::Graph graph;
  const Status ok = keras::import_graph(valid_dense_model(), "tiny.json", false, &graph);
  REQUIRE_MESSAGE(ok.is_ok(), std::string(ok.message()));
  CHECK(graph.layers.size() == 1);
  CHECK(graph.layers[0].activation == ir::Activation::Relu);
  CHECK(graph.layers[0].kernel.data == std::vector<float>{1, 2, 3, 4, 5, 6});

  struct Case {
    const char* name;
    std::function<void(json&)> mutate;
    StatusCode code;
    const char* message;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Case cases[] = {
      {"unsupported layer",
       [](json& m) {
         auto& l = m["architecture"]["config"]["layers"][1];
         l["class_name"] = "GRU";
         l["name"] = "gru_1";
         m["architecture"]["config"]["output_layers"][0][0] = "gru_1";
       },
       StatusCode::kUnsupported, "unsupported layer class 'GRU' (layer 'gru_1') in bad.json"},
      {"truncated weights",
       [](json& m) { m["trainable_params"]["dense"]["weights"] = json::array({b64({1, 2, 3, 4, 5})}); },
       StatusCode::kInvalidArgument,
       "layer 'dense' weights 'weights' hold 5 floats, expected 6 ([2, 3]) in bad.json"},
      {"partial float", [](json& m) { m["trainable_params"]["dense"]["bias"] = json::array({"AAAA"}); },
       StatusCode::kInvalidArgument, "hold 3 bytes, not whole float32s"},
      {"bad base64", [](json& m) { m["trainable_params"]["dense"]["weights"] = {"AAAA", "AB*D"}; },
       StatusCode::kInvalidArgument, "weights 'weights' chunk 1 is bad base64 (at character 2)"},
      {"NaN weight",
       [nan](json& m) { m["trainable_params"]["dense"]["weights"] = json::array({b64({1, 2, 3, 4, nan, 6})}); },
       StatusCode::kInvalidArgument, "layer 'dense' weights 'weights' contain NaN at index 4"},
      {"Inf bias", [inf](json& m) { m["trainable_params"]["dense"]["bias"] = json::array({b64({0, inf, 0})}); },
       StatusCode::kInvalidArgument, "weights 'bias' contain Inf at index 1"},
      {"missing units",
       [](json& m) { m["architecture"]["config"]["layers"][1]["config"].erase("units"); },
       StatusCode::kNotFound, "layer 'dense' config is missing 'units' in bad.json"},
      {"missing weights", [](json& m) { m["trainable_params"]["dense"].erase("bias"); },
       StatusCode::kNotFound, "layer 'dense' is missing weights 'bias'"},
      {"missing architecture", [](json& m) { m.erase("architecture"); }, StatusCode::kNotFound,
       "missing object 'architecture' in bad.json"},
      {"units as a string",
       [](json& m) { m["architecture"]["config"]["layers"][1]["config"]["units"] = "3"; },
       StatusCode::kInvalidArgument, "config 'units' must be a positive integer"},
      {"unknown activation",
       [](json& m) { m["architecture"]["config"]["layers"][1]["config"]["activation"] = "swish"; },
       StatusCode::kUnsupported, "layer 'dense' has unknown activation 'swish'"},
      {"dangling input",
       [](json& m) {
         m["architecture"]["config"]["layers"][1]["inbound_nodes"][0][0][0] = "nowhere";
       },
       StatusCode::kInvalidArgument, "layer 'dense' reads 'nowhere' (node 0, tensor 0)"},
      {"variable-length input",
       [](json& m) {
         m["architecture"]["config"]["layers"][0]["config"]["batch_input_shape"] = {nullptr,
                                                                                    nullptr, 2};
       },
       StatusCode::kUnsupported, "variable-length axis 1"},
      {"not an object", [](json& m) { m = json::array({1, 2}); }, StatusCode::kInvalidArgument,
       "model JSON is not an object"},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    json model = valid_dense_model();
    c.mutate(model);
    ir::Graph out;
    const Status s = keras::import_graph(model, "bad.json", false, &out);
    CHECK(s.code() == c.code);
    CHECK_MESSAGE(contains(s, c.message), std::string(s.message()));
  }
}

TEST_CASE("keras: no JSON shape makes the importer throw") {
  // Replace every node of a valid model, one at a time, with values of every other type.
  const json base = valid_dense_model();
  const json replacements[] = {nullptr, 7, -1, 2.5, "x", json::array(), json::object(),
                               json::array({nullptr})};
  std::vector<json::json_pointer> pointers;
  std::function<void(const json&, const json::json_pointer&)> walk =
      [&](const json& j, const json::json_pointer& p) {
        pointers.push_back(p);
        if (j.is_object()) {
          for (const auto& item : j.items()) walk(item.value(), p / item.key());
        } else if (j.is_array()) {
          for (size_t i = 0; i < j.size(); ++i) walk(j[i], p / i);
        }
      };
  walk(base, json::json_pointer());
  size_t rejected = 0;
  for (const auto& p : pointers) {
    for (const json& r : replacements) {
      json mutated = base;
      mutated[p] = r;
      ir::Graph graph;
      Status s;
      CHECK_NOTHROW(s = keras::import_graph(mutated, "fuzz.json", true, &graph));
      rejected += s.is_ok() ? 0 : 1;
    }
  }
  CHECK(rejected > 0);
}

TEST_CASE("keras: Conv1D, Bidirectional, Concatenate and Softmax") {
  const uint32_t steps = 5, in = 2, filters = 3, k = 3, units = 4;
  std::vector<float> conv(filters * k * in);  // frugally-deep order [filters][k][in]
  for (size_t i = 0; i < conv.size(); ++i) conv[i] = static_cast<float>(i);
  auto ones = [](size_t n) { return std::vector<float>(n, 0.25f); };
  json layers = json::array();
  layers.push_back(json{{"class_name", "InputLayer"}, {"name", "x"}, {"inbound_nodes", json::array()},
                        {"config", {{"batch_input_shape", {nullptr, steps, in}}}}});
  layers.push_back(layer_entry("Conv1D", "conv",
                               {{"filters", filters}, {"kernel_size", {k}}, {"padding", "same"},
                                {"activation", "tanh"}, {"use_bias", true}},
                               {ref("x")}));
  const json lstm = {{"class_name", "LSTM"},
                     {"config", {{"units", units}, {"return_sequences", true}}}};
  layers.push_back(layer_entry("Bidirectional", "bi", {{"layer", lstm}, {"merge_mode", "concat"}},
                               {ref("conv")}));
  layers.push_back(layer_entry("Concatenate", "cat", {{"axis", -1}}, {ref("bi"), ref("conv")}));
  layers.push_back(layer_entry("Softmax", "soft", json::object(), {ref("cat")}));
  json model = {{"architecture",
                 {{"class_name", "Functional"},
                  {"config",
                   {{"name", "conv_bi"},
                    {"layers", layers},
                    {"input_layers", {{"x", 0, 0}}},
                    {"output_layers", {{"soft", 0, 0}}}}}}},
                {"trainable_params",
                 {{"conv", {{"weights", json::array({b64(conv)})}, {"bias", json::array({b64(ones(filters))})}}},
                  {"bi",
                   {{"forward_weights", json::array({b64(ones(filters * 4 * units))})},
                    {"forward_recurrent_weights", json::array({b64(ones(units * 4 * units))})},
                    {"forward_bias", json::array({b64(ones(4 * units))})},
                    {"backward_weights", json::array({b64(ones(filters * 4 * units))})},
                    {"backward_recurrent_weights", json::array({b64(ones(units * 4 * units))})},
                    {"backward_bias", json::array({b64(ones(4 * units))})}}}}}};
  ir::Model m;
  m.graphs.resize(1);
  Status s = keras::import_graph(model, "conv_bi.json", false, &m.graphs[0]);
  REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
  s = check_ir(m);
  CHECK_MESSAGE(s.is_ok(), std::string(s.message()));
  const ir::Graph& g = m.graphs[0];
  REQUIRE(g.layers.size() == 6);  // conv, bi/forward, bi/backward, bi/merge, cat, soft
  const ir::Layer& c = g.layers[0];
  CHECK(c.type == ir::LayerType::Conv1D);
  CHECK(c.padding_same);
  CHECK(c.kernel_size == k);
  CHECK(c.activation == ir::Activation::Tanh);
  REQUIRE(c.kernel.rows == k * in);
  REQUIRE(c.kernel.cols == filters);
  for (uint32_t o = 0; o < filters; ++o) {
    for (uint32_t t = 0; t < k; ++t) {
      for (uint32_t ch = 0; ch < in; ++ch) {
        CHECK(c.kernel.data[(t * in + ch) * filters + o] == conv[(o * k + t) * in + ch]);
      }
    }
  }
  CHECK_FALSE(g.layers[1].reverse);
  CHECK(g.layers[2].reverse);
  CHECK(g.layers[3].type == ir::LayerType::Concat);
  CHECK(g.values[g.layers[3].outputs[0]].cols == 2 * units);
  CHECK(g.values[g.layers[3].outputs[0]].rows == steps);
  CHECK(g.values[g.outputs[0]].cols == 2 * units + filters);
  CHECK(g.layers[5].type == ir::LayerType::Softmax);
}

TEST_CASE("ir json: round trip of imported models") {
  REQUIRE_MODELS(dir);
  std::vector<ir::Model> models(2);
  REQUIRE(keras::import_ktn(dir + "/gfx908_ConvAsm1x1U", &models[0]).is_ok());
  REQUIRE(keras::import_tn(dir + "/gfx90a.tn.model", &models[1]).is_ok());
  for (const ir::Model& model : models) {
    CAPTURE(model.name);
    std::string text;
    REQUIRE(write_ir_json(model, &text).is_ok());
    ir::Model back;
    const Status s = parse_ir_json(text, "roundtrip.tcir.json", &back);
    REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
    CHECK(same_model(model, back));
    CHECK(check_ir(back).is_ok());
    std::string again;
    REQUIRE(write_ir_json(back, &again).is_ok());
    CHECK(again == text);
  }
}

TEST_CASE("ir json: hand-written file with defaults, arrays and every field") {
  const char* text = R"({
    "format": "tunecast-ir", "version": 1, "name": "toy",
    "metadata": {"arch": "gfx906"},
    "graphs": [
      {"name": "encoder", "values": [{"name": "x", "rows": 3, "cols": 2},
                                     {"name": "seq", "rows": 3, "cols": 1},
                                     {"name": "h", "rows": 1, "cols": 1},
                                     {"name": "c", "rows": 1, "cols": 1}],
       "inputs": [0], "outputs": [2, 3],
       "layers": [{"type": "Lstm", "name": "lstm", "inputs": [0], "outputs": [1, 2, 3],
                   "units": 1, "return_sequences": true,
                   "kernel": {"rows": 2, "cols": 4, "data": [1, 2, 3, 4, 5, 6, 7, 8]},
                   "recurrent": {"rows": 1, "cols": 4, "data": [0, 0, 0, 0]},
                   "bias": [0, 1, 0, 0]}]},
      {"name": "decoder", "batched": true,
       "values": [{"name": "token", "rows": 0, "cols": 1}, {"name": "h0", "rows": 0, "cols": 1},
                  {"name": "c0", "rows": 0, "cols": 1}, {"name": "e", "rows": 0, "cols": 2},
                  {"name": "o", "rows": 0, "cols": 1}, {"name": "h", "rows": 0, "cols": 1},
                  {"name": "c", "rows": 0, "cols": 1}, {"name": "logits", "rows": 0, "cols": 3}],
       "inputs": [0, 1, 2], "outputs": [7, 5, 6],
       "layers": [
         {"type": "Embedding", "name": "emb", "inputs": [0], "outputs": [3],
          "kernel": {"rows": 3, "cols": 2, "data": [0, 0, 1, 1, 2, 2]}},
         {"type": "Lstm", "name": "lstm", "inputs": [3, 1, 2], "outputs": [4, 5, 6], "units": 1,
          "recurrent_activation": "HardSigmoid",
          "kernel": {"rows": 2, "cols": 4, "data": [1, 1, 1, 1, 1, 1, 1, 1]},
          "recurrent": {"rows": 1, "cols": 4, "data": [1, 1, 1, 1]}},
         {"type": "Dense", "name": "out", "inputs": [4], "outputs": [7], "units": 3,
          "activation": "Softmax", "kernel": {"rows": 1, "cols": 3, "data": "AACAPwAAAEAAAEBA"}}]}
    ],
    "seq2seq": {"encoder": 0, "decoder": 1, "states": [
                  {"decoder_input": 1, "encoder_output": 0, "decoder_output": 1},
                  {"decoder_input": 2, "encoder_output": 1, "decoder_output": 2}],
                "logits_are_probabilities": true},
    "vocabulary": {"token_values": [-1, 4, 8], "end_tokens": [0],
                   "parameters": [{"name": "read_size", "tokens": [1, 2]}, {"name": "k"}],
                   "end_policy": "EndTokenAfterLast"}
  })";
  ir::Model model;
  Status s = parse_ir_json(text, "toy.tcir.json", &model);
  REQUIRE_MESSAGE(s.is_ok(), std::string(s.message()));
  s = check_ir(model);
  CHECK_MESSAGE(s.is_ok(), std::string(s.message()));
  CHECK(model.graphs[1].layers[1].recurrent_activation == ir::Activation::HardSigmoid);
  CHECK(model.graphs[1].layers[2].kernel.data == std::vector<float>{1, 2, 3});
  CHECK(model.graphs[0].layers[0].bias == std::vector<float>{0, 1, 0, 0});
  CHECK(model.vocabulary.end_policy == ir::EndPolicy::EndTokenAfterLast);
  CHECK(model.vocabulary.parameters[1].tokens.empty());
  CHECK(model.seq2seq->logits_are_probabilities);

  std::string written;
  REQUIRE(write_ir_json(model, &written).is_ok());
  ir::Model back;
  REQUIRE(parse_ir_json(written, "again", &back).is_ok());
  CHECK(same_model(model, back));
}

TEST_CASE("ir json: errors name the file and the JSON path") {
  ir::Model base;
  REQUIRE(parse_ir_json(R"({"format": "tunecast-ir", "version": 1, "graphs": []})", "x", &base)
              .is_ok());
  struct Case {
    const char* text;
    StatusCode code;
    const char* message;
  };
  const std::string layer_prefix =
      R"({"format": "tunecast-ir", "version": 1, "graphs": [{"values": [], "inputs": [],
          "outputs": [], "layers": [{"name": "enc_lstm", "inputs": [], "outputs": [], )";
  const std::string cases_text[] = {
      layer_prefix + R"("type": "Lstm", "retrun_sequences": true}]}]})",
      layer_prefix + R"("type": "Gru"}]}]})",
      layer_prefix + R"("type": "Dense", "kernel": {"rows": 2, "cols": 2, "data": "AAAAAA=="}}]}]})",
      layer_prefix + R"("type": "Dense", "bias": "A*AA"}]}]})",
      layer_prefix + R"("type": "Dense", "units": -3}]}]})",
      layer_prefix + R"("units": 1}]}]})",
  };
  const Case cases[] = {
      {cases_text[0].c_str(), StatusCode::kInvalidArgument,
       "graphs[0].layers[0] ('enc_lstm'): unknown field 'retrun_sequences' in bad.tcir.json"},
      {cases_text[1].c_str(), StatusCode::kInvalidArgument, "unknown type 'Gru' (one of Dense, "},
      {cases_text[2].c_str(), StatusCode::kInvalidArgument,
       "layers[0] ('enc_lstm').kernel: data holds 1 floats, expected 4 (2 x 2)"},
      {cases_text[3].c_str(), StatusCode::kInvalidArgument,
       "'bias' is not valid base64 (at character 1)"},
      {cases_text[4].c_str(), StatusCode::kInvalidArgument, "'units' is -3, outside"},
      {cases_text[5].c_str(), StatusCode::kNotFound, "missing field 'type'"},
      {R"({"format": "tunecast-ir", "version": 2, "graphs": []})", StatusCode::kUnsupported,
       "version 2 is newer than this compiler's 1"},
      {R"({"format": "onnx", "version": 1, "graphs": []})", StatusCode::kInvalidArgument,
       "format is 'onnx', expected 'tunecast-ir'"},
      {R"({"format": "tunecast-ir", "version": 1})", StatusCode::kNotFound,
       "missing field 'graphs' in bad.tcir.json"},
      {R"({"format": "tunecast-ir", "version": 1, "graphs": [], "metadata": {"a": 1}})",
       StatusCode::kInvalidArgument, "metadata.a: must be a string, is number"},
      {R"({"format": "tunecast-ir", "version": 1, "graphs": [],
           "vocabulary": {"token_values": [1], "end_tokens": [70000]}})",
       StatusCode::kInvalidArgument, "'end_tokens[0]' is 70000, outside [0, 65535]"},
      {R"({"format": "tunecast-ir", "version": 1, "graphs": [)", StatusCode::kInvalidArgument,
       "malformed JSON in bad.tcir.json"},
  };
  // The line-break inside layer_prefix (kept for readability) is legal JSON whitespace.
  for (const Case& c : cases) {
    const std::string expected = c.message;
    CAPTURE(expected);
    ir::Model model;
    const Status s = parse_ir_json(c.text, "bad.tcir.json", &model);
    CHECK_MESSAGE(s.code() == c.code, std::string(s.message()));
    CHECK_MESSAGE(contains(s, c.message), std::string(s.message()));
  }
  ir::Model missing;
  CHECK(read_ir_json("/nonexistent/model.tcir.json", &missing).code() == StatusCode::kNotFound);
}

TEST_CASE("ir check: structural errors are caught with readable messages") {
  REQUIRE_MODELS(dir);
  ir::Model good;
  REQUIRE(keras::import_ktn(dir + "/gfx908_ConvAsm1x1U", &good).is_ok());
  REQUIRE(check_ir(good).is_ok());
  struct Case {
    const char* name;
    std::function<void(ir::Model&)> mutate;
    const char* message;
  };
  const Case cases[] = {
      {"kernel rows", [](ir::Model& m) { m.graphs[0].layers[1].kernel.rows = 31; },
       "graph 'encoder' layer 'lstm' (Lstm): kernel is [31, 512], expected [32, 512]"},
      {"kernel data", [](ir::Model& m) { m.graphs[0].layers[0].kernel.data.pop_back(); },
       "kernel is [8, 32] but holds 255 floats"},
      {"bias size", [](ir::Model& m) { m.graphs[1].layers[3].bias.resize(37); },
       "layer 'dense_1' (Dense): bias has 37 floats, expected 38"},
      {"NaN", [](ir::Model& m) {
         m.graphs[1].layers[2].recurrent.data[9] = std::numeric_limits<float>::quiet_NaN();
       }, "layer 'lstm_3' (Lstm): recurrent contains NaN at index 9"},
      {"value id", [](ir::Model& m) { m.graphs[0].layers[2].inputs[0] = 99; },
       "input value id 99 out of range"},
      {"topological order",
       [](ir::Model& m) { std::swap(m.graphs[0].layers[1], m.graphs[0].layers[2]); },
       "layer 'lstm_1' (Lstm): reads value 2 ('lstm') before it is computed"},
      {"arity", [](ir::Model& m) { m.graphs[1].layers[3].inputs.push_back(0); },
       "layer 'dense_1' (Dense): takes 1 inputs, has 2"},
      {"output shape", [](ir::Model& m) { m.graphs[0].values[1].cols = 33; },
       "output value 1 ('dense') is [8, 33], expected [8, 32]"},
      {"logits width",
       [](ir::Model& m) {
         m.vocabulary.token_values.pop_back();
         m.vocabulary.end_tokens = {0};
       },
       "logits 'dense_1' have 38 cols but the vocabulary has 37 tokens"},
      {"end token", [](ir::Model& m) { m.vocabulary.end_tokens.push_back(38); },
       "vocabulary: end token 38 out of range (38 tokens)"},
      {"parameter token", [](ir::Model& m) { m.vocabulary.parameters[2].tokens = {5, 37}; },
       "parameter 'p2' allows end token 37"},
      {"state link", [](ir::Model& m) { m.seq2seq->states[3].encoder_output = 4; },
       "seq2seq: state 3 (decoder input 4, encoder output 4, decoder output 4) out of range"},
      {"uncovered input", [](ir::Model& m) { m.seq2seq->states.pop_back(); },
       "decoder input 4 is fed by 0 links"},
      {"state shape", [](ir::Model& m) { m.seq2seq->states[0].decoder_output = 0; },
       "state 0: decoder input 'input_3' has 128 cols, encoder output 'lstm/h' 128, decoder "
       "output 'dense_1' 38"},
      {"per-beam rows in a sequence graph", [](ir::Model& m) { m.graphs[0].values[0].rows = 0; },
       "graph 'encoder': value 0 ('input_1') has 0 rows"},
      {"batched encoder", [](ir::Model& m) { m.graphs[0].batched = true; },
       "LSTM there runs one step per beam"},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    ir::Model model = good;
    c.mutate(model);
    const Status s = check_ir(model);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(contains(s, c.message), std::string(s.message()));
  }
}
