// The trainer's interchange format (`*.tcir.json`, docs/interchange.md): a JSON mirror of
// ir::Model. The reader is strict: unknown fields, wrong types and out-of-range enums are errors
// naming the file and the JSON path, so a typo in an exporter fails loudly instead of falling back
// to a default. Feature encodings and constraints are not part of this format (they come from the
// rules language) and are neither read nor written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tunecast/codegen/model_ir.h"
#include "tunecast/status.h"

namespace tunecast {

inline constexpr const char* kIrJsonFormat = "tunecast-ir";
inline constexpr int kIrJsonVersion = 1;

Status read_ir_json(const std::string& path, ir::Model* out);
// `source` names the text in error messages.
Status parse_ir_json(std::string_view text, std::string_view source, ir::Model* out);
// Pretty-printed JSON; weights as base64 float32 little-endian. Fields at their default are
// left out.
Status write_ir_json(const ir::Model& model, std::string* out);

// float32 little-endian <-> base64, the weight encoding of this format and of frugally-deep.
std::string encode_floats_base64(const float* values, size_t count);
// Appends the bytes of one base64 string (standard alphabet, '=' padding only at its end).
// On malformed input returns false with the offending character's offset in *error_at.
bool decode_base64(std::string_view text, std::vector<uint8_t>* bytes, size_t* error_at);

}  // namespace tunecast
