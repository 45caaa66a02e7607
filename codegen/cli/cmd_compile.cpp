// import-keras and compile: foreign or trainer formats in, one verified blob out (atomically).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

#include "cli.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/rules_compiler.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/ir_json.h"
#include "tunecast/codegen/keras_import.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/prediction_check.h"
#include "tunecast/codegen/reference_vectors.h"

namespace tunecast::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Options shared by import-keras and compile.
std::vector<std::string> with_weight_options(std::vector<std::string> options) {
  for (const char* o : {"weights", "check-perfdb", "check-solver", "check-limit"}) options.push_back(o);
  return options;
}
// The weight options' own consistency, checked before any work: the --check-* options steer the
// fp16 check only, so without --weights fp16 they would be ignored without a word.
Status check_weight_options(const Args& args) {
  const std::string storage = args.get("weights", "fp32");
  if (storage != "fp32" && storage != "fp16") {
    return Status::error(StatusCode::kInvalidArgument, "--weights must be fp32 or fp16");
  }
  const bool any_check = args.has("check-perfdb") || args.has("check-solver") || args.has("check-limit");
  if (any_check && storage != "fp16") {
    return Status::error(StatusCode::kInvalidArgument,
                         "--check-perfdb, --check-solver and --check-limit steer the fp16 check: they need "
                         "--weights fp16");
  }
  if (any_check && (!args.has("check-perfdb") || !args.has("check-solver"))) {
    return Status::error(StatusCode::kInvalidArgument, "--check-perfdb and --check-solver go together%s",
                         args.has("check-limit") ? " (--check-limit counts their problems)" : "");
  }
  int limit = 0;
  TUNECAST_RETURN_IF_ERROR(args.get_int("check-limit", 1000, &limit));
  if (limit < 0) return Status::error(StatusCode::kInvalidArgument, "--check-limit must be 0 (all) or more");
  return Status::ok();
}

constexpr const char* kWeightHelp =
    "--weights fp16 stores the product weights (Dense, Conv1D, LSTM kernels) as IEEE fp16, half\n"
    "the bytes (default fp32). The fp16 blob is written only if its greedy prediction and beam-10\n"
    "candidate list equal the fp32 blob's on every checked input: the problems of solver S in\n"
    "--check-perfdb DB --check-solver S (through the encoding; at most --check-limit N, default\n"
    "1000, evenly spread, 0 = all), else the Keras test vectors (import-keras), else 256\n"
    "synthetic encoder inputs. --force writes it anyway.\n";

// Blob bytes copied into 64-byte aligned memory and loaded.
struct LoadedBlob {
  std::unique_ptr<void, decltype(&std::free)> bytes{nullptr, &std::free};
  Model model;

  Status load(const std::vector<uint8_t>& blob) {
    bytes.reset(std::aligned_alloc(64, (blob.size() + 63) / 64 * 64));
    std::memcpy(bytes.get(), blob.data(), blob.size());
    return Model::load(bytes.get(), blob.size(), &model);
  }
};

// The inputs the fp16 check runs on (see kWeightHelp); `what` describes them for the summary.
Status check_samples(const Model& model, const Args& args, const std::vector<std::vector<float>>& test_vectors,
                     std::vector<codegen::CheckSample>* samples, std::string* what) {
  samples->clear();
  if (args.has("check-perfdb")) {  // with --check-solver: check_weight_options
    if (model.root()->encoding() == nullptr) {
      return Status::error(StatusCode::kInvalidArgument,
                           "--check-perfdb needs a model with a feature encoding (--encoding)");
    }
    int limit = 0;
    TUNECAST_RETURN_IF_ERROR(args.get_int("check-limit", 1000, &limit));
    std::vector<PerfDbRow> rows;
    TUNECAST_RETURN_IF_ERROR(read_perf_db(args.get("check-perfdb"), args.get("check-solver"), PerfDbFilter(), &rows));
    std::set<std::string> seen;
    std::vector<const PerfDbRow*> unique;
    for (const PerfDbRow& r : rows) {
      if (seen.insert(perf_db_descriptor(r.problem)).second) unique.push_back(&r);
    }
    const size_t take = limit > 0 ? std::min(unique.size(), static_cast<size_t>(limit)) : unique.size();
    for (size_t i = 0; i < take; ++i) {
      const PerfDbRow& r = *unique[i * unique.size() / take];
      codegen::CheckSample s;
      s.name = "perf DB config " + std::to_string(r.config_id);
      s.problem = r.problem;
      samples->push_back(std::move(s));
    }
    *what = "problems of " + args.get("check-solver") + " in " + args.get("check-perfdb") + " (of " +
            std::to_string(unique.size()) + ")";
    if (samples->empty()) {
      return Status::error(StatusCode::kNotFound, "no %s rows in %s to check fp16 weights on",
                           args.get("check-solver").c_str(), args.get("check-perfdb").c_str());
    }
    return Status::ok();
  }
  if (!test_vectors.empty()) {
    for (size_t i = 0; i < test_vectors.size(); ++i) {
      codegen::CheckSample s;
      s.name = "Keras test vector " + std::to_string(i);
      s.features = test_vectors[i];
      samples->push_back(std::move(s));
    }
    *what = "Keras test vectors, constraints off";
    return Status::ok();
  }
  *samples = codegen::synthetic_samples(model, 256);
  *what = "synthetic encoder inputs, constraints off; pass --check-perfdb for real problems";
  return Status::ok();
}

