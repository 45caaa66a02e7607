// The layer functions of one SIMD level: simd/level.cpp fills one table per level, dispatch.cpp
// routes the public tunecast/layers.h functions through the active table.
#pragma once

#include "tunecast/layers.h"

namespace tunecast::simd {

using kernels::Act;
using kernels::Half;

struct LayerTable {
  void (*dense_f32)(const float*, size_t, size_t, size_t, const float*, size_t, const float*, Act,
                    float*, size_t);
  void (*dense_f16)(const float*, size_t, size_t, size_t, const Half*, size_t, const float*, Act,
                    float*, size_t);
  Status (*embedding)(const char*, const float*, size_t, size_t, const float*, size_t, size_t,
                      float*, size_t);
  Status (*lstm_input_f32)(const char*, bool, const float*, size_t, size_t, const float*, size_t,
                           size_t, const float*, float*, size_t);
  Status (*lstm_input_f16)(const char*, bool, const float*, size_t, size_t, const Half*, size_t,
                           size_t, const float*, float*, size_t);
  Status (*lstm_batch)(const char*, bool, const float*, size_t, size_t, layers::AnyWeights, size_t,
                       size_t, const float*, layers::AnyWeights, const float*, size_t,
                       const float*, size_t, Act, Act, float*, size_t, float*, size_t, float*,
                       size_t);
  void (*lstm_sequence_f32)(size_t, size_t, const float*, const float*, const float*, Act, Act,
                            bool, bool, float*, size_t, float*, float*, float*, size_t);
  void (*lstm_sequence_f16)(size_t, size_t, const Half*, const float*, const float*, Act, Act,
                            bool, bool, float*, size_t, float*, float*, float*, size_t);
  void (*activation)(Act, const float*, size_t, size_t, size_t, float*);
  void (*add)(const float* const*, size_t, size_t, float*);
  void (*concat)(const float* const*, const size_t*, const size_t*, size_t, size_t, float*,
                 size_t);
  void (*conv1d_f32)(const float*, size_t, size_t, size_t, size_t, bool, const float*, size_t,
                     const float*, Act, float*, float*, size_t, size_t);
  void (*conv1d_f16)(const float*, size_t, size_t, size_t, size_t, bool, const Half*, size_t,
                     const float*, Act, float*, float*, size_t, size_t);
  void (*attention)(const float*, size_t, size_t, size_t, const float*, size_t, size_t, float*,
                    size_t, float*, size_t);
  void (*log_softmax)(float*, size_t);
};

// One per level compiled into this build (TUNECAST_SIMD_LEVELS in runtime/CMakeLists.txt).
extern const LayerTable kLayersSse2;
extern const LayerTable kLayersAvx2;
extern const LayerTable kLayersAvx512;

}  // namespace tunecast::simd
