// Kernel Tuner's measured spaces, for replaying a search without a model (tunecast tune
// --replay FILE.json): the T4 results format (schema T4/1.0.0: {"schema_version", "results":
// [{"configuration": {name: value}, "times": {"runtimes": [...]}, "invalidity": "correct" |
// "compile" | "runtime" | "constraints" | ..., "measurements": [{"name", "value", "unit"}],
// "objectives": ["time"]}]}) and Kernel Tuner's cache file ({"tune_params_keys", "tune_params",
// "cache": {"v1,v2,...": {name: value, ..., "time": number | "InvalidConfig" |
// "CompilationFailedConfig" | "RuntimeFailedConfig"}}}). Host-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tunecast/codegen/timing_db.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

struct TuningCache {
  std::string format;                         // "T4" or "Kernel Tuner cache"
  std::string unit;                           // the times' unit: "ms" (Kernel Tuner's), "s", "us" or "ns"; "" when nothing ran
  std::vector<std::string> names;             // parameters, in the file's order (tune_params_keys or the first configuration's keys)
  // Per parameter, the searchable integer values, ascending. A parameter whose values are all
  // integers (or booleans, as 0/1) is searched by value; any other (strings, fractions) by the
  // index of its value in `labels` (sorted: numbers ascending, then strings).
  std::vector<std::vector<int64_t>> values;
  std::vector<bool> indexed;                  // per parameter: values are indices into labels
  std::vector<std::vector<std::string>> labels;  // per parameter, the JSON text of each value (index order)
  ProblemTimings timings;                     // every recorded config, in file order
  std::vector<int64_t> first_valid;           // the first config in file order that ran

  // The JSON text of parameter p's value v ("64", "\"row\"", "0.5").
  std::string label(size_t p, int64_t v) const;
};

Status read_tuning_cache(const std::string& path, TuningCache* out);

// Microseconds per `unit` ("ms", "s", "us", "ns"; a timing DB's time_unit), 0 for any other.
double microseconds_per(const std::string& unit);

}  // namespace tunecast::codegen
