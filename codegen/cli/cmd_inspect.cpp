// inspect: what a blob holds, for people (table) and tools (--json).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.h"

namespace tunecast::cli {
namespace {

std::string shape_text(const GraphInfo& g, uint32_t id) {
  const std::string rows = g.value_rows[id] ? std::to_string(g.value_rows[id]) : "beams";
  return "[" + rows + ", " + std::to_string(g.value_cols[id]) + "]";
}

size_t layer_weights(const schema::Layer* l) {
  size_t n = 0;
  if (l->kernel()) n += size_t{l->kernel()->rows()} * l->kernel()->cols();
  if (l->recurrent()) n += size_t{l->recurrent()->rows()} * l->recurrent()->cols();
  if (l->bias() && l->bias()->size()) {
    // Biases are stored padded; count the logical length.
    n += l->type() == schema::LayerType::Lstm ? 4 * size_t{l->units()} : l->units();
  }
  return n;
}

std::vector<std::string> split(const char* text) {
  std::vector<std::string> parts;
  if (text == nullptr) return parts;
  std::string current;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
      if (*p == '\0') break;
    } else if (*p != ' ') {
      current += *p;
    }
  }
  return parts;
}

std::string checksum_text(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(value));
  return text;
}

// "ok", "mismatch" or "absent" (a blob compiled before the checksum field).
const char* checksum_state(const Model& model) {
  if (model.recorded_weights_checksum() == 0) return "absent";
  return model.recorded_weights_checksum() == model.compute_weights_checksum() ? "ok" : "mismatch";
}

std::vector<std::string> covered_arch_names(const Model& model) {
  std::vector<std::string> names;
  for (int i = 0; i < model.arch_count(); ++i) {
    char name[kMaxArchNameLength + 1];
    if (format_arch(model.arch(i), name, sizeof name)) names.push_back(name);
  }
  return names;
}

}  // namespace

