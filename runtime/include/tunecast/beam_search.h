// The constrained beam search, written once over a "Network" so that the blob interpreter
// (runtime/src/predict.cpp) and generated predictors (tunecast emit-cpp) make exactly the same
// choices. Per step: one batched decoder run over the live beams, log-softmax, then for every beam
// its tokens best-first, each checked against the constraints of the current step only while
// it could still enter the top k. Survivors' decoder states are gathered into the next step's
// inputs.
//
// A Network provides (all sizes fixed before the search starts; nothing allocates):
//
//   int parameter_count() const;                 // positions to emit
//   int decode_position(int step) const;         // the position emitted at step (decode_order)
//   int token_count() const;                     // vocabulary size
//   int64_t token_value(int token) const;
//   bool is_end_token(int token) const;
//   bool token_allowed(int position, int token) const;  // vocabulary restriction only
//   bool end_competes() const;                   // EndPolicy::FixedLength (MIOpen's procedure)
//   bool logits_are_probabilities() const;       // decoder already applied softmax
//   const char* parameter_name(int position) const;
//   bool constraints_pass(const Problem&, int step, const int64_t* values) const;
//   Status run_decoder();                        // one step for every live row
//   float* scores(int row);                      // that row's decoder output, token_count() floats
//   void feed(int row, int parent_row, int token);  // next step's input row: token + parent's state
//   void set_live(int rows);                     // rows of the next decoder run
//
// The caller has already run the encoder and fed the first step (start token, one live row).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tunecast/layers.h"
#include "tunecast/predict.h"

namespace tunecast::beam {

struct Hypothesis {
  float score;
  int32_t length;
  int64_t values[kMaxParameters];
  uint16_t tokens[kMaxParameters];
};

// A possible extension of beam `beam` by `token`; `dead` marks an end token that won a slot
// (MIOpen's procedure: the hypothesis stops there, incomplete).
struct Expansion {
  float score;
  int32_t beam;
  int32_t token;
  bool dead;
};

// Total order: higher score, then lower beam, then higher token (MIOpen's priority queue pops
// the larger token index among equal scores).
inline bool better(const Expansion& a, const Expansion& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.beam != b.beam) return a.beam < b.beam;
  return a.token > b.token;
}

// The search's own arrays, owned by the caller: hyps and next_hyps hold `beam` entries each, top
// `beam`, order token_count().
struct Workspace {
  Hypothesis* hyps;
  Hypothesis* next_hyps;
  Expansion* top;
  int32_t* order;
};

