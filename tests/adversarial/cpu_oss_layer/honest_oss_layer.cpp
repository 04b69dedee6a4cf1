// expect: PASSED
// Honest CPU candidate for gpt_oss_layer: the whole layer (norms, GEMMs with their biases,
// rope, the cache write, paged attention with sinks, the router, the top-k softmax, the
// biased experts) in loops of its own, float math. Its routing is its own: where a token's
// router logits nearly tie, it may pick other experts than the oracle, which the op's
// output check allows. Known gap: in about one run in fifteen to twenty, an edge round with
// constant rows finds one to four residual (or one hidden) elements just beyond the op's
// tolerance (e.g. -0.457 for -0.523, where atol + rtol |ref| is 0.062), the first-layer
// workload among them, so the residual stream (o + s) is off before any routing; the
// decoder_layer candidate (no sinks, no biases) does not show it in 20 runs. Until that is
// understood it is not part of the CI run (tests/CMakeLists.txt).
#include "../cpu_layer/layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::gpt_oss_layer(*static_cast<const fk::ops::GptOssLayerArgs*>(raw));
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(gpt_oss_layer, run)
