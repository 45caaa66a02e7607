// ir::Model -> verified blob. Matrices that feed products are packed into the runtime's column
// panels here, once, so loading does no per-weight work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// How packed product weights (Dense, Conv1D, LSTM kernels) are stored. kFp16 halves the bytes a
// one-row product streams; embedding and token tables and biases stay fp32 either way. Whether
// fp16 weights predict the same is the caller's check (tunecast compile --weights fp16 does it).
enum class WeightStorage { kFp32, kFp16 };

struct BlobOptions {
  WeightStorage weights = WeightStorage::kFp32;
};

// Serializes `model`, then loads the bytes with the runtime's verifier: a blob that comes out of
// here is one the runtime accepts. With fp16 storage a weight beyond fp16's range is an error.
Status write_blob(const ir::Model& model, std::vector<uint8_t>* blob,
                  const BlobOptions& options = {});

// The serialization alone, without the runtime's verification: for tests and fuzz seeds that need
// blobs the runtime must refuse (bad shapes, bad bytecode). Never for shipping models.
void serialize_blob_unverified(const ir::Model& model, std::vector<uint8_t>* blob,
                               const BlobOptions& options = {});

// Metadata text with every absolute path ("/root/out/s/asm_m80", "~/x") replaced by its last
// component ("asm_m80"): the blob writer writes metadata through it, so no build path ships.
std::string strip_absolute_paths(const std::string& text);

// The architectures the model covers, from its metadata "arch" (comma-separated; ":feature"
// suffixes dropped, each name once, what is no architecture name left out): the blob's `archs`.
std::vector<std::string> covered_archs(const ir::Model& model);

// IEEE binary32 -> binary16 bit pattern, rounded to nearest (ties to even); overflow gives inf.
uint16_t float_to_half(float value);

// Packs a row-major [rows][cols] matrix into the runtime's panel layout.
std::vector<float> pack_panels(const ir::Matrix& matrix);

}  // namespace tunecast::codegen