// Runs the search with options.beam_width beams (already checked against the workspace) and writes
// up to min(beam, capacity) candidates, best first. `problem` null: model constraints skipped.
template <typename Network>
Status beam_search(Network& net, const Problem* problem, const PredictOptions& options,
                   const Workspace& work, Candidate* out, int capacity, PredictInfo* info) {
  const int beam = options.beam_width;
  const bool end_competes = net.end_competes();
  const bool use_constraints = options.use_model_constraints && problem != nullptr;
  const int tokens = net.token_count();
  const int positions = net.parameter_count();
  Hypothesis* hyps = work.hyps;
  Hypothesis* next_hyps = work.next_hyps;
  Expansion* top = work.top;
  int32_t* order = work.order;
  hyps[0].score = 0.0f;
  hyps[0].length = 0;
  int live = 1;

  // Values and tokens are stored by parameter position; the decoder emits them in its decode
  // order (the position itself unless the vocabulary has a decode_order).
  for (int step = 0; step < positions; ++step) {
    const int position = net.decode_position(step);
    TUNECAST_RETURN_IF_ERROR(net.run_decoder());

    // `top` holds the best `chosen` expansions as a heap ordered by `better`, which puts the worst
    // at top[0]: a candidate meets the current k-th best in O(1) and enters in O(log k).
    int chosen = 0;
    for (int b = 0; b < live; ++b) {
      float* scores = net.scores(b);
      if (net.logits_are_probabilities()) {
        // Normalized first: an ensemble's output is a sum of its members' distributions.
        float sum = 0.0f;
        for (int t = 0; t < tokens; ++t) sum += scores[t];
        for (int t = 0; t < tokens; ++t) scores[t] = std::log(scores[t] / sum);
      } else {
        layers::log_softmax(scores, static_cast<size_t>(tokens));
      }
      Hypothesis& h = hyps[b];
      // Once k expansions are held, a token scoring below the k-th best cannot enter: leave it
      // out before sorting (ties stay in; `better` settles them).
      const float kth_best = chosen == beam ? top[0].score : -INFINITY;
      int count = 0;
      for (int t = 0; t < tokens; ++t) {
        if (std::isnan(scores[t])) {
          return Status::error(StatusCode::kCorruptModel,
                               "the decoder produced NaN scores at position %d (non-finite "
                               "weights or inputs)",
                               position);
        }
        if (h.score + scores[t] >= kth_best) {
          if (net.token_allowed(position, t) || (end_competes && net.is_end_token(t))) {
            order[count++] = t;
          }
        } else if (!info->beam_pruned && !net.is_end_token(t) && net.token_allowed(position, t)) {
          info->beam_pruned = true;  // a parameter token the full beam leaves out (an end ends nothing)
        }
      }
      std::sort(order, order + count, [scores](int32_t x, int32_t y) {
        return scores[x] != scores[y] ? scores[x] > scores[y] : x > y;
      });
      for (int i = 0; i < count; ++i) {
        const int t = order[i];
        const Expansion e{h.score + scores[t], b, t, net.is_end_token(t)};
        // Tokens come best-first: once one cannot enter the top k, none after it can.
        if (chosen == beam && !better(e, top[0])) {
          for (int j = i; j < count && !info->beam_pruned; ++j) {
            info->beam_pruned = !net.is_end_token(order[j]);
          }
          break;
        }
        if (!e.dead) {
          h.values[position] = net.token_value(t);
          if (use_constraints && !net.constraints_pass(*problem, step, h.values)) {
            ++info->rejected_by_constraints;
            continue;
          }
          if (options.validator &&
              !options.validator.check(options.validator.context, problem, position, h.values)) {
            ++info->rejected_by_validator;
            continue;
          }
        }
        if (chosen < beam) {
          top[chosen++] = e;
          std::push_heap(top, top + chosen, better);
        } else {
          info->beam_pruned = info->beam_pruned || !top[0].dead;  // top[0], the worst, leaves
          std::pop_heap(top, top + chosen, better);
          top[chosen - 1] = e;
          std::push_heap(top, top + chosen, better);
        }
      }
    }
    std::sort_heap(top, top + chosen, better);  // best first

    // Survivors become the next beams; their decoder states move into the decoder's inputs.
    int next_live = 0;
    for (int i = 0; i < chosen; ++i) {
      const Expansion& e = top[i];
      if (e.dead) continue;
      Hypothesis& n = next_hyps[next_live];
      n = hyps[e.beam];
      n.values[position] = net.token_value(e.token);
      n.tokens[position] = static_cast<uint16_t>(e.token);
      n.length = step + 1;
      n.score = e.score;
      ++next_live;
    }
    if (next_live == 0) {
      info->failed_position = position;
      return Status::error(StatusCode::kNoValidCandidate,
                           "no valid candidate: every hypothesis was rejected or ended at "
                           "position %d (%s)",
                           position, net.parameter_name(position));
    }
    if (step + 1 < positions) {
      int row = 0;
      for (int i = 0; i < chosen; ++i) {
        if (top[i].dead) continue;
        net.feed(row, top[i].beam, top[i].token);
        ++row;
      }
      net.set_live(next_live);
    }
    std::swap(hyps, next_hyps);
    live = next_live;
  }

  // Distinct vectors, best first: a later hypothesis with an earlier one's values is merged into
  // it (dropped; the earlier one scores at least as well).
  int n = 0;
  for (int i = 0; i < live && n < capacity; ++i) {
    bool duplicate = false;
    for (int j = 0; j < n && !duplicate; ++j) {
      duplicate = std::equal(out[j].values, out[j].values + positions, hyps[i].values);
    }
    if (duplicate) {
      ++info->duplicates_merged;
      continue;
    }
    Candidate& c = out[n++];
    c = Candidate();
    c.score = hyps[i].score;
    c.length = positions;
    for (int p = 0; p < positions; ++p) {
      c.values[p] = hyps[i].values[p];
      c.tokens[p] = hyps[i].tokens[p];
    }
  }
  info->candidates = n;
  return Status::ok();
}

// Argument checks shared by every predict entry point.
inline Status check_beam(const PredictOptions& options, int capacity, int max_beam) {
  if (options.beam_width < 1 || options.beam_width > max_beam) {
    return Status::error(StatusCode::kInvalidArgument, "beam width %d is outside 1..%d",
                         options.beam_width, max_beam);
  }
  if (capacity < 1) {
    return Status::error(StatusCode::kInvalidArgument, "output capacity must be at least 1");
  }
  return Status::ok();
}

}  // namespace tunecast::beam
