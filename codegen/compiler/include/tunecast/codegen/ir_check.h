// Structural checks of an ir::Model before anything is emitted: every importer's output and every
// interchange file passes through here, so the blob writer and the C++ emitter may assume a
// well-formed model. Checks value ids, layer arity per type, matrix shapes against value shapes
// and units, topological order, seq2seq links and state shapes, vocabulary indices against the
// vocabulary and the logits width, and that every weight is finite. The first problem found is
// returned as kInvalidArgument with graph, layer and field named.
#pragma once

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast {

Status check_ir(const ir::Model& model);

}  // namespace tunecast
