// expect: INCORRECT
// The honest MoE layer, but with the top-k weights always divided by their sum: right for
// Mixtral and Qwen3-MoE, wrong for a layer that takes the softmax probabilities as they are
// (renormalize = 0, OLMoE's), which the task's check workload has.
#include "../cpu_layer/layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::moe_layer(*static_cast<const fk::ops::MoeLayerArgs*>(raw), /*renormalize_as_given=*/false);
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(moe_layer, run)
