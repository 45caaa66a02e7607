// Shared test helpers: compile an IR model into a loaded blob in aligned memory; a temporary folder;
// a whole file as text.
#pragma once

#include <doctest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tunecast/codegen/blob_writer.h"
#include "tunecast/model.h"

namespace tunecast_test {

// Blob bytes in 64-byte aligned memory, as a mapped file or embedded array would be.
struct AlignedBlob {
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes{nullptr, &std::free};
  size_t size = 0;

  void assign(const std::vector<uint8_t>& blob) {
    bytes.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (blob.size() + 63) / 64 * 64)));
    if (!blob.empty()) std::memcpy(bytes.get(), blob.data(), blob.size());
    size = blob.size();
  }
};

struct CompiledModel {
  AlignedBlob blob;
  tunecast::Model model;
};

// Writes and loads `ir`; fails the current test with the status message otherwise.
inline void compile_model(const tunecast::ir::Model& ir, CompiledModel* out,
                          const tunecast::codegen::BlobOptions& options = {}) {
  std::vector<uint8_t> bytes;
  tunecast::Status status = tunecast::codegen::write_blob(ir, &bytes, options);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  out->blob.assign(bytes);
  status = tunecast::Model::load(out->blob.bytes.get(), out->blob.size, &out->model);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
}

// A fresh folder under /tmp, removed with everything in it at the end of the scope.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char pattern[] = "/tmp/tunecast_test_XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Every name in the folder (to see leftovers such as temporary files).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(path)) out.push_back(entry.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// The file's bytes ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

#ifdef TUNECAST_CLI_PATH
// What the built CLI printed and returned.
struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs the built CLI with `args` (already shell-quoted where needed); its output goes through
// files in `dir`.
inline CliResult run_cli(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file(".stdout"), err = dir.file(".stderr");
  const std::string command = std::string("'") + TUNECAST_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}
#endif

}  // namespace tunecast_test
