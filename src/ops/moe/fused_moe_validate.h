// fused_moe as its two parts (moe_topk_softmax, then fused_experts on the routing it
// wrote), and its argument checks: those of both parts, named fused_moe, plus the shapes
// that tie them together. Shared by the CPU reference and the CUDA baseline.
#pragma once
#include "fk/ops/moe.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {

inline MoeTopkSoftmaxArgs fused_moe_routing_part(const FusedMoeArgs& a) {
  return MoeTopkSoftmaxArgs{a.topk_weights, a.topk_ids, a.gating_output, a.renormalize};
}

inline FusedExpertsArgs fused_moe_experts_part(const FusedMoeArgs& a) {
  return FusedExpertsArgs{a.out,          a.hidden,   a.w13,      a.w2, a.w13_scale, a.w2_scale,
                          a.topk_weights, a.topk_ids, a.workspace};
}

inline FusedExpertsShape validate_fused_moe(const FusedMoeArgs& a, DeviceType backend) {
  constexpr const char* op = FusedMoeArgs::kName;
  expect_rank(op, "gating_output", a.gating_output, 2);
  expect_rank(op, "hidden", a.hidden, 2);
  FK_CHECK(a.gating_output.shape[0] == a.hidden.shape[0], op, ": gating_output must have one row per token (",
           a.hidden.shape[0], " rows, as hidden), got ", describe(a.gating_output));
  validate_routing_common(fused_moe_routing_part(a), backend, op);
  const FusedExpertsShape sh = validate_fused_experts(fused_moe_experts_part(a), backend, op,
                                                      /*topk_weights_written=*/true);
  FK_CHECK(a.gating_output.shape[1] == sh.E, op, ": gating_output must have one column per expert of w13 (", sh.E,
           "), got ", describe(a.gating_output));
  // The routing is written: it must not alias what the experts read.
  for (const auto& [name, v] : {std::pair{"topk_weights", a.topk_weights}, std::pair{"topk_ids", a.topk_ids}}) {
    expect_no_overlap(op, name, v, "hidden", a.hidden);
    expect_no_overlap(op, name, v, "w13", a.w13);
    expect_no_overlap(op, name, v, "w2", a.w2);
    expect_no_overlap(op, name, v, "w13_scale", a.w13_scale);
    expect_no_overlap(op, name, v, "w2_scale", a.w2_scale);
  }
  expect_no_overlap(op, "out", a.out, "gating_output", a.gating_output);
  if (backend == DeviceType::cuda) expect_no_overlap(op, "workspace", a.workspace, "gating_output", a.gating_output);
  return sh;
}

}  // namespace fk::ops
