// Runs a verified graph inside caller memory. Every value is a [rows, cols] matrix whose rows are
// padded to a multiple of kPanelWidth floats (the stride), so products can write whole panels.
#pragma once

#include <cstddef>

#include "tunecast/kernel_types.h"
#include "tunecast/model.h"

namespace tunecast::detail {

inline size_t padded_cols(size_t cols) {
  return (cols + kernels::kPanelWidth - 1) / kernels::kPanelWidth * kernels::kPanelWidth;
}

struct GraphArena {
  float* value[kMaxValues] = {};
  size_t rows[kMaxValues] = {};    // effective rows (batch substituted)
  size_t stride[kMaxValues] = {};  // floats between rows
  float* temp = nullptr;
  int batch = 1;
};

// Floats a graph needs for `batch` beams (values + temporary region).
size_t graph_floats(const GraphInfo& info, int batch);

// Lays the graph's values out in `base` (graph_floats(info, batch) floats).
void bind_graph(const GraphInfo& info, int batch, float* base, GraphArena* arena);

// Runs every layer. Inputs must already be written into their values. Fails only on bad token
// indices fed to an Embedding (the one data-dependent check).
Status execute_graph(const GraphInfo& info, GraphArena* arena);

// Copies a dense [rows, cols] matrix into / out of a padded value.
void write_value(GraphArena* arena, uint32_t id, size_t cols, const float* src);
void read_value(const GraphArena& arena, uint32_t id, size_t cols, float* dst);

}  // namespace tunecast::detail
