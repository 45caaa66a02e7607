// Prediction from a blob: the problem's encoding, the encoder graph, then the constrained beam
// search shared with generated predictors (tunecast/beam_search.h) over the decoder graph
// (blob_network.h), all inside the caller's scratch.
#include "tunecast/predict.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "blob_network.h"
#include "constraint_vm.h"
#include "graph_executor.h"
#include "tunecast/beam_search.h"

namespace tunecast {
namespace {

using detail::GraphArena;

constexpr size_t kAlign = 64;

size_t align_bytes(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

using beam::Expansion;
using beam::Hypothesis;

// Carves the caller's scratch into typed regions. With no memory (base null) it only counts the
// bytes the same sequence of take() calls needs.
class ScratchCursor {
 public:
  ScratchCursor(void* base, size_t size) : base_(static_cast<unsigned char*>(base)), size_(size) {
    const size_t skew = reinterpret_cast<uintptr_t>(base_) % kAlign;
    offset_ = skew ? kAlign - skew : 0;
  }
  template <typename T>
  T* take(size_t count) {
    const size_t bytes = align_bytes(count * sizeof(T));
    if (base_ == nullptr) {
      offset_ += bytes;
      return nullptr;
    }
    if (offset_ + bytes > size_) {
      overflow_ = true;
      return nullptr;
    }
    T* p = reinterpret_cast<T*>(base_ + offset_);
    offset_ += bytes;
    return p;
  }
  bool overflow() const { return overflow_; }
  size_t used() const { return offset_; }

  // Bytes a sequence of take() calls needs, including the worst initial misalignment.
  static size_t worst_case(size_t aligned_bytes) { return aligned_bytes + kAlign; }

 private:
  unsigned char* base_;
  size_t size_;
  size_t offset_ = 0;
  bool overflow_ = false;
};

// The beam search's regions of the caller's scratch, in one place: scratch_bytes() sizes them by
// carving from no memory, the predict entry points carve them for real.
struct BeamScratch {
  float* encoder = nullptr;   // the encoder graph's values (batch 1)
  float* decoder = nullptr;   // the decoder graph's values for `beam` rows
  float* features = nullptr;  // the encoder input encode_problem() writes
  Hypothesis* hyps = nullptr;
  Hypothesis* next_hyps = nullptr;
  Expansion* top = nullptr;
  int32_t* order = nullptr;
};

void carve_beam_scratch(const Model& model, int beam, ScratchCursor* cursor, BeamScratch* out) {
  const schema::Seq2Seq* s = model.root()->seq2seq();
  const GraphInfo& enc = model.graph(static_cast<int>(s->encoder()));
  const GraphInfo& dec = model.graph(static_cast<int>(s->decoder()));
  const uint32_t enc_input = enc.graph->inputs()->Get(0);
  out->encoder = cursor->take<float>(detail::graph_floats(enc, 1));
  out->decoder = cursor->take<float>(detail::graph_floats(dec, beam));
  out->features = cursor->take<float>(size_t{enc.value_rows[enc_input]} * enc.value_cols[enc_input]);
  out->hyps = cursor->take<Hypothesis>(beam);
  out->next_hyps = cursor->take<Hypothesis>(beam);
  out->top = cursor->take<Expansion>(beam);
  out->order = cursor->take<int32_t>(model.token_count());
}

size_t beam_search_bytes(const Model& model, int beam) {
  ScratchCursor counter(nullptr, 0);
  BeamScratch unused;
  carve_beam_scratch(model, beam, &counter, &unused);
  return counter.used();
}

// The checks both predict entry points make, then the carving.
Status prepare_beam_search(const Model& model, const PredictOptions& options, int capacity,
                           void* scratch, size_t scratch_size, BeamScratch* layout) {
  if (!model.loaded() || !model.is_seq2seq()) {
    return Status::error(StatusCode::kInvalidArgument,
                         "model is not loaded or is not a sequence-to-sequence predictor");
  }
  TUNECAST_RETURN_IF_ERROR(beam::check_beam(options, capacity, kMaxBeamWidth));
  const int beam = options.beam_width;
  if (scratch_size < model.scratch_bytes(beam)) {
    return Status::error(StatusCode::kBufferTooSmall,
                         "scratch holds %zu bytes, beam width %d needs %zu", scratch_size, beam,
                         model.scratch_bytes(beam));
  }
  ScratchCursor cursor(scratch, scratch_size);
  carve_beam_scratch(model, beam, &cursor, layout);
  if (cursor.overflow()) {
    return Status::error(StatusCode::kBufferTooSmall, "scratch buffer too small");
  }
  return Status::ok();
}

Status beam_search(const Model& model, const float* features, size_t feature_count,
                   const Problem* problem, const PredictOptions& options,
                   const BeamScratch& layout, Candidate* out, int capacity, PredictInfo* info) {
  const int beam = options.beam_width;
  const schema::Seq2Seq* s = model.root()->seq2seq();
  const GraphInfo& enc = model.graph(static_cast<int>(s->encoder()));
  const GraphInfo& dec = model.graph(static_cast<int>(s->decoder()));
  const uint32_t enc_input = enc.graph->inputs()->Get(0);
  const size_t input_cols = enc.value_cols[enc_input];
  if (enc.graph->inputs()->size() != 1 ||
      feature_count != size_t{enc.value_rows[enc_input]} * input_cols) {
    return Status::error(StatusCode::kInvalidArgument,
                         "the encoder reads %u x %zu features, %zu were given",
                         enc.value_rows[enc_input], input_cols, feature_count);
  }

  // Encoder.
  GraphArena enc_arena;
  detail::bind_graph(enc, 1, layout.encoder, &enc_arena);
  detail::write_value(&enc_arena, enc_input, input_cols, features);
  TUNECAST_RETURN_IF_ERROR(detail::execute_graph(enc, &enc_arena));

  // Decoder inputs for the first step: one live beam.
  GraphArena dec_arena;
  detail::bind_graph(dec, beam, layout.decoder, &dec_arena);
  const auto& dec_inputs = *dec.graph->inputs();
  const auto& enc_outputs = *enc.graph->outputs();
  auto set_live = [&](int live) {
    for (uint32_t v = 0; v < dec.value_count; ++v) {
      if (dec.value_rows[v] == 0) dec_arena.rows[v] = static_cast<size_t>(live);
    }
  };
  set_live(1);
  const uint32_t token_value = dec_inputs[s->token_input()];
  dec_arena.value[token_value][0] = static_cast<float>(s->start_token());
  if (s->states()) {
    for (const schema::StateLink* link : *s->states()) {
      const uint32_t dst = dec_inputs[link->decoder_input()];
      const uint32_t src = enc_outputs[link->encoder_output()];
      std::memcpy(dec_arena.value[dst], enc_arena.value[src], dec.value_cols[dst] * sizeof(float));
    }
  }
  if (s->contexts()) {
    for (const schema::ContextLink* link : *s->contexts()) {
      const uint32_t dst = dec_inputs[link->decoder_input()];
      const uint32_t src = enc_outputs[link->encoder_output()];
      for (size_t r = 0; r < dec_arena.rows[dst]; ++r) {
        std::memcpy(dec_arena.value[dst] + r * dec_arena.stride[dst],
                    enc_arena.value[src] + r * enc_arena.stride[src],
                    dec.value_cols[dst] * sizeof(float));
      }
    }
  }

  detail::BlobNetwork network(model, dec, &dec_arena);
  return beam::beam_search(network, problem, options,
                           beam::Workspace{layout.hyps, layout.next_hyps, layout.top, layout.order},
                           out, capacity, info);
}

}  // namespace

size_t Model::scratch_bytes(int max_beam) const {
  if (root_ == nullptr) return 0;
  const int batch = std::max(1, std::min(max_beam, kMaxBeamWidth));
  size_t bytes = 0;
  for (int g = 0; g < graph_count_; ++g) {
    bytes = std::max(bytes, align_bytes(detail::graph_floats(graphs_[g], batch) * sizeof(float)));
  }
  if (is_seq2seq()) bytes = std::max(bytes, beam_search_bytes(*this, batch));
  return ScratchCursor::worst_case(bytes);
}

Status encode_problem(const Model& model, const Problem& problem, float* features,
                      size_t feature_count, uint32_t* out_of_range_fields) {
  const schema::Encoding* enc = model.root() ? model.root()->encoding() : nullptr;
  if (enc == nullptr) {
    return Status::error(StatusCode::kInvalidArgument,
                         "this model declares no feature encoding; pass features directly");
  }
  const size_t count = size_t{enc->rows()} * enc->cols();
  if (feature_count < count) {
    return Status::error(StatusCode::kBufferTooSmall, "feature buffer holds %zu of %zu floats",
                         feature_count, count);
  }
  const uint32_t missing = model.required_fields() & ~problem.present;
  if (missing != 0) {
    int field = 0;
    while (!((missing >> field) & 1u)) ++field;
    return Status::error(StatusCode::kInvalidArgument,
                         "problem field '%s' is missing (the model's encoding or rules read it)",
                         problem_field_name(static_cast<ProblemField>(field)));
  }
  std::memset(features, 0, count * sizeof(float));
  if (enc->features()) {
    for (uint32_t i = 0; i < enc->features()->size(); ++i) {
      const schema::FeatureEncoding* f = enc->features()->Get(i);
      int64_t value = 0;
      if (!vm::evaluate(vm::view_of(f->program()), problem, nullptr, &value)) {
        return Status::error(StatusCode::kInvalidArgument,
                             "encoding feature %u (encode %u %u: '%s') cannot be computed for this "
                             "problem (division by zero or overflow)",
                             i, f->row(), f->col(), f->text() ? f->text()->c_str() : "");
      }
      float* slot = features + size_t{f->row()} * enc->cols() + f->col();
      switch (f->transform()) {
        case schema::FeatureTransform::Raw:
          *slot = static_cast<float>(value);
          break;
        case schema::FeatureTransform::Log2:
          *slot = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(value, 1))));
          break;
        case schema::FeatureTransform::OneHot:
          if (value >= 0 && value < static_cast<int64_t>(f->width())) slot[value] = 1.0f;
          break;
        case schema::FeatureTransform::Standardize:
          *slot = (static_cast<float>(value) - f->mean()) / f->std();
          break;
      }
    }
  }
  if (out_of_range_fields) *out_of_range_fields = model.fields_out_of_range(problem);
  return Status::ok();
}

