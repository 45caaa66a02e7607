// import-keras and compile: foreign or trainer formats in, one verified blob out (atomically).
#include <cstdio>

#include "cli.h"
#include "tunecast/codegen/assemble.h"
#include "tunecast/codegen/blob_writer.h"
#include "tunecast/codegen/ir_check.h"
#include "tunecast/codegen/ir_json.h"
#include "tunecast/codegen/keras_import.h"

namespace tunecast::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Checks, attaches rules, writes the blob and prints a one-line summary.
int finish(const char* command, ir::Model* model, const Args& args) {
  Status status = codegen::attach_rules(model, args.get("rules"), args.get("encoding"));
  if (status) status = check_ir(*model);
  std::vector<uint8_t> blob;
  if (status) status = codegen::write_blob(*model, &blob);
  if (status) status = codegen::write_file_atomic(args.get("output"), blob);
  if (!status) return fail(status);
  size_t weights = 0;
  for (const ir::Graph& g : model->graphs) {
    for (const ir::Layer& l : g.layers) weights += l.kernel.data.size() + l.recurrent.data.size() + l.bias.size();
  }
  std::printf("%s: wrote %s (%zu bytes; %zu graphs, %zu weights, %zu parameters, %zu constraints%s)\n",
              command, args.get("output").c_str(), blob.size(), model->graphs.size(), weights,
              model->vocabulary.parameters.size(), model->constraints.size(),
              model->encoding ? ", feature encoding" : "");
  return 0;
}

}  // namespace

int cmd_import_keras(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"output", "rules", "encoding", "direction"}, {});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast import-keras MODEL -o OUT.tcm [--rules RULES.tcr] [--encoding ENC.tce]\n"
        "                             [--direction fwd|bwd|wrw]\n\n"
        "Compiles MIOpen's Keras models in frugally-deep JSON into one verified blob.\n"
        "MODEL is either a kernel tuning net prefix, e.g. .../gfx908_ConvAsm1x1U (the files\n"
        "<prefix>_encoder.ktn.model, _decoder.ktn.model and _metadata.ktn.model are read), or a\n"
        "TunaNet file <arch>.tn.model (its <arch>_metadata.tn.model is read when present).\n"
        "--rules compiles validity constraints (and may name the parameters), --encoding the\n"
        "problem -> input declaration, both in tunecast's rules language (docs/rules_language.md).\n"
        "Unsupported layers or malformed JSON are reported naming the file and layer; no output\n"
        "file is written unless the whole model verifies.\n");
    return 0;
  }
  if (!status) return usage_error("import-keras", status.message());
  if (args.positional().size() != 1 || !args.has("output")) {
    return usage_error("import-keras", "expected one MODEL and -o OUT.tcm");
  }
  std::string source = args.positional()[0];
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
  return finish("import-keras", &model, args);
}

int cmd_compile(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"output", "rules", "encoding"}, {});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast compile MODEL.tcir.json -o OUT.tcm [--rules RULES.tcr] [--encoding ENC.tce]\n\n"
        "Compiles a model exported by tunecast's trainer (docs/interchange.md) together with its\n"
        "kernel's validity rules and its feature encoding into one verified blob.\n");
    return 0;
  }
  if (!status) return usage_error("compile", status.message());
  if (args.positional().size() != 1 || !args.has("output")) {
    return usage_error("compile", "expected one MODEL.tcir.json and -o OUT.tcm");
  }
  ir::Model model;
  status = read_ir_json(args.positional()[0], &model);
  if (!status) return fail(status);
  return finish("compile", &model, args);
}

}  // namespace tunecast::cli
