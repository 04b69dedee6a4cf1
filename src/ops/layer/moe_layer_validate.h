// Argument checks of moe_layer, shared by its CPU reference, its composition of the parts,
// its plan and its output check. Only what the layer itself must agree on: the parts check
// the rest of their arguments.
#pragma once
#include <cstdint>

#include "fk/ops/moe_layer.h"
#include "ops/layer/decoder_layer_validate.h"

namespace fk::ops {

struct MoeLayerShape {
  DecoderLayerShape attn;  // tokens, hidden, heads, ..., seqs, model (intermediate: the experts')
  int64_t experts = 0;     // E
  int64_t top_k = 0;       // k
};

// `backend`: where the device tensors live. The CPU reference (also the oracle) takes f64
// for hidden, residual and the caches.
MoeLayerShape validate_moe_layer(const MoeLayerArgs& a, DeviceType backend);

}  // namespace fk::ops
