// check: a kernel definition alone (docs/kernels.md): its fields, parameters, domains and rules, the
// size of its space; with --timings, every recorded measurement against its rules (recorded failures
// the rules accept, and configs that ran although the rules reject them).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/codegen/timing_db.h"
#include "tunecast/predict.h"

namespace tunecast::cli {
namespace {

const char* kind_name(FieldKind kind) {
  switch (kind) {
    case FieldKind::kInteger: return "int";
    case FieldKind::kEnumeration: return "enum";
    case FieldKind::kArchitecture: return "arch";
  }
  return "?";
}

nlohmann::json definition_json(const rules::CompiledRules& rules) {
  nlohmann::json j;
  j["kernel"] = rules.kernel;
  j["builtin_problem"] = rules.problem.empty();
  nlohmann::json fields = nlohmann::json::array();
  for (const ir::ProblemFieldDef& f : rules.problem) {
    nlohmann::json field{{"name", f.name}, {"kind", kind_name(f.kind)}, {"required", !f.has_default}};
    if (f.kind == FieldKind::kInteger) {
      field["min"] = f.min;
      field["max"] = f.max;
    }
    if (f.kind == FieldKind::kEnumeration) field["symbols"] = f.symbols;
    if (!f.has_default) {
      field["default"] = nullptr;
    } else if (f.kind == FieldKind::kArchitecture) {
      char name[kMaxArchNameLength + 1];
      format_arch(f.default_value, name, sizeof name);
      field["default"] = name;
    } else {
      field["default"] = f.default_value;
    }
    fields.push_back(field);
  }
  j["fields"] = fields;
  nlohmann::json params = nlohmann::json::array();
  double configs = rules.params.empty() ? 0.0 : 1.0;
  for (size_t p = 0; p < rules.params.size(); ++p) {
    const std::vector<int64_t>& domain = p < rules.domains.size() ? rules.domains[p] : std::vector<int64_t>();
    params.push_back({{"name", rules.params[p]}, {"values", domain}});
    configs *= static_cast<double>(domain.size());
  }
  j["params"] = params;
  nlohmann::json features = nlohmann::json::array();
  for (const rules::DerivedFeature& f : rules.features) features.push_back({{"transform", f.transform}, {"text", f.text}});
  j["features"] = features;
  j["rules"] = rules.constraints.size();
  j["applicability"] = rules.applicability.size();
  if (configs < 9e15) {
    j["configs"] = static_cast<int64_t>(configs);
  } else {
    j["configs"] = configs;
  }
  return j;
}

// Every config of the space in odometer order, until `visit` returns false.
template <typename Visit>
void for_each_config(const Model& model, Visit visit) {
  const int n = model.parameter_count();
  const int64_t* values[kMaxParameters];
  int sizes[kMaxParameters];
  for (int p = 0; p < n; ++p) model.parameter_domain(p, &values[p], &sizes[p]);
  int index[kMaxParameters] = {};
  int64_t config[kMaxParameters];
  for (;;) {
    for (int p = 0; p < n; ++p) config[p] = values[p][index[p]];
    if (!visit(config)) return;
    int p = n - 1;
    while (p >= 0 && ++index[p] == sizes[p]) index[p--] = 0;
    if (p < 0) return;
  }
}

}  // namespace

int cmd_check(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"timings", "solver", "limit"}, {"json", "quiet"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast check KERNEL.tcr [--timings DB] [--json] [--limit N]\n\n"
        "Checks a kernel definition (docs/kernels.md): compiles its fields, parameters, domains, rules\n"
        "and features, and counts its space (and, when every field has a default, the configs the\n"
        "rules accept for the default problem).\n\n"
        "  --timings DB  replay every recorded measurement of DB (a timing DB keyed by the definition,\n"
        "                or the MIOpen-keyed one of docs/search.md) against the rules: lists each\n"
        "                recorded failure the rules accept (a rule is missing) and each config that ran\n"
        "                although the rules reject it (a rule is too strict); exit 1 when any.\n"
        "                Configs outside the domains are listed apart, not judged\n"
        "  --limit N     list at most N of each (default 20; the counts are always whole)\n"
        "  --json        the definition as JSON for tools (the trainer reads it): kernel, fields\n"
        "                (name, kind int|enum|arch, min, max, symbols, default, required), params\n"
        "                (name, values), features, configs\n");
    return 0;
  }
  if (!status) return usage_error("check", status.message());
  if (args.positional().size() != 1) return usage_error("check", "expected one KERNEL.tcr");
  const std::string path = args.positional()[0];
  int limit = 20;
  status = args.get_int("limit", 20, &limit);
  if (!status) return usage_error("check", status.message());

  if (is_model_blob(path)) {  // no text to parse: point at the command that reads it
    return usage_error("check", path + " is a compiled model (a .tcm blob): check reads the definition's text "
                                "(KERNEL.tcr); tunecast inspect reads the blob");
  }
  rules::CompiledRules rules;
  status = rules::compile_file(path, rules::CompileOptions(), &rules);
  if (!status) return fail(status);
  nlohmann::json j = definition_json(rules);

  LoadedModel loaded;
  const bool searchable = rules::has_domains(rules);
  if (searchable) {
    status = load_definition(path, &loaded);
    if (!status) return fail(status);
    // The default problem, when every field has a default: how many configs the rules accept.
    const ProblemSchema schema = loaded.model.problem_schema();
    bool all_defaults = !schema.builtin();
    Problem defaults;
    for (int f = 0; all_defaults && f < schema.field_count(); ++f) {
      all_defaults = schema.has_default(f);
      if (all_defaults) defaults.set(f, schema.default_value(f));
    }
    if (all_defaults && j["configs"].get<double>() <= 1e7) {
      int64_t valid = 0;
      for_each_config(loaded.model, [&](const int64_t* config) {
        valid += check_candidate(loaded.model, defaults, config, loaded.model.parameter_count(), nullptr);
        return true;
      });
      j["valid_for_default_problem"] = valid;
    }
  }

  int exit_code = 0;
  if (args.has("timings")) {
    if (!searchable) {
      return fail(Status::error(StatusCode::kInvalidArgument, "%s: --timings needs every parameter's domain", path.c_str()));
    }
    const Model& model = loaded.model;
    const ProblemSchema schema = model.problem_schema();
    codegen::TimingDb db;
    status = codegen::TimingDb::open(args.get("timings"), args.get("solver").empty() ? rules.kernel : args.get("solver"),
                                     &db, &schema);
    if (!status) return fail(status);
    std::vector<std::string> names(rules.params);
    std::vector<int> positions;
    status = codegen::map_parameters(names, db.parameter_names(), &positions);
    if (!status) return fail(Status::error(status.code(), "--timings %s: %s", args.get("timings").c_str(), status.message()));
    int64_t rows = 0, failures = 0, unexplained = 0, too_strict = 0, problems = 0, outside = 0;
    nlohmann::json unexplained_list = nlohmann::json::array(), strict_list = nlohmann::json::array(),
                   outside_list = nlohmann::json::array();
    for (const codegen::TimingProblem& p : db.problems()) {
      codegen::ProblemTimings timings;
      status = db.timings(p.config_id, &timings);
      if (!status) return fail(status);
      ++problems;
      const std::string text = p.text.empty() ? problem_text(model, p.problem) : p.text;
      for (const std::vector<int64_t>& recorded : timings.configs()) {
        std::vector<int64_t> config(names.size());
        for (size_t q = 0; q < names.size(); ++q) config[q] = recorded[positions.empty() ? q : positions[q]];
        const codegen::ProblemTimings::Timing* t = timings.find(recorded);
        ++rows;
        failures += !t->ok;
        std::string values;
        for (size_t q = 0; q < config.size(); ++q) values += (q ? "," : "") + std::to_string(config[q]);
        // Outside the definition's space (a domain narrower than what was measured): no rule is judged by it.
        bool in_domains = true;
        for (size_t q = 0; q < config.size() && in_domains; ++q) {
          in_domains = std::find(rules.domains[q].begin(), rules.domains[q].end(), config[q]) != rules.domains[q].end();
        }
        if (!in_domains) {
          ++outside;
          if (static_cast<int>(outside_list.size()) < limit)
            outside_list.push_back({{"problem", text}, {"config", values}, {"status", t->status}});
          continue;
        }
        const bool accepted = check_candidate(model, p.problem, config.data(), static_cast<int>(config.size()), nullptr);
        if (!t->ok && accepted) {
          ++unexplained;
          if (static_cast<int>(unexplained_list.size()) < limit)
            unexplained_list.push_back({{"problem", text}, {"config", values}, {"status", t->status}});
        }
        if (t->ok && !accepted) {
          ++too_strict;
          if (static_cast<int>(strict_list.size()) < limit) strict_list.push_back({{"problem", text}, {"config", values}});
        }
      }
    }
    j["timings"] = {{"path", args.get("timings")}, {"problems", problems}, {"configs", rows}, {"failed", failures},
                    {"failures_the_rules_accept", unexplained}, {"ran_but_rejected", too_strict},
                    {"failures_listed", unexplained_list}, {"rejected_listed", strict_list},
                    {"outside_domains", outside}, {"outside_listed", outside_list}};
    exit_code = unexplained || too_strict ? 1 : 0;
  }

  if (args.has("json")) {
    std::printf("%s\n", json_text(j, 2).c_str());
    return exit_code;
  }
  std::printf("%s: kernel %s, %s problem (%zu fields), %zu parameters, %zu rules, %zu applicability condition(s)\n",
              path.c_str(), rules.kernel.empty() ? "(unnamed)" : rules.kernel.c_str(),
              rules.problem.empty() ? "MIOpen convolution" : "its own", rules.problem.empty() ? size_t(kProblemFieldCount) : rules.problem.size(),
              rules.params.size(), rules.constraints.size(), rules.applicability.size());
  for (const auto& f : j["fields"]) {
    std::printf("  field %-12s %s", f["name"].get<std::string>().c_str(), f["kind"].get<std::string>().c_str());
    if (f.contains("min")) std::printf(" [%lld..%lld]", f["min"].get<long long>(), f["max"].get<long long>());
    if (f.contains("symbols")) {
      std::string symbols;
      for (const auto& s : f["symbols"]) symbols += (symbols.empty() ? "" : ", ") + s.get<std::string>();
      std::printf(" {%s}", symbols.c_str());
    }
    std::string fallback = f["default"].is_string() ? f["default"].get<std::string>() : f["default"].dump();
    if (f.contains("symbols") && f["default"].is_number()) fallback = f["symbols"][f["default"].get<size_t>()].get<std::string>();
    std::printf("%s\n", f["required"].get<bool>() ? "  (required)" : ("  default " + fallback).c_str());
  }
  for (size_t p = 0; p < rules.params.size(); ++p) {
    std::string values;
    for (int64_t v : rules.domains[p]) values += (values.empty() ? "" : ", ") + std::to_string(v);
    std::printf("  param %-12s %s\n", rules.params[p].c_str(), values.empty() ? "(no domain: a model's vocabulary gives its values)" : ("{" + values + "}").c_str());
  }
  std::printf("space: %s configs", j["configs"].dump().c_str());
  if (j.contains("valid_for_default_problem")) {
    std::printf(", %lld valid for the default problem", j["valid_for_default_problem"].get<long long>());
  }
  std::printf("%s\n", searchable ? "" : " (some parameter has no domain: tune needs a model for this kernel)");
  if (j.contains("valid_for_default_problem") && j["valid_for_default_problem"].get<long long>() == 0) {
    std::fprintf(stderr, "check: warning: no config passes the rules for the default problem: a tune of it has "
                         "nothing to measure\n");
  }
  if (args.has("timings")) {
    const auto& t = j["timings"];
    std::printf("timings %s: %lld problems, %lld configs recorded, %lld failed\n", args.get("timings").c_str(),
                t["problems"].get<long long>(), t["configs"].get<long long>(), t["failed"].get<long long>());
    std::printf("  %lld recorded failures the rules accept%s\n", t["failures_the_rules_accept"].get<long long>(),
                t["failures_the_rules_accept"].get<long long>() ? " (a rule is missing):" : "");
    for (const auto& u : t["failures_listed"]) {
      std::printf("    %s  %s  %s\n", u["problem"].get<std::string>().c_str(), u["config"].get<std::string>().c_str(),
                  u["status"].get<std::string>().c_str());
    }
    std::printf("  %lld configs ran although the rules reject them%s\n", t["ran_but_rejected"].get<long long>(),
                t["ran_but_rejected"].get<long long>() ? " (a rule is too strict):" : "");
    for (const auto& u : t["rejected_listed"]) {
      std::printf("    %s  %s\n", u["problem"].get<std::string>().c_str(), u["config"].get<std::string>().c_str());
    }
    if (t["outside_domains"].get<long long>() > 0) {
      std::printf("  %lld recorded configs lie outside the definition's domains (not judged; the search never "
                  "proposes them):\n",
                  t["outside_domains"].get<long long>());
      for (const auto& u : t["outside_listed"]) {
        std::printf("    %s  %s  %s\n", u["problem"].get<std::string>().c_str(), u["config"].get<std::string>().c_str(),
                    u["status"].get<std::string>().c_str());
      }
    }
  }
  return exit_code;
}

}  // namespace tunecast::cli
