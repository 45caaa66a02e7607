// Joining an imported network with its rules: validity constraints (a kernel's .tcr file) and the
// feature encoding (a model's .tce file) compiled into the same artifact.
#pragma once

#include <string>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// Compiles `rules_path` (may be empty) and `encoding_path` (may be empty) into `model`.
// Parameter names: a rules file's `params` statement names the positions; a model whose positions
// carry only placeholder names (p0, p1, ...) takes them, otherwise they must agree. The encoding
// may come from either file (not both). The encoding's required fields become the union of what
// the encoding and the constraints read, so predict can name a missing field.
// A model whose metadata records `encoding_digest` (tools/train.py, tools/ensemble.py) must get
// the encoding it was trained with: a .tce of the same shape but other features is refused.
Status attach_rules(ir::Model* model, const std::string& rules_path,
                    const std::string& encoding_path);

// "fnv1a64:<16 hex>" over the encoding's input shape and features, canonically written (the
// trainer's tools/tunecast_train/features.py encoding_digest computes the same from .tce text):
// `input R x C`, then per feature `R C TRANSFORM[:ARGS] EXPR` with the blanks of EXPR removed.
std::string encoding_digest(const ir::Encoding& encoding);

// A kernel definition alone as a model (docs/kernels.md): no graph, a vocabulary of the domains,
// the constraints, applicability and problem schema; the search runs on it without a predictor.
// Every parameter needs a domain. `source` names the definition in messages and metadata.
Status definition_model(const rules::CompiledRules& rules, const std::string& source, ir::Model* model);

}  // namespace tunecast::codegen
