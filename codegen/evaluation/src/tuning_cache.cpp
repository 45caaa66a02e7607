#include "tunecast/codegen/tuning_cache.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tunecast/codegen/file_io.h"

namespace tunecast::codegen {
namespace {

using Json = nlohmann::ordered_json;

// Kernel Tuner's stand-in for a failed measurement in older caches.
constexpr double kKernelTunerErrorValue = 1e20;

struct RawEntry {
  std::vector<Json> values;
  ProblemTimings::Timing timing;
};

bool integral(const Json& v, int64_t* out) {
  if (v.is_boolean()) {
    *out = v.get<bool>() ? 1 : 0;
    return true;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v.get<uint64_t>());
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      *out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

// Numbers first (ascending), then everything else by its JSON text.
bool label_less(const Json& a, const Json& b) {
  const bool an = a.is_number() || a.is_boolean(), bn = b.is_number() || b.is_boolean();
  if (an != bn) return an;
  if (an) {
    const double x = a.is_boolean() ? a.get<bool>() : a.get<double>();
    const double y = b.is_boolean() ? b.get<bool>() : b.get<double>();
    if (x != y) return x < y;
  }
  return a.dump() < b.dump();
}

Status fail(const std::string& path, const std::string& what) {
  return Status::error_with_tail(StatusCode::kInvalidArgument, what.c_str(), (" in " + path).c_str());
}

// A unit as T4 files write it, as "ms", "s", "us" or "ns"; "" for one not known. Kernel Tuner measures
// time in milliseconds, and the benchmark hub's files say so as "", "miliseconds" or "milliseconds".
std::string canonical_unit(const std::string& unit) {
  if (unit.empty() || unit == "ms" || unit == "miliseconds" || unit == "milliseconds") return "ms";
  if (unit == "s" || unit == "seconds") return "s";
  if (unit == "us" || unit == "microseconds") return "us";
  if (unit == "ns" || unit == "nanoseconds") return "ns";
  return "";
}

// Kernel Tuner's failures as a timing DB's failure kinds (docs/kernels.md): T4's invalidity and the
// cache's error names. InvalidConfig ("constraints" in T4) is a config Kernel Tuner could not
// launch (more threads per block than the device has); anything else is `fail`.
std::string failure_kind(const std::string& kernel_tuner) {
  if (kernel_tuner == "compile" || kernel_tuner == "CompilationFailedConfig") return "compile_fail";
  if (kernel_tuner == "runtime" || kernel_tuner == "RuntimeFailedConfig") return "launch_fail";
  if (kernel_tuner == "constraints" || kernel_tuner == "InvalidConfig") return "out_of_resources";
  if (kernel_tuner == "timeout") return "timeout";
  if (kernel_tuner == "correctness") return "wrong_result";
  return "fail";
}

// The measurement named "time" whatever the file's objective: tunecast minimizes a time, and an
// objective such as GFLOP/s is larger when better (a Kernel Tuner cache's "time" is used alike).
bool t4_time(const Json& result, double* time, std::string* unit) {
  if (const auto it = result.find("measurements"); it != result.end() && it->is_array()) {
    for (const Json& m : *it) {
      if (m.is_object() && m.value("name", "") == "time" && m.contains("value") && m["value"].is_number()) {
        *time = m["value"].get<double>();
        if (m.contains("unit") && m["unit"].is_string()) *unit = m["unit"].get<std::string>();
        return true;
      }
    }
  }
  if (const auto it = result.find("times"); it != result.end() && it->is_object()) {
    const auto runtimes = it->find("runtimes");
    if (runtimes != it->end() && runtimes->is_array() && !runtimes->empty()) {
      double sum = 0.0;
      for (const Json& r : *runtimes) {
        if (!r.is_number()) return false;
        sum += r.get<double>();
      }
      *time = sum / static_cast<double>(runtimes->size());
      return true;
    }
  }
  return false;
}

}  // namespace

std::string TuningCache::label(size_t p, int64_t v) const {
  if (p < indexed.size() && indexed[p]) {
    return v >= 0 && static_cast<size_t>(v) < labels[p].size() ? labels[p][static_cast<size_t>(v)] : "?";
  }
  return std::to_string(v);
}

namespace {

// Inflates a gzip stream in place (zlib, gzip header and trailer checked).
Status gunzip(const std::string& path, std::string* text) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status::error(StatusCode::kIoError, "%s: zlib init failed", path.c_str());
  std::string out;
  char buffer[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(text->data());
  z.avail_in = static_cast<uInt>(text->size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return Status::error(StatusCode::kInvalidArgument, "%s: a truncated or corrupt gzip file (zlib: %s)", path.c_str(),
                         z.msg ? z.msg : "unexpected end");
  }
  *text = std::move(out);
  return Status::ok();
}

}  // namespace

Status read_tuning_cache(const std::string& path, TuningCache* out) {
  *out = TuningCache();
  std::string text;
  TUNECAST_RETURN_IF_ERROR(read_file(path, &text));
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
    TUNECAST_RETURN_IF_ERROR(gunzip(path, &text));  // the benchmark hub's caches are .json.gz
  }
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return fail(path, std::string("malformed JSON: ") + e.what());
  }
  if (!root.is_object()) return fail(path, "a Kernel Tuner file is a JSON object");
  if (const auto it = root.find("tune_params_keys"); it != root.end()) {
    if (!it->is_array()) return fail(path, "tune_params_keys is not an array");
    for (const Json& name : *it) {
      if (!name.is_string()) return fail(path, "tune_params_keys holds a name that is not a string");
      out->names.push_back(name.get<std::string>());
    }
  }
  std::vector<RawEntry> entries;
  std::string file_unit;  // T4's metadata.timeunit, for measurements that name none
  if (const auto m = root.find("metadata"); m != root.end() && m->is_object()) {
    if (const auto u = m->find("timeunit"); u != m->end() && u->is_string()) file_unit = u->get<std::string>();
  }
  auto value_of = [&](const Json& config, const std::string& name, const std::string& where, Json* value) -> Status {
    const auto it = config.find(name);
    if (it == config.end()) return fail(path, where + " has no value for parameter '" + name + "'");
    if (!it->is_number() && !it->is_string() && !it->is_boolean()) {
      return fail(path, where + ": parameter '" + name + "' is neither a number nor a string");
    }
    *value = *it;
    return Status::ok();
  };
  try {
    if (const auto results = root.find("results"); results != root.end()) {
      out->format = "T4";
      if (!results->is_array()) return fail(path, "results is not an array");
      for (size_t i = 0; i < results->size(); ++i) {
        const Json& r = (*results)[i];
        const std::string where = "results[" + std::to_string(i) + "]";
        if (!r.is_object() || !r.contains("configuration") || !r["configuration"].is_object()) {
          return fail(path, where + " has no configuration object");
        }
        const Json& config = r["configuration"];
        if (out->names.empty()) {
          for (auto it = config.begin(); it != config.end(); ++it) out->names.push_back(it.key());
          if (out->names.empty()) return fail(path, where + ": an empty configuration");
        }
        RawEntry e;
        for (const std::string& name : out->names) {
          e.values.emplace_back();
          TUNECAST_RETURN_IF_ERROR(value_of(config, name, where, &e.values.back()));
        }
        const std::string invalidity = r.contains("invalidity") && r["invalidity"].is_string()
                                           ? r["invalidity"].get<std::string>()
                                           : "correct";
        std::string unit;
        double time = 0.0;
        if (invalidity != "correct") {
          e.timing.status = failure_kind(invalidity);
        } else if (!t4_time(r, &time, &unit)) {
          e.timing.status = "fail";  // no time recorded
        } else if (!(time >= 0.0) || !std::isfinite(time) || time >= kKernelTunerErrorValue) {
          e.timing.status = "fail";  // Kernel Tuner's error value, or no time at all
        } else {
          e.timing.ok = true;
          e.timing.status = "ok";
          e.timing.time = time;
          const std::string stated = unit.empty() ? file_unit : unit;
          const std::string canonical = canonical_unit(stated);
          if (canonical.empty()) return fail(path, where + ": unknown time unit '" + stated + "' (ms, s, us or ns)");
          if (out->unit.empty()) out->unit = canonical;
          if (canonical != out->unit) {
            return fail(path, where + ": time in " + canonical + ", earlier results in " + out->unit);
          }
        }
        entries.push_back(std::move(e));
      }
    } else if (const auto cache = root.find("cache"); cache != root.end()) {
      out->format = "Kernel Tuner cache";
      out->unit = "ms";
      if (!cache->is_object()) return fail(path, "cache is not an object");
      if (out->names.empty()) return fail(path, "a Kernel Tuner cache needs tune_params_keys");
      for (auto it = cache->begin(); it != cache->end(); ++it) {
        const std::string where = "cache entry '" + it.key() + "'";
        if (!it->is_object()) return fail(path, where + " is not an object");
        RawEntry e;
        for (const std::string& name : out->names) {
          e.values.emplace_back();
          TUNECAST_RETURN_IF_ERROR(value_of(*it, name, where, &e.values.back()));
        }
        const auto time = it->find("time");
        if (time == it->end()) {
          e.timing.status = "fail";
        } else if (time->is_string()) {
          e.timing.status = failure_kind(time->get<std::string>());
        } else if (time->is_number() && time->get<double>() >= 0.0 && time->get<double>() < kKernelTunerErrorValue) {
          e.timing.ok = true;
          e.timing.status = "ok";
          e.timing.time = time->get<double>();
        } else {
          e.timing.status = "fail";
        }
        entries.push_back(std::move(e));
      }
    } else {
      return fail(path, "neither Kernel Tuner T4 results (a 'results' array) nor a Kernel Tuner cache (a 'cache' object)");
    }
  } catch (const Json::exception& e) {
    return fail(path, std::string("unexpected JSON: ") + e.what());
  }
  if (entries.empty()) return fail(path, "no measured configurations");
  if (out->names.size() > static_cast<size_t>(kMaxParameters)) {
    return fail(path, std::to_string(out->names.size()) + " parameters; a search handles at most " +
                          std::to_string(kMaxParameters));
  }