int cmd_inspect(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {}, {"json"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast inspect MODEL.tcm [--json]\n\n"
        "Prints a model's metadata, layers with shapes and weight counts, vocabulary per\n"
        "parameter position, constraints, feature encoding, the conditions under which the kernel\n"
        "applies (its rules' `applies` statements) and the scratch memory a prediction\n"
        "needs. --json prints one object: archs, solver, precisions, directions (from the\n"
        "metadata or the encoding's ranges), parameters, decode_order (the positions in the order\n"
        "the decoder emits them), applies, metadata, bytes, weights,\n"
        "scratch_bytes, greedy_multiply_adds, weights_checksum {recorded, computed, state}, ...\n\n"
        "The weights checksum (FNV-1a 64 over every weight byte, recorded by the compiler) is\n"
        "checked: 'ok', 'mismatch' (a weight changed after compilation: exit status 1) or\n"
        "'absent' (compiled before tunecast recorded one). archs are the architectures the\n"
        "model covers; predict flags others.\n");
    return 0;
  }
  if (!status) return usage_error("inspect", status.message());
  if (args.positional().size() != 1) return usage_error("inspect", "expected one MODEL");
  LoadedModel loaded;
  status = load_model_file(args.positional()[0], &loaded, /*verify_weights=*/false);  // reported below
  if (!status) return fail(status);
  const Model& model = loaded.model;
  const schema::Model* root = model.root();

  size_t total_weights = 0;
  for (int g = 0; g < model.graph_count(); ++g) {
    for (const schema::Layer* l : *model.graph(g).graph->layers()) total_weights += layer_weights(l);
  }

  if (args.has("json")) {
    nlohmann::json j;
    j["file"] = args.positional()[0];
    j["name"] = root->name() ? root->name()->str() : "";
    j["format_version"] = root->format_version();
    j["bytes"] = loaded.file.size();
    j["weights"] = total_weights;
    nlohmann::json meta = nlohmann::json::object();
    if (root->metadata()) {
      for (const schema::MetadataEntry* e : *root->metadata()) {
        meta[e->key()->str()] = e->value() ? e->value()->str() : "";
      }
    }
    j["metadata"] = meta;
    j["archs"] = model.arch_count() ? covered_arch_names(model) : split(model.metadata("arch"));
    j["solver"] = model.metadata("solver") ? model.metadata("solver") : "";
    j["precisions"] = split(model.metadata("precisions"));
    j["directions"] = split(model.metadata("directions"));
    // A trained model records no "directions": its encoding's training range of dir tells them.
    const schema::Encoding* enc = root->encoding();
    for (uint32_t i = 0; j["directions"].empty() && enc && enc->ranges() && i < enc->ranges()->size(); ++i) {
      const schema::FeatureRange* range = enc->ranges()->Get(i);
      if (range->field()->string_view() != "dir") continue;
      j["directions"] = symbol_names(ProblemField::kDir, range->min(), range->max());
    }
    j["seq2seq"] = model.is_seq2seq();
    nlohmann::json params = nlohmann::json::array();
    for (int p = 0; p < model.parameter_count(); ++p) {
      nlohmann::json values = nlohmann::json::array();
      for (int t = 0; t < model.token_count(); ++t) {
        if (model.token_allowed(p, t)) values.push_back(model.token_value(t));
      }
      params.push_back({{"name", model.parameter_name(p)}, {"values", values}});
    }
    j["parameters"] = params;
    nlohmann::json order = nlohmann::json::array();  // positions in the order the decoder emits them
    for (int s = 0; s < model.parameter_count(); ++s) order.push_back(model.decode_position(s));
    j["decode_order"] = order;
    j["tokens"] = model.token_count();
    j["constraints"] = root->constraints() ? root->constraints()->size() : 0;
    nlohmann::json applies = nlohmann::json::array();
    for (uint32_t i = 0; root->applicability() && i < root->applicability()->size(); ++i) {
      applies.push_back(applicability_text(model, static_cast<int>(i)));
    }
    j["applies"] = applies;
    j["has_encoding"] = root->encoding() != nullptr;
    j["scratch_bytes"] = {{"1", model.scratch_bytes(1)}, {"10", model.scratch_bytes(10)},
                          {"100", model.scratch_bytes(100)}};
    j["greedy_multiply_adds"] = model.greedy_multiply_adds();
    const char* state = checksum_state(model);
    j["weights_checksum"] = {{"recorded", model.recorded_weights_checksum() ? checksum_text(model.recorded_weights_checksum()) : ""},
                             {"computed", checksum_text(model.compute_weights_checksum())},
                             {"state", state}};
    std::printf("%s\n", json_text(j, 2).c_str());
    return std::string(state) == "mismatch" ? 1 : 0;
  }

  std::printf("model %s (format %u, %zu bytes)\n", root->name() ? root->name()->c_str() : "",
              root->format_version(), loaded.file.size());
  if (root->metadata()) {
    for (const schema::MetadataEntry* e : *root->metadata()) {
      std::printf("  %-18s %s\n", e->key()->c_str(), e->value() ? e->value()->c_str() : "");
    }
  }
  for (int g = 0; g < model.graph_count(); ++g) {
    const GraphInfo& info = model.graph(g);
    std::printf("\ngraph %d '%s' (%s)\n", g, info.graph->name() ? info.graph->name()->c_str() : "",
                info.batched ? "step graph: one row per beam" : "sequence graph");
    std::printf("  inputs:");
    for (uint32_t id : *info.graph->inputs()) std::printf(" %s", shape_text(info, id).c_str());
    std::printf("\n");
    for (const schema::Layer* l : *info.graph->layers()) {
      std::string in, out;
      for (uint32_t id : *l->inputs()) in += (in.empty() ? "" : " ") + shape_text(info, id);
      for (uint32_t id : *l->outputs()) out += (out.empty() ? "" : " ") + shape_text(info, id);
      std::printf("  %-10s %-12s %s -> %s  %zu weights%s\n", schema::EnumNameLayerType(l->type()),
                  l->name() ? l->name()->c_str() : "", in.c_str(), out.c_str(), layer_weights(l),
                  l->type() == schema::LayerType::Dense && l->activation() != schema::Activation::Linear
                      ? (std::string(" ") + schema::EnumNameActivation(l->activation())).c_str()
                      : "");
    }
    std::printf("  outputs:");
    for (uint32_t id : *info.graph->outputs()) std::printf(" %s", shape_text(info, id).c_str());
    std::printf("\n");
  }
  std::printf("\nweights: %zu floats (%.1f KiB)\n", total_weights, total_weights * 4 / 1024.0);
  const char* state = checksum_state(model);
  if (std::string(state) == "absent") {
    std::printf("weights checksum: absent (compiled before tunecast recorded one), computed %s\n",
                checksum_text(model.compute_weights_checksum()).c_str());
  } else {
    std::printf("weights checksum: %s %s%s\n", checksum_text(model.recorded_weights_checksum()).c_str(), state,
                std::string(state) == "ok" ? ""
                                           : (" (the weights hash to " + checksum_text(model.compute_weights_checksum()) +
                                              ": a weight changed after compilation)").c_str());
  }
  if (model.arch_count() > 0) {
    std::printf("covers architectures:");
    for (const std::string& name : covered_arch_names(model)) std::printf(" %s", name.c_str());
    std::printf("\n");
  }
  if (model.is_seq2seq()) {
    std::printf("vocabulary: %d tokens, end tokens:", model.token_count());
    for (int t = 0; t < model.token_count(); ++t) {
      if (model.is_end_token(t)) std::printf(" %d", t);
    }
    std::printf(" (end policy %s)\n", schema::EnumNameEndPolicy(root->vocabulary()->end_policy()));
    if (model.reorders_parameters()) {
      std::printf("decode order (positions as the decoder emits them):");
      for (int s = 0; s < model.parameter_count(); ++s) std::printf(" %d", model.decode_position(s));
      std::printf("\n");
    }
    for (int p = 0; p < model.parameter_count(); ++p) {
      std::printf("  %d %-18s", p, model.parameter_name(p));
      for (int t = 0; t < model.token_count(); ++t) {
        if (model.token_allowed(p, t)) {
          const char* label = model.token_label(t);
          if (label != nullptr) {
            std::printf(" %s", label);
          } else {
            std::printf(" %lld", static_cast<long long>(model.token_value(t)));
          }
        }
      }
      int step = 0;  // constraints are grouped by the decode step that emits this position
      while (model.decode_position(step) != p) ++step;
      std::printf("   (%d constraints)\n", model.constraint_begin(step + 1) - model.constraint_begin(step));
    }
  } else if (!model.has_predictor()) {  // a kernel definition: its domains are the search space
    std::printf("parameters (a definition: their domains are the space):\n");
    for (int p = 0; p < model.parameter_count(); ++p) {
      const int64_t* values = nullptr;
      int count = 0;
      std::printf("  %d %-18s", p, model.parameter_name(p));
      if (model.parameter_domain(p, &values, &count)) {
        for (int i = 0; i < count; ++i) std::printf(" %lld", static_cast<long long>(values[i]));
      }
      int step = 0;  // as above: constraints grouped by the step that sets this position
      while (model.decode_position(step) != p) ++step;
      std::printf("   (%d constraints)\n", model.constraint_begin(step + 1) - model.constraint_begin(step));
    }
  }
  if (const schema::Encoding* enc = root->encoding()) {
    std::printf("feature encoding: [%u, %u] input from %u statements; reads:", enc->rows(),
                enc->cols(), enc->features() ? enc->features()->size() : 0);
    if (enc->required_fields()) {
      for (const auto* f : *enc->required_fields()) std::printf(" %s", f->c_str());
    }
    std::printf("\n");
  }
  if (root->applicability() && root->applicability()->size() > 0) {
    std::printf("applies when (reported by predict, table and eval, not enforced):\n");
    for (uint32_t i = 0; i < root->applicability()->size(); ++i) {
      std::printf("  %s\n", applicability_text(model, static_cast<int>(i)));
    }
  }
  std::printf("scratch bytes: beam 1: %zu, beam 10: %zu, beam 100: %zu\n", model.scratch_bytes(1),
              model.scratch_bytes(10), model.scratch_bytes(100));
  std::printf("multiply-adds per greedy prediction: %llu\n",
              static_cast<unsigned long long>(model.greedy_multiply_adds()));
  if (std::string(state) == "mismatch") {
    std::fprintf(stderr, "tunecast inspect: weights checksum mismatch: a weight changed after compilation\n");
    return 1;
  }
  return 0;
}

}  // namespace tunecast::cli
