// fused_moe CUDA baseline: the routing kernel, then fused_experts (its GEMV path at decode).
// (The GEMV kernels computing the routing themselves instead measured slower:
// bench/results/h100/moe_route_in_kernel.json.)

#include "fk/op_registry.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/moe/fused_experts_cuda.h"
#include "ops/moe/fused_moe_validate.h"
#include "ops/moe/moe_routing_cuda.h"

namespace fk::ops {
namespace {

fk_status fused_moe_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedMoeArgs*>(args);
    const FusedExpertsShape sh = validate_fused_moe(a, DeviceType::cuda);
    const FusedExpertsArgs experts = fused_moe_experts_part(a);
    moe_cuda::expect_fused_experts_supported(experts, sh, a.kName);
    if (sh.E > moe_cuda::kRoutingMaxExperts)
      FK_FAIL(FK_ERR_UNSUPPORTED, a.kName, ": the CUDA baseline handles up to ", moe_cuda::kRoutingMaxExperts,
              " experts, got ", sh.E);
    if (sh.T == 0) return;
    const cuda::PdlOffScope pdl(pdl_off_for(a.kName));  // its routing and experts kernels alike
    moe_cuda::launch_routing(a.topk_weights, a.topk_ids, a.gating_output, a.kName, MoeScoring::softmax, TensorView{},
                             1, 1, a.renormalize, 1.f, stream);
    moe_cuda::launch_fused_experts(experts, sh, stream);
  });
}

FK_REGISTER_IMPL("fused_moe", cuda, fused_moe_cuda);

}  // namespace
}  // namespace fk::ops
