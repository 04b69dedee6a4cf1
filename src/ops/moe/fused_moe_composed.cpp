// fused_moe composed of registry calls: moe_topk_softmax writes the routing into the fused
// op's topk_weights and topk_ids (outputs of the fused op too), then fused_experts reads it.
#include "ops/moe/fused_moe_composed.h"

#include "fk/op_registry.h"
#include "fk/ops/moe.h"
#include "fk/status.h"

namespace fk::ops {

template <DeviceType Backend>
fk_status fused_moe_composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedMoeArgs*>(args);
    call_op(MoeTopkSoftmaxArgs{a.topk_weights, a.topk_ids, a.gating_output, a.renormalize}, Backend, stream);
    call_op(FusedExpertsArgs{a.out, a.hidden, a.w13, a.w2, a.w13_scale, a.w2_scale, a.topk_weights, a.topk_ids,
                             a.workspace},
            Backend, stream);
  });
}

template fk_status fused_moe_composed<DeviceType::cpu>(const void*, void*);
template fk_status fused_moe_composed<DeviceType::cuda>(const void*, void*);

FK_REGISTER_VARIANT("fused_moe", "unfused", "moe_topk_softmax, then fused_experts, as separate registry calls");

}  // namespace fk::ops
