#include "tunecast/codegen/reference_vectors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tunecast/codegen/keras_import.h"
#include "tunecast/predict.h"

namespace tunecast::codegen {
namespace {

using nlohmann::json;

Status read_floats(const json& list, const std::string& path, size_t c, const char* what, size_t i,
                   std::vector<float>* out) {
  if (!list.is_array()) {
    return Status::error(StatusCode::kInvalidArgument, "%s: case %zu: %s[%zu] is not a list of numbers",
                         path.c_str(), c, what, i);
  }
  out->clear();
  out->reserve(list.size());
  for (const json& v : list) {
    if (!v.is_number()) {
      return Status::error(StatusCode::kInvalidArgument, "%s: case %zu: %s[%zu] holds a non-number",
                           path.c_str(), c, what, i);
    }
    out->push_back(v.get<float>());
  }
  return Status::ok();
}

// Floats of graph value `id` at batch 1 (rows 0 = one row per beam).
size_t value_floats(const GraphInfo& g, uint32_t id) {
  return static_cast<size_t>(g.value_rows[id] == 0 ? 1 : g.value_rows[id]) * g.value_cols[id];
}

}  // namespace

Status read_reference_vectors(const std::string& path, ReferenceVectors* out) {
  *out = ReferenceVectors();
  json doc;
  TUNECAST_RETURN_IF_ERROR(keras::load_json_file(path, &doc));
  if (!doc.is_object() || doc.value("format", "") != "tunecast-vectors") {
    return Status::error(StatusCode::kInvalidArgument, "%s: not a tunecast-vectors file (\"format\")",
                         path.c_str());
  }
  if (doc.value("version", 0) != 1) {
    return Status::error(StatusCode::kUnsupported, "%s: tunecast-vectors version %d, this build reads 1",
                         path.c_str(), doc.value("version", 0));
  }
  out->source = doc.value("source", "");
  if (doc.contains("tolerance")) {
    if (!doc["tolerance"].is_number() || !(doc["tolerance"].get<double>() > 0)) {
      return Status::error(StatusCode::kInvalidArgument, "%s: \"tolerance\" must be a positive number",
                           path.c_str());
    }
    out->tolerance = doc["tolerance"].get<double>();
  }
  if (!doc.contains("cases") || !doc["cases"].is_array() || doc["cases"].empty()) {
    return Status::error(StatusCode::kInvalidArgument, "%s: no \"cases\"", path.c_str());
  }
  const json& cases = doc["cases"];
  out->cases.resize(cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    const json& item = cases[c];
    ReferenceCase& rc = out->cases[c];
    if (!item.is_object() || !item.contains("graph") || !item["graph"].is_number_integer() ||
        !item.contains("inputs") || !item["inputs"].is_array() || !item.contains("outputs") ||
        !item["outputs"].is_array()) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s: case %zu needs \"graph\" (an index), \"inputs\" and \"outputs\" lists",
                           path.c_str(), c);
    }
    rc.graph = item["graph"].get<int>();
    rc.inputs.resize(item["inputs"].size());
    for (size_t i = 0; i < rc.inputs.size(); ++i) {
      TUNECAST_RETURN_IF_ERROR(read_floats(item["inputs"][i], path, c, "inputs", i, &rc.inputs[i]));
    }
    for (size_t i = 0; i < item["outputs"].size(); ++i) {
      if (item["outputs"][i].is_null()) {
        rc.outputs.emplace_back();
        continue;
      }
      std::vector<float> values;
      TUNECAST_RETURN_IF_ERROR(read_floats(item["outputs"][i], path, c, "outputs", i, &values));
      rc.outputs.emplace_back(std::move(values));
    }
  }
  return Status::ok();
}

Status run_reference_vectors(const Model& model, const ReferenceVectors& vectors, ReferenceReport* report) {
  *report = ReferenceReport();
  std::vector<unsigned char> scratch(model.scratch_bytes(1));
  for (size_t c = 0; c < vectors.cases.size(); ++c) {
    const ReferenceCase& rc = vectors.cases[c];
    if (rc.graph < 0 || rc.graph >= model.graph_count()) {
      return Status::error(StatusCode::kInvalidArgument, "case %zu: graph %d, the model has %d", c, rc.graph,
                           model.graph_count());
    }
    const GraphInfo& g = model.graph(rc.graph);
    const auto* graph_inputs = g.graph->inputs();
    const auto* graph_outputs = g.graph->outputs();
    if (rc.inputs.size() != graph_inputs->size() || rc.outputs.size() != graph_outputs->size()) {
      return Status::error(StatusCode::kInvalidArgument,
                           "case %zu: %zu inputs and %zu outputs, graph %d has %u and %u", c, rc.inputs.size(),
                           rc.outputs.size(), rc.graph, graph_inputs->size(), graph_outputs->size());
    }
    std::vector<const float*> in;
    for (size_t i = 0; i < rc.inputs.size(); ++i) {
      const size_t want = value_floats(g, graph_inputs->Get(static_cast<uint32_t>(i)));
      if (rc.inputs[i].size() != want) {
        return Status::error(StatusCode::kInvalidArgument, "case %zu: input %zu has %zu values, graph %d takes %zu",
                             c, i, rc.inputs[i].size(), rc.graph, want);
      }
      in.push_back(rc.inputs[i].data());
    }
    std::vector<std::vector<float>> got(rc.outputs.size());
    std::vector<float*> out;
    for (size_t o = 0; o < got.size(); ++o) {
      got[o].assign(value_floats(g, graph_outputs->Get(static_cast<uint32_t>(o))), NAN);
      if (rc.outputs[o] && rc.outputs[o]->size() != got[o].size()) {
        return Status::error(StatusCode::kInvalidArgument,
                             "case %zu: output %zu has %zu values, graph %d gives %zu", c, o,
                             rc.outputs[o]->size(), rc.graph, got[o].size());
      }
      out.push_back(got[o].data());
    }
    TUNECAST_RETURN_IF_ERROR(run_graph(model, rc.graph, 1, in.data(), static_cast<int>(in.size()), out.data(),
                                       static_cast<int>(out.size()), scratch.data(), scratch.size()));
    for (size_t o = 0; o < got.size(); ++o) {
      if (!rc.outputs[o]) continue;
      for (size_t j = 0; j < got[o].size(); ++j) {
        const double want = (*rc.outputs[o])[j];
        const double diff = std::fabs(got[o][j] - want) / std::max(1.0, std::fabs(want));
        // NaN anywhere is the worst possible disagreement.
        const double d = std::isnan(diff) ? INFINITY : diff;
        if (d > report->worst || report->values == 0) {
          report->worst = d;
          char where[160];
          std::snprintf(where, sizeof where, "case %zu (graph %d) output %zu [%zu]: %.7g vs %.7g", c, rc.graph, o,
                        j, got[o][j], want);
          report->worst_where = where;
        }
        ++report->values;
      }
    }
    ++report->cases;
  }
  return Status::ok();
}

}  // namespace tunecast::codegen
