// gpt_oss_layer's oracle (the CPU reference with f64 hidden, residual and caches) and the
// router and experts the op's output check recomputes from an implementation's residual.
#pragma once
#include "fk/ops/gpt_oss_layer.h"
#include "ops/layer/moe_layer_routing.h"

namespace fk::ops {

void gpt_oss_layer_reference(const GptOssLayerArgs& a);

// The layer's router and experts (the clamped SwiGLU with biases), for its output check.
MoeLayerRouter gpt_oss_layer_router(const GptOssLayerArgs& a);

}  // namespace fk::ops
