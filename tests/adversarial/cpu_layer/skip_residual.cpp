// expect: INCORRECT
// The honest layer with the residual add after the attention left out: the stream the
// next layer reads is the attention's output alone.
#include "layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::decoder_layer(*static_cast<const fk::ops::DecoderLayerArgs*>(raw), /*add_residual=*/false);
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(decoder_layer, run)
