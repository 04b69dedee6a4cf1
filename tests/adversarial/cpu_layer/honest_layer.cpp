// expect: PASSED
// Honest CPU candidate for decoder_layer: the whole layer (norms, GEMMs, q/k norms and rope,
// the cache write, paged attention, SwiGLU) in loops of its own, float math, activations
// rounded to the model dtype where an engine stores them.
#include "layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::decoder_layer(*static_cast<const fk::ops::DecoderLayerArgs*>(raw));
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(decoder_layer, run)
