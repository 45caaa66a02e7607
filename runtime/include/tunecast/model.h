// A loaded model: a verified, read-only view over the caller's blob bytes. Loading copies no
// weights and allocates nothing; the bytes must outlive the Model and stay unchanged.
//
//   tunecast::Model model;
//   tunecast::Status status = tunecast::Model::load(bytes, size, &model);
//   if (!status) { fprintf(stderr, "%s\n", status.message()); ... }
//   std::vector<unsigned char> scratch(model.scratch_bytes(/*max_beam=*/10));
//
// The blob must be 8-byte aligned; 32 is recommended (mmap'd files and tunecast-embedded arrays are).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tunecast/problem.h"
#include "tunecast/status.h"
#include "tunecast/tunecast_model_generated.h"

namespace tunecast {

// 2: vocabulary.decode_order (a runtime of version 1 would decode such a model in the wrong order);
// 3: a problem schema of its own or no graph (a kernel definition alone); blobs without these are
// still written as version 1 or 2.
constexpr uint32_t kFormatVersion = 3;

// Structural limits checked at load. They size the fixed tables of a Model, so a blob beyond them
// is refused with a clear message rather than handled with heap memory.
constexpr int kMaxGraphs = 4;
constexpr int kMaxValues = 192;      // per graph
constexpr int kMaxLayers = 128;      // per graph
constexpr int kMaxGraphIo = 48;      // inputs or outputs per graph (an 8-member mlp ensemble needs 41)
constexpr int kMaxParameters = 16;   // tuning parameters per prediction
constexpr int kMaxTokens = 4096;     // vocabulary size
constexpr int kMaxConstraints = 512;
constexpr int kMaxBeamWidth = 256;
constexpr int kMaxArchs = 64;        // architectures a model lists as covered

// Model::load's options. The default load reads no weight (it maps them); checking the weights'
// checksum reads every weight byte once (docs/benchmarks.md has its cost).
struct LoadOptions {
  // Refuse a blob whose weights do not hash to the checksum it records (kCorruptModel), or that
  // records none (kNotFound).
  bool verify_checksum = false;
};

// Value of a symbolic vocabulary token t (one whose label is not a number): kSymbolicTokenBase - t.
constexpr int64_t kSymbolicTokenBase = -1000;

struct GraphInfo {
  const schema::Graph* graph = nullptr;
  uint32_t value_count = 0;
  uint32_t value_rows[kMaxValues] = {};   // 0: one row per beam
  uint32_t value_cols[kMaxValues] = {};
  bool batched = false;
  // value whose memory v uses: v itself, or for a batched LSTM's sequence output that LSTM's h
  // (the same numbers), so a wide beam keeps one copy.
  uint32_t storage[kMaxValues] = {};
  // Floats of the per-layer temporary region: fixed, per row, and per row of a batched LSTM step
  // (which runs layers::kLstmStepRows rows at a time). Layers use the region one after another.
  size_t temp_floats_fixed = 0;
  size_t temp_floats_per_row = 0;
  size_t temp_floats_per_step_row = 0;
  size_t temp_floats(int batch) const;
  uint64_t multiply_adds_fixed = 0;       // per run, fixed-row part
  uint64_t multiply_adds_per_row = 0;     // per run, per beam
};

class Model {
 public:
  // Verifies `data` (FlatBuffers verifier, then shapes, indices, vocabulary and constraint code)
  // and fills `out`. On error `out` is left empty.
  static Status load(const void* data, size_t size, Model* out);
  static Status load(const void* data, size_t size, const LoadOptions& options, Model* out);

  // The FNV-1a 64 checksum of the weights the blob records (schema: weights_fnv1a64), 0 if none.
  uint64_t recorded_weights_checksum() const;
  // Hashes the weights now (every weight byte: a pass over the blob's weights).
  uint64_t compute_weights_checksum() const;
  // ok when the two agree; kCorruptModel when they differ (a changed weight); kNotFound when the
  // blob records no checksum (written before the field).
  Status verify_checksum() const;

  // Architectures the model covers (schema: archs, or for older blobs the metadata "arch"), as
  // arch_code values; none listed (arch_count() 0): every arch counts as covered.
  int arch_count() const { return arch_count_; }
  int64_t arch(int index) const { return arch_codes_[index]; }
  bool covers_arch(int64_t code) const {
    for (int i = 0; i < arch_count_; ++i) {
      if (arch_codes_[i] == code) return true;
    }
    return arch_count_ == 0;
  }

