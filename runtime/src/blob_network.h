// The blob interpreter seen as a beam-search Network (tunecast/beam_search.h): the decoder graph
// of a verified Model run by the graph executor over caller scratch.
#pragma once

#include <cstring>

#include "constraint_vm.h"
#include "graph_executor.h"
#include "tunecast/beam_search.h"
#include "tunecast/model.h"

namespace tunecast::detail {

class BlobNetwork {
 public:
  // `decoder` is bound for the search's beam width; the caller feeds the first step.
  BlobNetwork(const Model& model, const GraphInfo& decoder, GraphArena* arena)
      : model_(model), seq2seq_(model.root()->seq2seq()), decoder_(decoder), arena_(arena) {}

  int parameter_count() const { return model_.parameter_count(); }
  int decode_position(int step) const { return model_.decode_position(step); }
  int token_count() const { return model_.token_count(); }
  int64_t token_value(int token) const { return model_.token_value(token); }
  bool is_end_token(int token) const { return model_.is_end_token(token); }
  bool token_allowed(int position, int token) const { return model_.token_allowed(position, token); }
  bool end_competes() const {
    return model_.root()->vocabulary()->end_policy() == schema::EndPolicy::FixedLength;
  }
  bool logits_are_probabilities() const { return seq2seq_->logits_are_probabilities(); }
  const char* parameter_name(int position) const { return model_.parameter_name(position); }

  bool constraints_pass(const Problem& problem, int step, const int64_t* values) const {
    const auto* constraints = model_.root()->constraints();
    for (int i = model_.constraint_begin(step); i < model_.constraint_begin(step + 1); ++i) {
      const schema::Constraint* c = constraints->Get(model_.constraint_order()[i]);
      int64_t result = 0;
      if (!vm::evaluate(vm::view_of(c->program()), problem, values, &result) || result == 0) {
        return false;
      }
    }
    return true;
  }

  Status run_decoder() { return execute_graph(decoder_, arena_); }

  float* scores(int row) {
    const uint32_t logits = decoder_.graph->outputs()->Get(seq2seq_->logits_output());
    return arena_->value[logits] + row * arena_->stride[logits];
  }

  void feed(int row, int parent_row, int token) {
    const auto& inputs = *decoder_.graph->inputs();
    const auto& outputs = *decoder_.graph->outputs();
    const uint32_t token_value = inputs[seq2seq_->token_input()];
    arena_->value[token_value][row * arena_->stride[token_value]] = static_cast<float>(token);
    if (seq2seq_->states()) {
      for (const schema::StateLink* link : *seq2seq_->states()) {
        const uint32_t dst = inputs[link->decoder_input()];
        const uint32_t src = outputs[link->decoder_output()];
        std::memcpy(arena_->value[dst] + row * arena_->stride[dst],
                    arena_->value[src] + parent_row * arena_->stride[src],
                    decoder_.value_cols[dst] * sizeof(float));
      }
    }
  }

  void set_live(int rows) {
    for (uint32_t v = 0; v < decoder_.value_count; ++v) {
      if (decoder_.value_rows[v] == 0) arena_->rows[v] = static_cast<size_t>(rows);
    }
  }

 private:
  const Model& model_;
  const schema::Seq2Seq* seq2seq_;
  const GraphInfo& decoder_;
  GraphArena* arena_;
};

}  // namespace tunecast::detail
