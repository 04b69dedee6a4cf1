// moe_layer's oracle (the CPU reference with f64 hidden, residual and caches) and the
// router and experts the op's output check recomputes from an implementation's residual.
#pragma once
#include "fk/ops/moe_layer.h"
#include "ops/layer/moe_layer_routing.h"

namespace fk::ops {

void moe_layer_reference(const MoeLayerArgs& a);

// The layer's router (no bias) and its SwiGLU experts.
MoeLayerRouter moe_layer_router(const MoeLayerArgs& a);

}  // namespace fk::ops
