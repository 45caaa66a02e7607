// Structural checks of an ir::Model before anything is emitted: every importer's output and every
// interchange file passes through here, so the blob writer and the C++ emitter may assume a
// well-formed model. Checks value ids, layer arity per type, matrix shapes against value shapes
// and units, topological order, seq2seq links and state shapes, vocabulary indices against the
// vocabulary and the logits width, and that every weight is finite. The first problem found is
// returned as kInvalidArgument with graph, layer and field named.
// A model with no graphs is a kernel definition alone (codegen::definition_model: no seq2seq, no
// encoding, every parameter with its domain): it passes when its vocabulary, domains and
// constraints do, and the runtime loads it as a blob without a predictor (format version 3); any
// other model without graphs is refused ("model 'X' has no graphs").
#pragma once

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast {

Status check_ir(const ir::Model& model);

}  // namespace tunecast
