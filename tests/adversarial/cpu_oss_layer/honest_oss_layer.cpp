// expect: PASSED
// Honest CPU candidate for gpt_oss_layer: the whole layer (norms, GEMMs with their biases,
// rope, the cache write, paged attention with sinks, the router, the top-k softmax, the
// biased experts) in loops of its own, float math. Its routing is its own: where a token's
// router logits nearly tie, it may pick other experts than the oracle, which the op's
// output check allows. Known gap: in about one run in fifteen to twenty, an edge round with
// constant rows finds one to four residual (or one hidden) elements just beyond the op's
// tolerance: its bounds are modelled from the inputs' rms, and constant rows make sums
// coherent, a hundred times that size. moe_layer holds such rows to bounds scaled by their
// own size (moe_layer_routing.h, RowTolerance); under those bounds gpt_oss_layer's baseline
// gets the huge-magnitude edge round right, and this candidate then fails its hidden rows
// there, which is not yet understood. Until it is, gpt_oss_layer keeps its fixed bounds and
// this candidate is not part of the CI run (tests/CMakeLists.txt).
#include "../cpu_layer/layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::gpt_oss_layer(*static_cast<const fk::ops::GptOssLayerArgs*>(raw));
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(gpt_oss_layer, run)
