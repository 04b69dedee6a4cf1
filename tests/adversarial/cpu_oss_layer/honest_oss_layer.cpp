// expect: PASSED
// Honest CPU candidate for gpt_oss_layer: the whole layer (norms, GEMMs with their biases,
// rope, the cache write, paged attention with sinks, the router, the top-k softmax, the
// biased experts) in loops of its own, float math. Its routing is its own: where a token's
// router logits nearly tie, it may pick other experts than the oracle, which the op's
// output check allows.
#include "../cpu_layer/layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::gpt_oss_layer(*static_cast<const fk::ops::GptOssLayerArgs*>(raw));
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(gpt_oss_layer, run)
