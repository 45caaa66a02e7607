#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <system_error>
#include <filesystem>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/file_io.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/problem_forms.h"
#include "tunecast/codegen/rules_compiler.h"

namespace tunecast::cli {

Status Args::parse(const std::vector<std::string>& argv, const std::vector<std::string>& options,
                   const std::vector<std::string>& switches) {
  auto known = [](const std::vector<std::string>& list, const std::string& name) {
    for (const std::string& s : list) {
      if (s == name) return true;
    }
    return false;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    bool inline_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "o") name = "output";
    if (name == "h") name = "help";
    if (known(switches, name) || name == "help") {
      if (inline_value) {
        return Status::error(StatusCode::kInvalidArgument, "option --%s takes no value",
                             name.c_str());
      }
      values_[name] = "1";
    } else if (known(options, name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) {
          return Status::error(StatusCode::kInvalidArgument, "option --%s needs a value",
                               name.c_str());
        }
        value = argv[++i];
      }
      if (values_.count(name)) {
        return Status::error(StatusCode::kInvalidArgument, "option --%s is given twice",
                             name.c_str());
      }
      values_[name] = value;
    } else {
      return Status::error(StatusCode::kInvalidArgument, "unknown option '%s'", arg.c_str());
    }
  }
  return Status::ok();
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

Status Args::get_int(const std::string& name, int fallback, int* out) const {
  if (!has(name)) {
    *out = fallback;
    return Status::ok();
  }
  const std::string text = get(name);
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') {
    return Status::error(StatusCode::kInvalidArgument, "option --%s needs an integer, got '%.40s'",
                         name.c_str(), text.c_str());
  }
  if (value < -1000000000L || value > 1000000000L) {  // also what strtol saturated
    return Status::error(StatusCode::kInvalidArgument, "option --%s: %.40s is out of range (at most 1e9 in size)",
                         name.c_str(), text.c_str());
  }
  *out = static_cast<int>(value);
  return Status::ok();
}

Status Args::get_seed(const std::string& name, uint64_t* out) const {
  *out = 0;
  if (!has(name)) return Status::ok();
  const std::string text = get(name);
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || text.find_first_not_of("0123456789") != std::string::npos || errno == ERANGE) {
    return Status::error(StatusCode::kInvalidArgument, "--%s needs an integer 0..18446744073709551615, got '%.40s'",
                         name.c_str(), text.c_str());
  }
  *out = value;
  return Status::ok();
}

std::string tool_script(const char* name) {
  char exe[4096];
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length > 0) {
    exe[length] = '\0';
    const std::filesystem::path installed =
        (std::filesystem::path(exe).parent_path() / TUNECAST_INSTALLED_TOOLS_REL / name).lexically_normal();
    std::error_code error;
    if (std::filesystem::is_regular_file(installed, error)) return installed.string();
  }
  return std::string(TUNECAST_TOOLS_DIR) + "/" + name;
}

Status load_model_file(const std::string& path, LoadedModel* out, bool verify_weights) {
  TUNECAST_RETURN_IF_ERROR(out->file.open(path));
  Status status = Model::load(out->file.data(), out->file.size(), &out->model);
  if (!status) return Status::error(status.code(), "%s: %s", path.c_str(), status.message());
  if (verify_weights) {
    status = out->model.verify_checksum();
    if (status.code() == StatusCode::kCorruptModel) {
      return Status::error(status.code(), "%s: %s", path.c_str(), status.message());
    }
  }
  return Status::ok();
}

bool is_model_blob(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, sizeof head);
  return in.gcount() == 8 && std::memcmp(head + 4, "TCMD", 4) == 0;
}

bool is_definition_file(const std::string& path) {
  if (is_model_blob(path)) return false;
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".tcr") == 0;
}

Status load_definition(const std::string& path, LoadedModel* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(StatusCode::kNotFound, "cannot open kernel definition %s", path.c_str());
  std::ostringstream text;
  text << in.rdbuf();
  out->definition_text = text.str();
  rules::CompiledRules rules;
  TUNECAST_RETURN_IF_ERROR(rules::compile(out->definition_text, path, rules::CompileOptions(), &rules));
  ir::Model ir;
  const std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  TUNECAST_RETURN_IF_ERROR(codegen::definition_model(rules, name, &ir));
  std::vector<uint8_t> blob;
  TUNECAST_RETURN_IF_ERROR(codegen::write_blob(ir, &blob, codegen::BlobOptions()));
  out->compiled.assign((blob.size() + 7) / 8, 0);
  std::memcpy(out->compiled.data(), blob.data(), blob.size());
  const Status status = Model::load(out->compiled.data(), blob.size(), &out->model);
  if (!status) return Status::error(status.code(), "%s: %s", path.c_str(), status.message());
  return Status::ok();
}