Status predict(const Model& model, const Problem& problem, const PredictOptions& options,
               void* scratch, size_t scratch_size, Candidate* out, int capacity,
               PredictInfo* info) {
  PredictInfo local;
  if (info == nullptr) info = &local;
  *info = PredictInfo();
  if (!model.loaded() || !model.is_seq2seq() || model.root()->encoding() == nullptr) {
    return Status::error(StatusCode::kInvalidArgument,
                         "predict needs a sequence-to-sequence model with a feature encoding");
  }
  BeamScratch layout;
  TUNECAST_RETURN_IF_ERROR(
      prepare_beam_search(model, options, capacity, scratch, scratch_size, &layout));
  const size_t feature_count =
      size_t{model.root()->encoding()->rows()} * model.root()->encoding()->cols();
  TUNECAST_RETURN_IF_ERROR(
      encode_problem(model, problem, layout.features, feature_count, &info->out_of_range_fields));
  const Status status = beam_search(model, layout.features, feature_count, &problem, options, layout,
                                    out, capacity, info);
  check_applicability(model, problem, &info->not_applicable);
  info->arch_not_covered =
      problem.has(ProblemField::kArch) && !model.covers_arch(problem.get(ProblemField::kArch));
  return status;
}

Status predict_from_features(const Model& model, const float* features, size_t feature_count,
                             const Problem* problem, const PredictOptions& options, void* scratch,
                             size_t scratch_size, Candidate* out, int capacity, PredictInfo* info) {
  PredictInfo local;
  if (info == nullptr) info = &local;
  *info = PredictInfo();
  BeamScratch layout;
  TUNECAST_RETURN_IF_ERROR(
      prepare_beam_search(model, options, capacity, scratch, scratch_size, &layout));
  return beam_search(model, features, feature_count, problem, options, layout, out, capacity, info);
}

