// emit-cpp and embed: a verified blob in, C++ sources out (atomically, both or neither valid).
#include <cstdio>
#include <filesystem>

#include "cli.h"
#include "tunecast/codegen/cpp_emitter.h"

namespace tunecast::cli {
namespace {

std::string join_path(const std::string& dir, const std::string& file) {
  return dir.empty() || dir.back() == '/' ? dir + file : dir + "/" + file;
}

Status write_pair(const std::string& dir, const std::string& name, const std::string& header,
                  const std::string& source) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);  // like mkdir -p: an existing DIR is fine
  if (error) {
    return Status::error(StatusCode::kIoError, "cannot create '%s': %s", dir.c_str(), error.message().c_str());
  }
  TUNECAST_RETURN_IF_ERROR(codegen::write_file_atomic(join_path(dir, name + ".h"), header));
  return codegen::write_file_atomic(join_path(dir, name + ".cpp"), source);
}

// Before any work: neither DIR/NAME.h nor DIR/NAME.cpp may be the input (same device and inode, as
// prepare_output checks for every command's output), or writing it would replace the model. A DIR
// that does not exist yet holds neither; write_pair makes it.
Status check_pair_outputs(const std::string& dir, const std::string& name, const std::string& input) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return Status::ok();
  for (const char* suffix : {".h", ".cpp"}) {
    TUNECAST_RETURN_IF_ERROR(prepare_output(join_path(dir, name + suffix), {input}, false));
  }
  return Status::ok();
}

// Reads -o, --namespace, --name shared by both commands.
Status output_names(const Args& args, std::string* dir, std::string* name_space,
                    std::string* name) {
  *dir = args.get("output");
  if (*dir == "-") {
    return Status::error(StatusCode::kInvalidArgument, "-o names a folder (NAME.h and NAME.cpp are written there), not stdout");
  }
  *name_space = args.get("namespace", "tunecast_generated");
  *name = args.get("name");
  if (name->empty()) {
    return Status::error(StatusCode::kInvalidArgument, "--name is required");
  }
  return Status::ok();
}

}  // namespace

int cmd_emit_cpp(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"output", "namespace", "name", "max-beam"}, {"thread-local-scratch"});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast emit-cpp MODEL.tcm -o DIR --name NAME [--namespace NS] [--max-beam K]\n"
        "                         [--thread-local-scratch]\n\n"
        "Writes DIR/NAME.h and DIR/NAME.cpp (DIR is created if needed): struct NS::NAME, a\n"
        "predictor with the model's weights as aligned constant arrays, layer sizes as\n"
        "compile-time constants, the constraints and feature encoding compiled to C++, and the\n"
        "blob runtime's beam search. Its predictions equal tunecast::predict's on the blob, bit\n"
        "for bit. Link against tunecast's runtime.\n\n"
        "  --name      struct name and file stem (a C++ identifier)\n"
        "  --namespace enclosing namespace, may be nested (a::b); default tunecast_generated\n"
        "  --max-beam  largest beam width the generated Scratch holds (1..%d, default 16)\n"
        "  --thread-local-scratch\n"
        "              also emit a predict() overload that uses a thread_local Scratch; every thread\n"
        "              of the process then holds one (zeroed, so resident), predicting or not\n",
        kMaxBeamWidth);
    return 0;
  }
  if (!status) return usage_error("emit-cpp", status.message());
  if (args.positional().size() != 1 || !args.has("output")) {
    return usage_error("emit-cpp", "expected one MODEL and -o DIR");
  }
  std::string dir;
  codegen::CppEmitOptions options;
  status = output_names(args, &dir, &options.name_space, &options.name);
  if (status) status = args.get_int("max-beam", 16, &options.max_beam);
  options.thread_local_scratch = args.has("thread-local-scratch");
  if (!status) return usage_error("emit-cpp", status.message());
  // The file name alone: generated code must not depend on where the tree was checked out.
  options.source = std::filesystem::path(args.positional()[0]).filename().string();
  status = check_pair_outputs(dir, options.name, args.positional()[0]);
  if (!status) return fail(status);

  LoadedModel loaded;
  status = load_model_file(args.positional()[0], &loaded);
  if (!status) return fail(status);
  if (!loaded.model.has_predictor()) {
    return fail(Status::error(StatusCode::kInvalidArgument,
                              "%s is a kernel definition without a predictor: embed it as a blob (tunecast embed) "
                              "for tunecast::search",
                              args.positional()[0].c_str()));
  }
  codegen::CppSources sources;
  status = codegen::emit_cpp(loaded.model, options, &sources);
  if (status) status = write_pair(dir, options.name, sources.header, sources.source);
  if (!status) return fail(status);
  std::fprintf(stderr, "emit-cpp: wrote %s.h and %s.cpp (%zu + %zu bytes, beams up to %d)\n",
              join_path(dir, options.name).c_str(), join_path(dir, options.name).c_str(),
              sources.header.size(), sources.source.size(), options.max_beam);
  return 0;
}

int cmd_embed(const std::vector<std::string>& argv) {
  Args args;
  Status status = args.parse(argv, {"output", "namespace", "name"}, {});
  if (args.has("help")) {
    std::printf(
        "usage: tunecast embed MODEL.tcm -o DIR --name NAME [--namespace NS]\n\n"
        "Writes DIR/NAME.h and DIR/NAME.cpp (DIR is created if needed) holding the blob as an\n"
        "alignas(32) byte array with accessors NS::NAME_data() and NS::NAME_size(), ready for\n"
        "tunecast::Model::load. The blob is verified before it is embedded.\n");
    return 0;
  }
  if (!status) return usage_error("embed", status.message());
  if (args.positional().size() != 1 || !args.has("output")) {
    return usage_error("embed", "expected one MODEL and -o DIR");
  }
  std::string dir, name_space, name;
  status = output_names(args, &dir, &name_space, &name);
  if (!status) return usage_error("embed", status.message());
  status = check_pair_outputs(dir, name, args.positional()[0]);
  if (!status) return fail(status);
  LoadedModel loaded;
  status = load_model_file(args.positional()[0], &loaded);
  if (!status) return fail(status);
  std::string header, source;
  status = codegen::emit_embedded_blob(loaded.file.data(), loaded.file.size(), name_space, name,
                                       args.positional()[0], &header, &source);
  if (status) status = write_pair(dir, name, header, source);
  if (!status) return fail(status);
  std::fprintf(stderr, "embed: wrote %s.h and %s.cpp (%zu-byte blob)\n", join_path(dir, name).c_str(),
              join_path(dir, name).c_str(), loaded.file.size());
  return 0;
}

}  // namespace tunecast::cli
