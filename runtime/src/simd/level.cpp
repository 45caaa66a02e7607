// Compiled once per SIMD level with that level's target flags (runtime/CMakeLists.txt): the
// level's table of layer functions, every kernel inlined into the level's own namespace.
#include "simd/layer_table.h"
#include "simd/layers.h"


namespace tunecast::simd {
namespace {

namespace level = ::tunecast::layers::TUNECAST_SIMD_NS;

void log_softmax(float* x, size_t n) { kernels::log_softmax(x, n); }

}  // namespace

#if TUNECAST_SIMD_FMA && defined(__AVX512F__)
extern const LayerTable kLayersAvx512;
const LayerTable kLayersAvx512 = {
#elif TUNECAST_SIMD_FMA
extern const LayerTable kLayersAvx2;
const LayerTable kLayersAvx2 = {
#else
extern const LayerTable kLayersSse2;
const LayerTable kLayersSse2 = {
#endif
    &level::dense<float>,
    &level::dense<Half>,
    &level::embedding,
    &level::lstm_input<float>,
    &level::lstm_input<Half>,
    &level::lstm_batch,
    &level::lstm_sequence<float>,
    &level::lstm_sequence<Half>,
    &level::activation,
    &level::add,
    &level::concat,
    &level::conv1d<float>,
    &level::conv1d<Half>,
    &level::attention,
    &log_softmax,
};

}  // namespace tunecast::simd