// Compiles the fp16 blob and keeps it only if it predicts as the fp32 one does.
Status half_weights_blob(const ir::Model& model, const Args& args,
                         const std::vector<std::vector<float>>& test_vectors, std::vector<uint8_t>* blob) {
  LoadedBlob reference, half;
  std::vector<uint8_t> half_bytes;
  codegen::BlobOptions options;
  options.weights = codegen::WeightStorage::kFp16;
  TUNECAST_RETURN_IF_ERROR(codegen::write_blob(model, &half_bytes, options));
  TUNECAST_RETURN_IF_ERROR(reference.load(*blob));
  TUNECAST_RETURN_IF_ERROR(half.load(half_bytes));
  if (!reference.model.is_seq2seq()) {
    return Status::error(StatusCode::kUnsupported,
                         "--weights fp16 is checked on predicted sequences: it needs a "
                         "sequence-to-sequence model");
  }
  std::vector<codegen::CheckSample> samples;
  std::string what;
  TUNECAST_RETURN_IF_ERROR(check_samples(reference.model, args, test_vectors, &samples, &what));
  codegen::PredictionComparison result;
  TUNECAST_RETURN_IF_ERROR(codegen::compare_predictions(reference.model, half.model, samples, &result));
  std::fprintf(stderr, "fp16 weights: %d of %d inputs predict differently from fp32 (greedy and beam 10; %s)\n",
              result.differing, result.checked, what.c_str());
  if (result.differing > 0) {
    const codegen::CheckSample& first = samples[static_cast<size_t>(result.first_index)];
    char problem[512] = "";
    if (first.problem) format_problem(*first.problem, problem, sizeof problem);
    std::fprintf(stderr, "fp16 weights: first difference: %s%s%s\n", result.first.c_str(),
                first.problem ? "; problem " : "", problem);
  }
  std::fflush(stdout);
  if (result.differing > 0 && !args.has("force")) {
    return Status::error(StatusCode::kInvalidArgument,
                         "fp16 weights change the predictions on %d of %d inputs, first %s; keep "
                         "--weights fp32 (or --force)",
                         result.differing, result.checked, result.first.c_str());
  }
  *blob = std::move(half_bytes);
  return Status::ok();
}

// Runs --check-vectors FILE (reference outputs, e.g. PyTorch's) through the compiled blob.
Status check_vectors(const std::vector<uint8_t>& blob, const Args& args) {
  codegen::ReferenceVectors vectors;
  TUNECAST_RETURN_IF_ERROR(codegen::read_reference_vectors(args.get("check-vectors"), &vectors));
  LoadedBlob loaded;
  TUNECAST_RETURN_IF_ERROR(loaded.load(blob));
  codegen::ReferenceReport report;
  TUNECAST_RETURN_IF_ERROR(codegen::run_reference_vectors(loaded.model, vectors, &report));
  std::fprintf(stderr, "vectors: %d graph runs, %zu values from %s (%s): max |tunecast - reference| / max(1, |reference|)"
              " = %.2e, tolerance %.0e\n",
              report.cases, report.values, args.get("check-vectors").c_str(),
              vectors.source.empty() ? "source not named" : vectors.source.c_str(), report.worst, vectors.tolerance);
  std::fflush(stdout);
  if (!(report.worst <= vectors.tolerance) && !args.has("force")) {
    return Status::error(StatusCode::kInvalidArgument,
                         "the compiled model does not reproduce %s: worst at %s (or --force)",
                         args.get("check-vectors").c_str(), report.worst_where.c_str());
  }
  return Status::ok();
}

