// fused_moe CUDA baseline: the routing kernel, then fused_experts (its GEMV path at decode).
//
// FK_MOE_ROUTE_IN_KERNEL=1 instead has the two decode GEMV kernels compute the routing
// themselves from the router logits (no routing kernel, no launch boundary for it). It is
// off by default because it measured slower: Qwen3-30B-A3B's batch-1 decode step takes
// 3.123-3.135 ms against 3.057-3.058 with the routing kernel on an H100, though the
// routing is computed once per CTA and the kernels keep their register budgets (3.45
// against 3.36 before that). gate_up with the top-k inside is faster than the routing
// kernel and gate_up together (981-989 against 1,045 + 126 us a step), but the down
// kernel loses its weight loads issued ahead of gate_up's end: it computes the top-k
// first, or waits for gate_up's published routing (496-509 against 265 us a step;
// bench/results/h100/moe_route_in_kernel.json). Either way the routing written is
// bit-identical to moe_topk_softmax's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/op_registry.h"
#include "ops/moe/fused_experts_cuda.h"
#include "ops/moe/fused_moe_validate.h"
#include "ops/moe/moe_decode_gemv.h"
#include "ops/moe/moe_routing_cuda.h"
#include "ops/moe/moe_workspace.h"

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
    if (moe_decode::route_in_kernel() && moe_decode::use_decode_gemv(sh) && moe_decode::can_route_in_kernel(sh)) {
      const MoeWorkspace ws = carve_moe_workspace(a.workspace.data, sh.T, sh.k, sh.E, sh.H, sh.I);
      auto s = static_cast<cudaStream_t>(stream);
      if (a.hidden.dtype == DType::bf16)
        moe_decode::run_decode_gemv_routed<__nv_bfloat16>(experts, sh, ws, a.gating_output, a.renormalize, s);
      else moe_decode::run_decode_gemv_routed<__half>(experts, sh, ws, a.gating_output, a.renormalize, s);
      return;
    }
    moe_cuda::launch_routing(a.topk_weights, a.topk_ids, a.gating_output, a.kName, MoeScoring::softmax, TensorView{},
                             1, 1, a.renormalize, 1.f, stream);
    moe_cuda::launch_fused_experts(experts, sh, stream);
  });
}

FK_REGISTER_IMPL("fused_moe", cuda, fused_moe_cuda);

}  // namespace
}  // namespace fk::ops
