// The rules language (docs/rules_language.md): validity constraints over (problem, parameter
// prefix) and the input feature encoding, compiled to bytecode for the runtime's stack machine
// (runtime/src/constraint_vm.h). Host-only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast::rules {

// An encoder feature a definition derives from the problem (`feature log2 EXPR`).
struct DerivedFeature {
  std::string transform;  // "raw" or "log2"
  std::string text;       // the expression's source text
};

struct CompiledRules {
  std::string kernel;                       // `kernel NAME` ("" if none)
  // The problem's fields (`field` statements, or CompileOptions::problem); empty: the built-in
  // convolution problem.
  std::vector<ir::ProblemFieldDef> problem;
  std::vector<std::string> params;          // from `params` / `param` statements (empty if none)
  // Per parameter, its ordered domain: `param NAME in SET`, else the intersection of its constant
  // `require NAME in SET` rules; empty: none.
  std::vector<std::vector<int64_t>> domains;
  std::vector<DerivedFeature> features;     // `feature` statements
  std::vector<ir::Constraint> constraints;  // position = max param position referenced (0 if none)
  std::vector<ir::Constraint> applicability;  // `applies` statements (problem alone, position 0)
  std::optional<ir::Encoding> encoding;     // present if the text has an `input` statement
  std::vector<std::string> fields_used;     // canonical problem field names read anywhere
};

struct CompileOptions {
  // Parameter names from elsewhere (a model's vocabulary), used when the text has no `params`
  // statement; when it has one, it must list the same names in the same order. Empty: none.
  std::vector<std::string> params;
  // Values for the text's `option NAME = DEFAULT` statements (e.g. which reading of an ambiguous
  // DB key to check). Names the text does not declare are ignored.
  std::map<std::string, int64_t, std::less<>> defines;
  // The model's decode order (its vocabulary's decode_order: step s emits parameter
  // decode_order[s]). A constraint is placed at the first step at which every parameter it reads
  // is known. Empty: the parameters' own order.
  std::vector<uint8_t> decode_order;
  // The problem's fields when the text declares none (an encoding or rules file compiled for a
  // kernel definition's model); empty: the built-in convolution problem.
  std::vector<ir::ProblemFieldDef> problem;
};

// Whether every parameter has a domain (a definition a search can run on without a model).
inline bool has_domains(const CompiledRules& rules) {
  if (rules.params.empty() || rules.domains.size() != rules.params.size()) return false;
  for (const auto& d : rules.domains) {
    if (d.empty()) return false;
  }
  return true;
}

// `source` names the file in messages: "ConvAsm1x1U.tcr:12:5: unknown name 'kmult'".
Status compile(std::string_view text, std::string_view source, CompiledRules* out);

// Same, but the parameter names come from elsewhere (e.g. a model's vocabulary) when the text has
// no params statement; if it has one it must match.
Status compile_with_params(std::string_view text, std::string_view source, const std::vector<std::string>& params,
                           CompiledRules* out);

// Both of the above, plus option values.
Status compile(std::string_view text, std::string_view source, const CompileOptions& options, CompiledRules* out);

// Reads `path` and compiles it; messages name the path.
Status compile_file(const std::string& path, const CompileOptions& options, CompiledRules* out);

}  // namespace tunecast::rules
