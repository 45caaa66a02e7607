#include "tunecast/codegen/assemble.h"

#include <algorithm>

#include "tunecast/codegen/rules_compiler.h"

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

Status attach_rules(ir::Model* model, const std::string& rules_path,
                    const std::string& encoding_path) {
  std::vector<std::string> fields;
  if (!rules_path.empty()) {
    std::vector<std::string> names;
    for (const ir::Parameter& p : model->vocabulary.parameters) names.push_back(p.name);
    rules::CompileOptions options;
    if (!has_placeholder_names(model->vocabulary)) options.params = names;
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
    model->constraints = std::move(compiled.constraints);
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
    TUNECAST_RETURN_IF_ERROR(rules::compile_file(encoding_path, rules::CompileOptions(), &compiled));
    if (!compiled.encoding) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s declares no encoding (it needs an 'input ROWS x COLS' statement)",
                           encoding_path.c_str());
    }
    model->encoding = std::move(compiled.encoding);
    add_fields(&fields, compiled.fields_used);
  }
  if (model->encoding) add_fields(&model->encoding->required_fields, fields);
  return Status::ok();
}

}  // namespace tunecast::codegen
