// Joining an imported network with its rules: validity constraints (a kernel's .tcr file) and the
// feature encoding (a model's .tce file) compiled into the same artifact.
#pragma once

#include <string>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// Compiles `rules_path` (may be empty) and `encoding_path` (may be empty) into `model`.
// Parameter names: a rules file's `params` statement names the positions; a model whose positions
// carry only placeholder names (p0, p1, ...) takes them, otherwise they must agree. The encoding
// may come from either file (not both). The encoding's required fields become the union of what
// the encoding and the constraints read, so predict can name a missing field.
Status attach_rules(ir::Model* model, const std::string& rules_path,
                    const std::string& encoding_path);

}  // namespace tunecast::codegen
