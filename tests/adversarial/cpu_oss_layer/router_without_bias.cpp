// expect: INCORRECT
// The honest gpt-oss layer, but choosing each token's experts without the router's bias:
// most tokens take experts that no near-tie allows.
#include "../cpu_layer/layer_kernels.h"

namespace {

fk_status run(const void* raw, void*) {
  adv_layer::gpt_oss_layer(*static_cast<const fk::ops::GptOssLayerArgs*>(raw), /*route_with_bias=*/false);
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(gpt_oss_layer, run)
