// Shared test helpers: compile an IR model into a loaded blob in aligned memory.
#pragma once

#include <doctest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
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

}  // namespace tunecast_test
