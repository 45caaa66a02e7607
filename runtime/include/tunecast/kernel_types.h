// What the blob format, the compiler and generated predictors share with the layer kernels: the
// packing of product weights, the weight types and the activations. The arithmetic itself lives
// in the runtime library (layers.h), compiled once per SIMD level (simd.h).
#pragma once

#if !defined(_MSC_VER) && __cplusplus < 201703L
#error "tunecast needs C++17 or newer: compile with -std=c++17 (linking tunecast::runtime in CMake requires cxx_std_17)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tunecast::kernels {

// Matrices used in products are packed in column panels of kPanelWidth floats: a [rows][cols]
// matrix becomes ceil(cols / kPanelWidth) panels, each [rows][kPanelWidth] contiguous (the last
// zero-padded). Activation rows are padded to a multiple of kPanelWidth likewise.
constexpr int kPanelWidth = 16;

// Floats in a packed matrix.
constexpr size_t packed_size(size_t rows, size_t cols) {
  return rows * ((cols + kPanelWidth - 1) / kPanelWidth) * kPanelWidth;
}

// A binary16 weight (IEEE bit pattern, blobs compiled with `--weights fp16`): half the bytes
// streamed per multiply-add where one-row products are bound by cache bandwidth.
using Half = uint16_t;

// Exact binary16 -> binary32, in plain integer arithmetic (every SIMD level widens the same way).
inline float half_to_float(Half h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

enum class Act : uint8_t { kLinear = 0, kRelu = 1, kTanh = 2, kSigmoid = 3, kSoftmax = 4, kHardSigmoid = 5 };

}  // namespace tunecast::kernels