Status load_model_or_definition(const std::string& path, LoadedModel* out) {
  return is_definition_file(path) ? load_definition(path, out) : load_model_file(path, out);
}

Status parse_model_problem(const Model& model, const std::string& text, Problem* out) {
  const ProblemSchema schema = model.problem_schema();
  if (!schema.builtin()) return parse_problem(schema, text, out);
  codegen::ProblemForm form;
  return codegen::parse_problem_any(text, out, &form);
}

Status for_each_list_line(const std::string& path, const std::function<Status(int, const std::string&)>& visit) {
  std::string contents;
  TUNECAST_RETURN_IF_ERROR(codegen::read_file(path, &contents));
  std::istringstream in(contents);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    TUNECAST_RETURN_IF_ERROR(visit(number, line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin)));
  }
  return Status::ok();
}

std::string problem_text(const Model& model, const Problem& problem) {
  char text[1024];
  format_problem(model.problem_schema(), problem, text, sizeof text);
  return text;
}

std::vector<std::string> field_names(uint32_t mask, const ProblemSchema& schema) {
  std::vector<std::string> names;
  for (int f = 0; f < schema.field_count(); ++f) {
    if ((mask >> f) & 1u) names.push_back(schema.field_name(f));
  }
  return names;
}

std::string not_applicable_note(const Model& model, int condition) {
  const char* solver = model.metadata("solver");
  return std::string(solver ? solver : "the kernel") + " does not apply to this problem: `" +
         applicability_text(model, condition) + "` fails";
}

std::vector<std::string> symbol_names(ProblemField field, int64_t min, int64_t max) {
  if (max < min || static_cast<uint64_t>(max) - static_cast<uint64_t>(min) >= 8) return {};
  std::vector<std::string> names;
  for (uint64_t i = 0; i <= static_cast<uint64_t>(max) - static_cast<uint64_t>(min); ++i) {
    const char* name = problem_symbol_name(field, static_cast<int64_t>(static_cast<uint64_t>(min) + i));
    if (name == nullptr) return {};
    names.emplace_back(name);
  }
  return names;
}

std::vector<std::string> out_of_range_notes(const Model& model, const Problem& problem, uint32_t mask) {
  const ProblemSchema schema = model.problem_schema();
  auto text = [&](int field, int64_t value) {
    const char* symbol = schema.field_kind(field) == FieldKind::kInteger ? nullptr : schema.symbol_name(field, value);
    return symbol ? std::string(symbol) : std::to_string(value);
  };
  const schema::Encoding* enc = model.root() ? model.root()->encoding() : nullptr;
  std::vector<std::string> notes;
  for (int f = 0; f < schema.field_count(); ++f) {
    if (!((mask >> f) & 1u)) continue;
    // A field not given is not some value (an unset arch reads 0, gfx900's code): say it is missing.
    std::string note = std::string(schema.field_name(f)) + (problem.has(f) ? " is " + text(f, problem.get(f)) : " is not given");
    if (schema.field_kind(f) == FieldKind::kArchitecture && model.arch_count() > 0) {  // its codes order nothing
      std::string covered;
      for (int i = 0; i < model.arch_count(); ++i) {
        covered += (i == 0 ? "" : i + 1 == model.arch_count() ? " or " : ", ") + text(f, model.arch(i));
      }
      notes.push_back(note + " (" + covered + " in training)");
      continue;
    }
    for (uint32_t i = 0; enc && enc->ranges() && i < enc->ranges()->size(); ++i) {
      const schema::FeatureRange* range = enc->ranges()->Get(i);
      int named = -1;
      if (!schema.find_field(range->field()->string_view(), &named) || named != f) continue;
      std::vector<std::string> names;
      if (schema.builtin()) {
        names = symbol_names(static_cast<ProblemField>(f), range->min(), range->max());
      } else if (schema.field_kind(f) == FieldKind::kEnumeration && range->max() - range->min() < 8) {
        for (int64_t v = range->min(); v <= range->max(); ++v) names.push_back(text(f, v));
      }
      if (range->min() == range->max()) {
        note += " (always " + text(f, range->min()) + " in training)";
      } else if (!names.empty()) {
        // Named values are listed ("FP32 or FP16"), not written as an interval.
        std::string values;
        for (size_t i = 0; i < names.size(); ++i) {
          values += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
        }
        note += " (" + values + " in training)";
      } else {
        note += " (" + text(f, range->min()) + ".." + text(f, range->max()) + " in training)";
      }
    }
    notes.push_back(note);
  }
  return notes;
}

