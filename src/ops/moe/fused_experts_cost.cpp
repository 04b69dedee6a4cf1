#include "ops/moe/fused_experts_cost.h"

#include "ops/moe/moe_case.h"

namespace fk::ops {

OpCost fused_experts_cost(const FusedExpertsArgs& a) {
  const int64_t E = a.w13.shape[0], H = a.w13.shape[2], I = a.w13.shape[1] / 2;
  const double per_expert =
      static_cast<double>(a.w13.nbytes() + a.w2.nbytes() + a.w13_scale.nbytes() + a.w2_scale.nbytes()) /
      static_cast<double>(E);
  int64_t slots = 0;
  const int64_t n = a.topk_ids.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t e = static_cast<const int32_t*>(a.topk_ids.data)[i];
    slots += e >= 0 && e < E;
  }
  const double bytes = static_cast<double>(distinct_experts(a.topk_ids, E)) * per_expert +
                       static_cast<double>(a.hidden.nbytes() + a.out.nbytes() + a.topk_ids.nbytes() +
                                           a.topk_weights.nbytes());
  const double flops = 2.0 * static_cast<double>(slots) * 3.0 * static_cast<double>(H) * static_cast<double>(I);
  return OpCost{bytes, flops, a.hidden.dtype};
}

}  // namespace fk::ops