Status run_graph(const Model& model, int graph_index, int batch, const float* const* inputs,
                 int input_count, float* const* outputs, int output_count, void* scratch,
                 size_t scratch_size) {
  if (!model.loaded() || graph_index < 0 || graph_index >= model.graph_count()) {
    return Status::error(StatusCode::kInvalidArgument, "graph %d does not exist", graph_index);
  }
  const GraphInfo& g = model.graph(graph_index);
  if (batch < 1 || batch > kMaxBeamWidth || (!g.batched && batch != 1)) {
    return Status::error(StatusCode::kInvalidArgument,
                         "batch %d is invalid for graph '%s' (sequence graphs run batch 1)", batch,
                         g.graph->name() ? g.graph->name()->c_str() : "");
  }
  if (input_count != static_cast<int>(g.graph->inputs()->size()) ||
      output_count != static_cast<int>(g.graph->outputs()->size())) {
    return Status::error(StatusCode::kInvalidArgument,
                         "graph takes %u inputs and gives %u outputs (%d and %d passed)",
                         g.graph->inputs()->size(), g.graph->outputs()->size(), input_count,
                         output_count);
  }
  if (scratch_size < model.scratch_bytes(batch)) {
    return Status::error(StatusCode::kBufferTooSmall, "scratch holds %zu bytes, %zu needed",
                         scratch_size, model.scratch_bytes(batch));
  }
  ScratchCursor cursor(scratch, scratch_size);
  float* base = cursor.take<float>(detail::graph_floats(g, batch));
  GraphArena arena;
  detail::bind_graph(g, batch, base, &arena);
  for (int i = 0; i < input_count; ++i) {
    const uint32_t id = g.graph->inputs()->Get(i);
    detail::write_value(&arena, id, g.value_cols[id], inputs[i]);
  }
  TUNECAST_RETURN_IF_ERROR(detail::execute_graph(g, &arena));
  for (int i = 0; i < output_count; ++i) {
    const uint32_t id = g.graph->outputs()->Get(i);
    detail::read_value(arena, id, g.value_cols[id], outputs[i]);
  }
  return Status::ok();
}

