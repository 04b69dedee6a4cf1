// expect: PASSED
// Honest CPU candidate for moe_layer: the whole layer (norms, GEMMs, q/k norms, rope, the
// cache write, paged attention, the router, the top-k softmax, the SwiGLU experts) in loops
// of its own, float math. Its routing is its own: where a token's router logits nearly tie,
// it may pick other experts than the oracle, which the op's output check allows.
#include "../cpu_layer/layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::moe_layer(*static_cast<const fk::ops::MoeLayerArgs*>(raw));
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(moe_layer, run)