  // Each parameter's values: by value when all are integers, else by index among the sorted labels.
  const size_t count = out->names.size();
  out->values.resize(count);
  out->indexed.resize(count);
  out->labels.resize(count);
  std::vector<std::vector<Json>> distinct(count);
  for (size_t p = 0; p < count; ++p) {
    bool all_integral = true;
    for (const RawEntry& e : entries) {
      int64_t v;
      all_integral = all_integral && integral(e.values[p], &v);
      distinct[p].push_back(e.values[p]);
    }
    std::sort(distinct[p].begin(), distinct[p].end(), label_less);
    distinct[p].erase(std::unique(distinct[p].begin(), distinct[p].end(),
                                  [](const Json& a, const Json& b) { return !label_less(a, b) && !label_less(b, a); }),
                      distinct[p].end());
    out->indexed[p] = !all_integral;
    for (size_t i = 0; i < distinct[p].size(); ++i) {
      out->labels[p].push_back(distinct[p][i].dump());
      int64_t v = static_cast<int64_t>(i);
      if (all_integral) integral(distinct[p][i], &v);
      out->values[p].push_back(v);
    }
    if (all_integral) {
      std::sort(out->values[p].begin(), out->values[p].end());
      out->values[p].erase(std::unique(out->values[p].begin(), out->values[p].end()), out->values[p].end());
    }
  }
  for (RawEntry& e : entries) {
    std::vector<int64_t> config(count);
    for (size_t p = 0; p < count; ++p) {
      if (!out->indexed[p]) {
        integral(e.values[p], &config[p]);
      } else {
        const auto it = std::lower_bound(distinct[p].begin(), distinct[p].end(), e.values[p], label_less);
        config[p] = it - distinct[p].begin();
      }
    }
    if (e.timing.ok && out->first_valid.empty()) out->first_valid = config;
    out->timings.add(std::move(config), std::move(e.timing));
  }
  return Status::ok();
}

double microseconds_per(const std::string& unit) {
  return unit == "ms" ? 1e3 : unit == "s" ? 1e6 : unit == "us" ? 1.0 : unit == "ns" ? 1e-3 : 0.0;
}

}  // namespace tunecast::codegen