void predict_in_parallel(const Model& model, int max_beam, size_t count, int threads,
                         const char* label, bool quiet,
                         const std::function<void(size_t, PredictBuffers&)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  auto worker = [&] {
    PredictBuffers buffers;
    buffers.scratch.resize(model.scratch_bytes(max_beam));
    buffers.out.resize(static_cast<size_t>(max_beam));
    for (size_t i = next++; i < count; i = next++) {
      work(i, buffers);
      ++done;
    }
  };
  const auto start = std::chrono::steady_clock::now();
  // No more threads than problems; and if the system refuses a thread, go on with those it gave.
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(1, threads)), std::max<size_t>(count, 1)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "%s: note: started %zu of %d threads (%s)\n", label, pool.size(), threads, e.what());
      threads = static_cast<int>(pool.size());
      break;
    }
  }
  if (pool.empty()) {  // not even one: predict on this thread
    threads = 1;
    worker();
  }
  auto last = start;
  while (done < count) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto now = std::chrono::steady_clock::now();
    if (!quiet && now - last >= std::chrono::seconds(1)) {
      last = now;
      const double seconds = std::chrono::duration<double>(now - start).count();
      std::fprintf(stderr, "%s: %zu / %zu problems (%.0f problems/s)\n", label, done.load(), count,
                   static_cast<double>(done.load()) / seconds);
    }
  }
  for (std::thread& t : pool) t.join();
  if (!quiet) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "%s: %zu problems in %.2f s on %d threads (%.0f problems/s)\n", label,
                 count, seconds, threads, static_cast<double>(count) / seconds);
  }
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status prepare_output(const std::string& path, const std::vector<std::string>& inputs, bool binary) {
  if (path == "-") {
    if (binary && ::isatty(STDOUT_FILENO)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "-o - would write a binary file to the terminal: redirect stdout or name a file");
    }
    return Status::ok();
  }
  struct stat out_st;
  const bool exists = ::stat(path.c_str(), &out_st) == 0;
  std::error_code error;
  // Absolute first: a relative path of which nothing exists yet stays relative in weakly_canonical
  // ("./x.db" and "x.db" would differ).
  auto canonical = [&error](const std::string& p) {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(p, error), error);
  };
  const std::filesystem::path out_path = canonical(path);
  for (const std::string& input : inputs) {
    struct stat in_st;
    // The same file (a link too), or, for files not made yet, the same path (-o and --record alike).
    const bool same = input.empty() ? false
                      : exists      ? ::stat(input.c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
                                     in_st.st_ino == out_st.st_ino
                                    : !error && canonical(input) == out_path && !error;
    if (same) {
      return Status::error(StatusCode::kInvalidArgument,
                           "the output %s is the input %s: it would be replaced; name another output", path.c_str(),
                           input.c_str());
    }
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !path.empty() && path.back() != '/') {
    std::error_code error;
    std::filesystem::create_directories(folder, error);  // like mkdir -p; check_output_path says why not
  }
  return codegen::check_output_path(path);
}

Status write_output(const std::string& path, std::string_view contents) {
  if (path != "-") return codegen::write_file_atomic(path, contents);
  if (std::fwrite(contents.data(), 1, contents.size(), stdout) != contents.size() || std::fflush(stdout) != 0) {
    return Status::error(StatusCode::kIoError, "cannot write to stdout");
  }
  return Status::ok();
}

Status parse_list(const std::string& text, const char* what, std::vector<std::string>* out) {
  out->clear();
  for (size_t start = 0;;) {
    const size_t end = text.find(',', start);
    out->push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (out->back().empty()) {
      return Status::error(StatusCode::kInvalidArgument, "%s '%s' has an empty item", what, text.c_str());
    }
    if (end == std::string::npos) return Status::ok();
    start = end + 1;
  }
}

std::string output_name(const std::string& path) { return path == "-" ? "stdout" : path; }

int fail(const Status& status) {
  std::fprintf(stderr, "tunecast: %s\n", status.message());
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return 2;
    case StatusCode::kNoValidCandidate: return 3;
    default: return 1;
  }
}

int usage_error(const char* command, const std::string& message) {
  std::fprintf(stderr, "tunecast %s: %s (try tunecast %s --help)\n", command, message.c_str(),
               command);
  return 2;
}

Status model_search_width(const Model& model, int* width) {
  *width = 1;
  const char* text = model.metadata("search_width");
  if (text == nullptr) return Status::ok();
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > kMaxBeamWidth) {
    return Status::error(StatusCode::kInvalidArgument,
                         "the model's metadata search_width '%s' is not a width in 1..%d", text, kMaxBeamWidth);
  }
  *width = static_cast<int>(value);
  return Status::ok();
}

Status check_beam_width(const char* what, int width) {
  if (width >= 1 && width <= kMaxBeamWidth) return Status::ok();
  return Status::error(StatusCode::kInvalidArgument, "%s %d is outside 1..%d", what, width, kMaxBeamWidth);
}

}  // namespace tunecast::cli