  bool loaded() const { return root_ != nullptr; }
  const schema::Model* root() const { return root_; }
  const GraphInfo& graph(int index) const { return graphs_[index]; }
  int graph_count() const { return graph_count_; }
  bool is_seq2seq() const { return root_->seq2seq() != nullptr; }
  // Whether the model predicts at all: false for a kernel definition compiled alone (no graph;
  // docs/kernels.md), which still has parameters, domains, constraints and a problem schema.
  bool has_predictor() const { return graph_count_ > 0; }

  // The problem the model's encoding and constraints read: its own schema, or the built-in
  // convolution problem.
  ProblemSchema problem_schema() const { return ProblemSchema(root_ ? root_->problem() : nullptr); }
  // The kernel definition's ordered domain of a parameter position (ascending, distinct), when the
  // blob carries one; false and nothing written otherwise (the vocabulary's values are the space).
  bool parameter_domain(int position, const int64_t** values, int* count) const;

  // Bytes of scratch memory a prediction with beams up to `max_beam` needs (run_graph with
  // batches up to `max_beam` as well).
  size_t scratch_bytes(int max_beam) const;

  int parameter_count() const { return parameter_count_; }
  int token_count() const { return token_count_; }
  int64_t token_value(int token) const { return root_->vocabulary()->token_values()->Get(token); }
  bool is_end_token(int token) const { return (end_mask_[token >> 6] >> (token & 63)) & 1u; }
  // Whether `token` may be emitted at `position` (vocabulary restriction, not constraints).
  bool token_allowed(int position, int token) const {
    return (allowed_mask_[position][token >> 6] >> (token & 63)) & 1u;
  }
  const char* parameter_name(int position) const;
  // The parameter position the decoder emits at `step` (0 <= step < parameter_count()): the
  // vocabulary's decode_order, or `step` itself. Candidates and constraints use positions.
  int decode_position(int step) const { return decode_order_[step]; }
  // Whether some step emits another position than its own (the vocabulary reorders parameters).
  bool reorders_parameters() const {
    for (int s = 0; s < parameter_count_; ++s) {
      if (decode_order_[s] != s) return true;
    }
    return false;
  }
  // Printable form of a token ("Default", "16"), or nullptr when the vocabulary has no labels.
  const char* token_label(int token) const;

  // Constraints sorted by decode step: those checked at `step` are
  // constraint_order()[constraint_begin(step) .. constraint_begin(step + 1)).
  const uint16_t* constraint_order() const { return constraint_order_; }
  int constraint_begin(int step) const { return constraint_begin_[step]; }

  // Problem fields the encoding reads (bit per field of problem_schema()).
  uint32_t required_fields() const { return required_fields_; }

  // The encoding's training ranges, resolved to fields at load (several ranges of one field
  // intersect): the bits of fields that have one, and the bits of those `problem` lies outside.
  uint32_t ranged_fields() const { return ranged_fields_; }
  uint32_t fields_out_of_range(const Problem& problem) const;

  // Multiply-adds of one greedy prediction (encoder + parameter_count() decoder steps), for the
  // benchmark's arithmetic floor.
  uint64_t greedy_multiply_adds() const;

  // Metadata value for `key`, or nullptr.
  const char* metadata(const char* key) const;

 private:
  const schema::Model* root_ = nullptr;
  int graph_count_ = 0;
  GraphInfo graphs_[kMaxGraphs];
  int parameter_count_ = 0;
  int token_count_ = 0;
  uint64_t end_mask_[kMaxTokens / 64] = {};
  uint64_t allowed_mask_[kMaxParameters][kMaxTokens / 64] = {};  // built at load from the vocabulary
  uint8_t decode_order_[kMaxParameters] = {};
  uint16_t constraint_order_[kMaxConstraints] = {};
  int constraint_begin_[kMaxParameters + 1] = {};
  uint32_t required_fields_ = 0;
  uint32_t ranged_fields_ = 0;
  int64_t range_min_[kMaxProblemFields] = {};
  int64_t range_max_[kMaxProblemFields] = {};
  int arch_count_ = 0;
  int64_t arch_codes_[kMaxArchs] = {};
};

// FNV-1a 64 of `size` bytes continuing from `hash` (start with kFnv1a64Offset).
constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
uint64_t fnv1a64(const void* data, size_t size, uint64_t hash);

// The weights checksum of a (verified) model table: what the compiler records in weights_fnv1a64.
uint64_t weights_checksum(const schema::Model* model);

}  // namespace tunecast
