// ir::Model -> verified blob. Matrices that feed products are packed into the runtime's column
// panels here, once, so loading does no per-weight work.
#pragma once

#include <cstdint>
#include <vector>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast::codegen {

// Serializes `model`, then loads the bytes with the runtime's verifier: a blob that comes out of
// here is one the runtime accepts.
Status write_blob(const ir::Model& model, std::vector<uint8_t>* blob);

// The serialization alone, without the runtime's verification: for tests and fuzz seeds that need
// blobs the runtime must refuse (bad shapes, bad bytecode). Never for shipping models.
void serialize_blob_unverified(const ir::Model& model, std::vector<uint8_t>* blob);

// Packs a row-major [rows][cols] matrix into the runtime's panel layout.
std::vector<float> pack_panels(const ir::Matrix& matrix);

}  // namespace tunecast::codegen
