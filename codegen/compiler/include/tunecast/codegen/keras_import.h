// Importer for Keras models saved in frugally-deep's JSON format, the format MIOpen ships its
// kernel tuning nets (KTN, seq2seq LSTMs) and TunaNet solver-selection MLPs in.
//
// Supported layer classes: InputLayer, Dense, LSTM, Embedding, ReLU, Add, Activation, Softmax,
// Concatenate, Dropout (identity at inference), Bidirectional(LSTM) with merge_mode concat or sum,
// and Conv1D (stride 1, dilation 1, padding valid or same). Anything else is rejected with
// StatusCode::kUnsupported naming the class, the layer and the file.
//
// Shapes: a Keras tensor [batch, ...] becomes an IR value [rows, cols] (see tunecast_model.fbs):
//  - sequence graph (`batched` false): [None, T, F] -> [T, F]; [None, F] -> [1, F];
//  - step graph (`batched` true): [None, F] and [None, 1, F] -> [0, F] (one row per beam);
//    [None, T, F] with T > 1 -> [T, F], shared by every beam (e.g. an attention memory).
// Weights are checked against the shapes the config declares and must be finite.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast::keras {

// One frugally-deep model JSON -> one graph. `source` names the file in error messages;
// `batched` makes it a step graph (a decoder step). The graph is named after the Keras model.
Status import_graph(const nlohmann::json& model_json, std::string_view source, bool batched,
                    ir::Graph* out);

// Reads and parses a JSON file (kNotFound when absent, kInvalidArgument with the parser's
// position when malformed).
Status load_json_file(const std::string& path, nlohmann::json* out);

// MIOpen kernel tuning net from "<prefix>_encoder.ktn.model", "<prefix>_decoder.ktn.model" and
// "<prefix>_metadata.ktn.model", where the file name part of prefix is "<arch>_<solver>".
// graphs[0] = encoder (sequence graph), graphs[1] = decoder (step graph); decoder input 0 is the
// previous token, inputs 1..4 are the LSTM states (from encoder outputs 0..3, then decoder outputs
// 1..4), decoder output 0 the logits; start token 0. Vocabulary: token index -> value from
// metadata "decodings"/"tunings", value -1 marks end tokens, num_tuning_params positions p0..pN-1
// each allowing every non-end token, EndPolicy::FixedLength. Metadata: arch, solver, source,
// encoder_hash, decoder_hash, predict_type, num_tuning_params (and direction when chosen).
//
// kUnsupported when the parameter count differs between directions (use the overload below), when
// the count is chosen by the first token (predict_type 1), or when a token's value is not an
// integer (e.g. "Default"): tunecast vocabularies hold integers only.
Status import_ktn(const std::string& prefix, ir::Model* out);
// Same for one convolution direction: "fwd", "bwd" or "wrw" (a key of num_tuning_params).
Status import_ktn(const std::string& prefix, std::string_view direction, ir::Model* out);

// MIOpen TunaNet "<arch>.tn.model": one sequence graph ("tunanet"), no seq2seq, no vocabulary.
// "<arch>_metadata.tn.model" next to it, when present, adds metadata: arch, num_cu, num_inputs,
// num_outputs, num_solvers, num_algos, solver_offset (= num_outputs - num_solvers: the solver
// scores are the outputs from there on), solvers (names in score order, comma-separated),
// features (comma-separated) with feature_mean / feature_std.
Status import_tn(const std::string& path, ir::Model* out);

// Keras-computed input/output pairs that frugally-deep stores under "tests" in a model JSON.
// Shapes exclude the batch axis (batch 1), values are row-major. kNotFound when there are none.
struct TestVector {
  std::vector<std::vector<float>> inputs, outputs;
  std::vector<std::vector<uint32_t>> input_shapes, output_shapes;
};
Status read_test_vectors(const std::string& path, std::vector<TestVector>* out);

}  // namespace tunecast::keras
