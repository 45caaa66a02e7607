// The `tunecast` command line: one function per command, a shared argument reader, and one way
// to report errors (one line on stderr, non-zero exit).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tunecast/codegen/file_io.h"
#include "tunecast/model.h"
#include "tunecast/predict.h"
#include "tunecast/status.h"

namespace tunecast::cli {

// Flags and positionals of one command. Every option is `--name value` or `--name=value`;
// `switches` lists options that take no value.
class Args {
 public:
  Status parse(const std::vector<std::string>& argv, const std::vector<std::string>& options,
               const std::vector<std::string>& switches);
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& positional() const { return positional_; }
  Status get_int(const std::string& name, int fallback, int* out) const;
  // A search seed: a non-negative integer below 2^64 (tune and eval-search read it alike).
  Status get_seed(const std::string& name, uint64_t* out) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The path of a helper script of tools/ (plot_eval.py, plot_eval_search.py): the installed copy
// beside the package's data when this binary runs from an install (<prefix>/share/tunecast/tools/),
// else the source tree's tools/ (a build tree).
std::string tool_script(const char* name);

// A model file mapped and verified, its weights too by default: a blob whose weights do not hash
// to the checksum it records (a changed byte) is refused (kCorruptModel), one pass over the weights
// (docs/benchmarks.md: a few ms); a blob that records none loads as ever. `inspect` passes false and
// reports the checksum's state itself.
struct LoadedModel {
  codegen::MappedFile file;
  std::vector<uint64_t> compiled;  // a kernel definition compiled in memory (8-byte aligned words)
  Model model;
  std::string definition_text;     // the definition's text, when the model is one
};
Status load_model_file(const std::string& path, LoadedModel* out, bool verify_weights = true);

// Whether `path` is a compiled model (a .tcm blob: FlatBuffers identifier TCMD), by its first bytes.
bool is_model_blob(const std::string& path);
// Whether `path` holds a kernel definition (rules-language text) rather than a blob.
bool is_definition_file(const std::string& path);

// A kernel definition (docs/kernels.md) compiled in memory into a model without a predictor:
// its parameters, domains, rules and problem schema (codegen::definition_model). Every parameter
// needs a domain.
Status load_definition(const std::string& path, LoadedModel* out);

// A model blob or a kernel definition, by content.
Status load_model_or_definition(const std::string& path, LoadedModel* out);

// Parses a problem for `model`: its own schema's name=value items, or for the convolution every
// form `predict` reads (problem_forms.h).
Status parse_model_problem(const Model& model, const std::string& text, Problem* out);

// Calls visit(line number, text) for each line of the file at `path` that holds something once
// '#' comments and surrounding blanks are dropped (problem lists, config lists); stops at the first
// error, a read error or visit's.
Status for_each_list_line(const std::string& path, const std::function<Status(int, const std::string&)>& visit);

// The canonical text of a problem of `model`'s schema (docs/kernels.md).
std::string problem_text(const Model& model, const Problem& problem);

// The beam width a trained predictor recommends for few candidates: its metadata "search_width",
// else 1 (greedy). A request for k candidates keeps max(k, width) hypotheses and returns the first
// k: with width 10, one candidate is the best of a 10-wide beam, not the greedy one. A bad value is
// the model's error.
Status model_search_width(const Model& model, int* width);

// "<what> <width> is outside 1..kMaxBeamWidth" unless the width is a beam the runtime runs.
Status check_beam_width(const char* what, int width);

// The items of a comma-separated option value ("--beam 1,10,30"); an empty item is `what`'s error.
Status parse_list(const std::string& text, const char* what, std::vector<std::string>* out);

// Names of the problem fields whose bits are set in `mask` (PredictInfo::out_of_range_fields).
std::vector<std::string> field_names(uint32_t mask, const ProblemSchema& schema = ProblemSchema());

// "ConvAsmBwdWrW3x3 does not apply to this problem: `stride_h == 1 && stride_w == 1` fails" for
// PredictInfo::not_applicable (the kernel named by the model's metadata solver).
std::string not_applicable_note(const Model& model, int condition);

// The symbolic names of `field`'s values min..max ("F", "B"), when there are at most 8 and every
// one has a name; else empty. Safe for any range read from a blob.
std::vector<std::string> symbol_names(ProblemField field, int64_t min, int64_t max);

// One note per field of `mask`: its value in `problem` and the model's training range, e.g.
// "y is 3 (always 1 in training)", "n is 4096 (1..1024 in training)" or "dir is W (F or B in
// training)".
std::vector<std::string> out_of_range_notes(const Model& model, const Problem& problem, uint32_t mask);

// One thread's prediction buffers, sized for beams up to the max_beam given to predict_in_parallel.
struct PredictBuffers {
  std::vector<unsigned char> scratch;
  std::vector<Candidate> out;
};

// Runs work(i, buffers) for every i in [0, count) on `threads` threads sharing the read-only
// model, each with its own buffers. `label` prefixes a progress line on stderr once a second
// and a closing "N problems in S s (R problems/s)" line; quiet suppresses both.
void predict_in_parallel(const Model& model, int max_beam, size_t count, int threads,
                         const char* label, bool quiet,
                         const std::function<void(size_t, PredictBuffers&)>& work);

// `j` as text (indent < 0: one line). Bytes that are not UTF-8 (a file name, a blob's metadata)
// become U+FFFD instead of throwing.
std::string json_text(const nlohmann::json& j, int indent = -1);

// An output path, checked before the work: "-" is stdout (refused for `binary` output when stdout
// is a terminal); a path that names one of `inputs` (the same file, by device and inode) is
// refused, so an input is never replaced; the output's folder is created (mkdir -p).
Status prepare_output(const std::string& path, const std::vector<std::string>& inputs, bool binary);
// Writes `contents` to stdout for "-", else atomically to `path` (codegen::write_file_atomic).
Status write_output(const std::string& path, std::string_view contents);
// What a status line calls the output: "stdout" for "-", else the path.
std::string output_name(const std::string& path);

// Prints "tunecast: <message>" and returns the exit code for `status`.
int fail(const Status& status);
int usage_error(const char* command, const std::string& message);

// A Kernel Tuner T4 or cache file (one problem, `problem_text` of `model`'s schema; "" for a
// definition whose fields all have defaults) written into a new timing DB at `out`
// (cmd_import_timings.cpp).
Status import_kernel_tuner_file(const Model& model, const std::string& path, const std::string& problem_text,
                                const std::string& out);

// The model-free search's prior (tune and eval-search --prior): the `limit` best configs of
// recordings of the same kernel on other GPUs or problems (comma-separated timing DBs or Kernel
// Tuner files, codegen::rank_recorded_configs), in the model's parameter order.
Status read_prior_configs(const Model& model, const std::string& paths, size_t limit, std::vector<std::vector<int64_t>>* out);
// How many of them tune and eval-search hand to the search (it measures at most 64 first configs).
constexpr size_t kPriorConfigs = 64;

int cmd_inspect(const std::vector<std::string>& args);
int cmd_import_keras(const std::vector<std::string>& args);
int cmd_compile(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);
int cmd_emit_cpp(const std::vector<std::string>& args);
int cmd_embed(const std::vector<std::string>& args);
int cmd_table(const std::vector<std::string>& args);
int cmd_eval(const std::vector<std::string>& args);
int cmd_tune(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_import_timings(const std::vector<std::string>& args);
int cmd_eval_search(const std::vector<std::string>& args);

}  // namespace tunecast::cli