bool check_applicability(const Model& model, const Problem& problem, int* first_failed) {
  const auto* conditions = model.root() ? model.root()->applicability() : nullptr;
  if (conditions == nullptr) return true;
  for (uint32_t i = 0; i < conditions->size(); ++i) {
    int64_t result = 0;
    if (!vm::evaluate(vm::view_of(conditions->Get(i)->program()), problem, nullptr, &result) || result == 0) {
      if (first_failed) *first_failed = static_cast<int>(i);
      return false;
    }
  }
  return true;
}

const char* applicability_text(const Model& model, int index) {
  const auto* conditions = model.root() ? model.root()->applicability() : nullptr;
  if (conditions == nullptr || index < 0 || static_cast<uint32_t>(index) >= conditions->size()) return "";
  const flatbuffers::String* text = conditions->Get(static_cast<uint32_t>(index))->text();
  return text ? text->c_str() : "";
}

bool check_candidate(const Model& model, const Problem& problem, const int64_t* values, int length,
                     int* first_failed) {
  const auto* constraints = model.root()->constraints();
  if (constraints == nullptr) return true;
  for (uint32_t i = 0; i < constraints->size(); ++i) {
    const schema::Constraint* c = constraints->Get(i);
    if (static_cast<int>(c->position()) >= length) continue;
    int64_t result = 0;
    if (!vm::evaluate(vm::view_of(c->program()), problem, values, &result) || result == 0) {
      if (first_failed) *first_failed = static_cast<int>(i);
      return false;
    }
  }
  return true;
}

}  // namespace tunecast