// Checks, attaches rules, writes the blob and prints a one-line summary.
int finish(const char* command, ir::Model* model, const Args& args,
           const std::vector<std::vector<float>>& test_vectors = {}) {
  const std::string storage = args.get("weights", "fp32");  // checked by check_weight_options
  Status status = codegen::attach_rules(model, args.get("rules"), args.get("encoding"));
  if (status) status = check_ir(*model);
  std::vector<uint8_t> blob;
  if (status) status = codegen::write_blob(*model, &blob);
  if (status && storage == "fp16") status = half_weights_blob(*model, args, test_vectors, &blob);
  if (status && args.has("check-vectors")) status = check_vectors(blob, args);
  if (status) status = write_output(args.get("output"), std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size()));
  if (!status) return fail(status);
  if (model->graphs.empty()) {  // a kernel definition alone (check_ir accepts no other model without graphs)
    std::fprintf(stderr, "%s: wrote %s (%zu bytes; a kernel definition without a predictor: %zu parameters, %zu "
                 "constraints%s)\n",
                 command, output_name(args.get("output")).c_str(), blob.size(), model->vocabulary.parameters.size(),
                 model->constraints.size(),
                 model->applicability.empty() ? "" : (", " + std::to_string(model->applicability.size()) +
                                                      " applicability conditions").c_str());
    return 0;
  }
  size_t weights = 0;
  for (const ir::Graph& g : model->graphs) {
    for (const ir::Layer& l : g.layers) weights += l.kernel.data.size() + l.recurrent.data.size() + l.bias.size();
  }
  std::fprintf(stderr, "%s: wrote %s (%zu bytes; %zu graphs, %zu %s weights, %zu parameters, %zu constraints%s%s)\n",
              command, output_name(args.get("output")).c_str(), blob.size(), model->graphs.size(), weights, storage.c_str(),
              model->vocabulary.parameters.size(), model->constraints.size(),
              model->applicability.empty() ? "" : (", " + std::to_string(model->applicability.size()) +
                                                   " applicability conditions").c_str(),
              model->encoding ? ", feature encoding" : "");
  if (!model->encoding && model->metadata.count("encoding_digest")) {
    std::fprintf(stderr,
                 "tunecast: warning: the model was trained with a feature encoding (metadata encoding_digest) "
                 "and none was given: %s predicts from --features only, not from --problem (pass the "
                 "model.tce exported with it as --encoding)\n",
                 args.get("output").c_str());
  }
  return 0;
}

}  // namespace

int cmd_import_keras(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, with_weight_options({"output", "rules", "encoding", "direction"}), {"force"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast import-keras MODEL -o OUT.tcm [--rules RULES.tcr] [--encoding ENC.tce]\n"
        "                             [--direction fwd|bwd|wrw] [--weights fp32|fp16]\n"
        "                             [--check-perfdb DB --check-solver S [--check-limit N]] [--force]\n\n"
        "Compiles MIOpen's Keras models in frugally-deep JSON into one verified blob.\n"
        "MODEL is either a kernel tuning net prefix, e.g. .../gfx908_ConvAsm1x1U (the files\n"
        "<prefix>_encoder.ktn.model, _decoder.ktn.model and _metadata.ktn.model are read), or a\n"
        "TunaNet file <arch>.tn.model (its <arch>_metadata.tn.model is read when present).\n"
        "--rules compiles validity constraints (and may name the parameters), --encoding the\n"
        "problem -> input declaration, both in tunecast's rules language (docs/rules_language.md).\n"
        "Unsupported layers or malformed JSON are reported naming the file and layer; no output\n"
        "file is written unless the whole model verifies.\n%s", kWeightHelp);
    return 0;
  }
  if (!status) return usage_error("import-keras", status.message());
  if (args.positional().size() != 1 || !args.has("output")) {
    return usage_error("import-keras", "expected one MODEL and -o OUT.tcm");
  }
  status = check_weight_options(args);
  if (!status) return usage_error("import-keras", status.message());
  std::string source = args.positional()[0];
  {
    std::vector<std::string> inputs = {source, args.get("rules"), args.get("encoding"), args.get("check-perfdb")};
    for (const char* suffix : {"_encoder.ktn.model", "_decoder.ktn.model", "_metadata.ktn.model"}) {
      inputs.push_back(source + suffix);
    }
    if (ends_with(source, ".tn.model")) inputs.push_back(source.substr(0, source.size() - 9) + "_metadata.tn.model");
    status = prepare_output(args.get("output"), inputs, true);  // before the work
    if (!status) return fail(status);
  }
  ir::Model model;
  if (ends_with(source, ".tn.model")) {
    status = keras::import_tn(source, &model);
  } else {
    for (const char* suffix : {"_encoder.ktn.model", "_decoder.ktn.model", "_metadata.ktn.model"}) {
      if (ends_with(source, suffix)) source.resize(source.size() - std::string(suffix).size());
    }
    status = args.has("direction") ? keras::import_ktn(source, args.get("direction"), &model)
                                   : keras::import_ktn(source, &model);
  }
  if (!status) return fail(status);
  // Keras-computed encoder inputs: what the fp16 check runs on when no perf DB is given.
  std::vector<std::vector<float>> test_vectors;
  std::vector<keras::TestVector> tests;
  if (args.get("weights") == "fp16" && !ends_with(source, ".tn.model") &&
      keras::read_test_vectors(source + "_encoder.ktn.model", &tests)) {
    for (const keras::TestVector& t : tests) {
      if (t.inputs.size() == 1) test_vectors.push_back(t.inputs[0]);
    }
  }
  return finish("import-keras", &model, args, test_vectors);
}

