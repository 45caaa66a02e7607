#include "tunecast/codegen/assemble.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/model.h"

namespace tunecast::codegen {
namespace {

bool has_placeholder_names(const ir::Vocabulary& v) {
  for (size_t i = 0; i < v.parameters.size(); ++i) {
    if (v.parameters[i].name != "p" + std::to_string(i)) return false;
  }
  return true;
}

void add_fields(std::vector<std::string>* fields, const std::vector<std::string>& more) {
  for (const std::string& f : more) {
    if (std::find(fields->begin(), fields->end(), f) == fields->end()) fields->push_back(f);
  }
}

}  // namespace

std::string encoding_digest(const ir::Encoding& encoding) {
  std::string canonical = "input " + std::to_string(encoding.rows) + " x " + std::to_string(encoding.cols) + "\n";
  for (const ir::FeatureEncoding& f : encoding.features) {
    std::string transform;
    char number[64];
    switch (f.transform) {
      case ir::FeatureTransform::Raw: transform = "raw"; break;
      case ir::FeatureTransform::Log2: transform = "log2"; break;
      case ir::FeatureTransform::OneHot: transform = "onehot:" + std::to_string(f.width); break;
      case ir::FeatureTransform::Standardize:
        std::snprintf(number, sizeof number, ":%.9g:%.9g", static_cast<double>(f.mean), static_cast<double>(f.std));
        transform = std::string("standardize") + number;
        break;
    }
    std::string expr;
    for (const char c : f.text) {
      if (!std::isspace(static_cast<unsigned char>(c))) expr += c;
    }
    canonical += std::to_string(f.row) + " " + std::to_string(f.col) + " " + transform + " " + expr + "\n";
  }
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: an identity check, not a security one
  for (const char c : canonical) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  char out[32];
  std::snprintf(out, sizeof out, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return out;
}

Status attach_rules(ir::Model* model, const std::string& rules_path,
                    const std::string& encoding_path) {
  std::vector<std::string> fields;
  if (!rules_path.empty()) {
    std::vector<std::string> names;
    for (const ir::Parameter& p : model->vocabulary.parameters) names.push_back(p.name);
    rules::CompileOptions options;
    if (!has_placeholder_names(model->vocabulary)) options.params = names;
    options.decode_order = model->vocabulary.decode_order;
    rules::CompiledRules compiled;
    TUNECAST_RETURN_IF_ERROR(rules::compile_file(rules_path, options, &compiled));
    if (!compiled.params.empty()) {
      if (compiled.params.size() != model->vocabulary.parameters.size()) {
        return Status::error(StatusCode::kInvalidArgument,
                             "%s names %zu parameters, the model predicts %zu",
                             rules_path.c_str(), compiled.params.size(),
                             model->vocabulary.parameters.size());
      }
      for (size_t i = 0; i < compiled.params.size(); ++i) {
        model->vocabulary.parameters[i].name = compiled.params[i];
      }
    }
    model->problem = compiled.problem;
    for (size_t i = 0; i < compiled.domains.size() && i < model->vocabulary.parameters.size(); ++i) {
      model->vocabulary.parameters[i].domain = compiled.domains[i];
    }
    if (!compiled.kernel.empty() && !model->metadata.count("solver")) model->metadata["solver"] = compiled.kernel;
    model->constraints = std::move(compiled.constraints);
    model->applicability = std::move(compiled.applicability);
    if (compiled.encoding) model->encoding = std::move(compiled.encoding);
    add_fields(&fields, compiled.fields_used);
  }
  if (!encoding_path.empty()) {
    if (model->encoding) {
      return Status::error(StatusCode::kInvalidArgument,
                           "the encoding is declared twice (in the rules file and in %s)",
                           encoding_path.c_str());
    }
    rules::CompiledRules compiled;
    rules::CompileOptions options;
    options.problem = model->problem;  // a definition's fields, read by the encoding too
    TUNECAST_RETURN_IF_ERROR(rules::compile_file(encoding_path, options, &compiled));
    if (!compiled.encoding) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s declares no encoding (it needs an 'input ROWS x COLS' statement)",
                           encoding_path.c_str());
    }
    model->encoding = std::move(compiled.encoding);
    add_fields(&fields, compiled.fields_used);
  }
  if (model->encoding) add_fields(&model->encoding->required_fields, fields);
  const auto recorded = model->metadata.find("encoding_digest");
  if (model->encoding && recorded != model->metadata.end()) {
    const std::string digest = encoding_digest(*model->encoding);
    if (digest != recorded->second) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s is not the encoding this model was trained with (its features give %s, "
                           "the model's metadata encoding_digest is %s): pass the model.tce exported "
                           "with it",
                           encoding_path.empty() ? rules_path.c_str() : encoding_path.c_str(),
                           digest.c_str(), recorded->second.c_str());
    }
  }
  return Status::ok();
}

Status definition_model(const rules::CompiledRules& rules, const std::string& source, ir::Model* model) {
  *model = ir::Model();
  if (rules.params.empty()) return Status::error(StatusCode::kInvalidArgument, "%s declares no parameters", source.c_str());
  for (size_t p = 0; p < rules.params.size(); ++p) {
    if (p >= rules.domains.size() || rules.domains[p].empty()) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s: parameter '%s' has no domain (write 'param %s in {...}', docs/kernels.md)",
                           source.c_str(), rules.params[p].c_str(), rules.params[p].c_str());
    }
  }
  // The vocabulary: every domain value once, ascending; each position allows its domain's tokens.
  std::vector<int64_t> values;
  for (const auto& domain : rules.domains) values.insert(values.end(), domain.begin(), domain.end());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.size() > static_cast<size_t>(kMaxTokens)) {
    return Status::error(StatusCode::kUnsupported, "%s: the domains hold %zu distinct values (at most %d)", source.c_str(),
                         values.size(), kMaxTokens);
  }
  model->vocabulary.token_values = values;
  for (size_t p = 0; p < rules.params.size(); ++p) {
    ir::Parameter parameter;
    parameter.name = rules.params[p];
    parameter.domain = rules.domains[p];
    for (int64_t v : rules.domains[p]) {
      parameter.tokens.push_back(static_cast<uint16_t>(std::lower_bound(values.begin(), values.end(), v) - values.begin()));
    }
    model->vocabulary.parameters.push_back(std::move(parameter));
  }
  model->problem = rules.problem;
  model->constraints = rules.constraints;
  model->applicability = rules.applicability;
  model->name = rules.kernel.empty() ? "definition" : rules.kernel;
  if (!rules.kernel.empty()) model->metadata["solver"] = rules.kernel;
  model->metadata["source"] = "kernel definition " + source + " (no predictor)";
  return Status::ok();
}

}  // namespace tunecast::codegen