int cmd_compile(const std::vector<std::string>& argv) {
  Args args;
  Status status =
      args.parse(argv, with_weight_options({"output", "rules", "encoding", "check-vectors"}), {"force"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast compile MODEL.tcir.json -o OUT.tcm [--rules KERNEL.tcr] [--encoding ENC.tce]\n"
        "       tunecast compile KERNEL.tcr -o OUT.tcm\n"
        "                        [--check-vectors VECTORS.json] [--weights fp32|fp16]\n"
        "                        [--check-perfdb DB --check-solver S [--check-limit N]] [--force]\n\n"
        "Compiles a model exported by tunecast's trainer (docs/interchange.md) together with its\n"
        "kernel's validity rules and its feature encoding into one verified blob.\n"
        "--check-vectors runs reference graph outputs (the trainer's model.vectors.json: PyTorch's own\n"
        "encoder outputs and decoder steps) through the compiled blob and writes it only if every\n"
        "value agrees within the file's tolerance (1e-4 relative to max(1, |reference|)); --force\n"
        "writes it anyway.\n"
        "A kernel definition alone (KERNEL.tcr, docs/kernels.md) compiles into a blob without a\n"
        "predictor: its problem schema, domains and rules, for tunecast::search without a model (in\n"
        "`tune`, or embedded in C++ with `embed`/`emit-cpp`).\n%s", kWeightHelp);
    return 0;
  }
  if (!status) return usage_error("compile", status.message());
  if (args.positional().size() != 1 || !args.has("output")) {
    return usage_error("compile", "expected one MODEL.tcir.json and -o OUT.tcm");
  }
  status = check_weight_options(args);
  if (!status) return usage_error("compile", status.message());
  status = prepare_output(args.get("output"),
                          {args.positional()[0], args.get("rules"), args.get("encoding"), args.get("check-vectors"),
                           args.get("check-perfdb")},
                          true);  // before the work
  if (!status) return fail(status);
  ir::Model model;
  if (is_definition_file(args.positional()[0])) {
    if (args.has("rules") || args.has("encoding") || args.has("check-vectors") || args.get("weights", "fp32") != "fp32") {
      return usage_error("compile", "a kernel definition compiles alone (no --rules, --encoding, --check-vectors or "
                                    "--weights fp16: it has no predictor)");
    }
    rules::CompiledRules rules;
    status = rules::compile_file(args.positional()[0], rules::CompileOptions(), &rules);
    const std::string& path = args.positional()[0];
    if (status) status = codegen::definition_model(rules, path.substr(path.find_last_of('/') + 1), &model);
    if (!status) return fail(status);
    return finish("compile", &model, args);
  }
  status = read_ir_json(args.positional()[0], &model);
  if (!status) return fail(status);
  return finish("compile", &model, args);
}

}  // namespace tunecast::cli
