// Argument checks of fused_experts_swigluoai (fk/ops/moe_swigluoai.h), shared by its CPU
// reference and CUDA baseline. `backend` is where the implementation runs: every tensor
// must live there (the workspace aside on the CPU), and the CPU implementation, which is
// also the oracle, accepts f64 for `out`.
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>

#include "fk/ops/moe_swigluoai.h"
#include "ops/common/validate.h"

namespace fk::ops {

struct SwigluOaiShape {
  int64_t T, k, E, H, I;
};

inline SwigluOaiShape validate_fused_experts_swigluoai(const FusedExpertsSwigluOaiArgs& a, DeviceType backend) {
  constexpr const char* op = FusedExpertsSwigluOaiArgs::kName;
  expect_rank(op, "hidden", a.hidden, 2);
  expect_dtype_in(op, "hidden", a.hidden, {DType::bf16, DType::f16});
  expect_rows_contiguous(op, "hidden", a.hidden);
  expect_device(op, "hidden", a.hidden, backend);
  SwigluOaiShape s{};
  s.T = a.hidden.shape[0];
  s.H = a.hidden.shape[1];
  FK_CHECK(s.T <= 1 || a.hidden.strides[0] >= s.H, op, ": hidden rows overlap, got ", describe(a.hidden));
  expect_rank(op, "w13", a.w13, 3);
  FK_CHECK(a.w13.shape[1] % 2 == 0 && a.w13.shape[1] > 0 && a.w13.shape[0] >= 1, op,
           ": w13 must be [E, 2I, H] (gate rows then up rows), got ", describe(a.w13));
  s.E = a.w13.shape[0];
  s.I = a.w13.shape[1] / 2;
  FK_CHECK(s.H >= 1 && s.E <= 65536, op, ": needs hidden >= 1 and at most 65536 experts, got w13 ", describe(a.w13));
  expect_dim(op, "w13", a.w13, 2, s.H);
  FK_CHECK(a.w13_bias.rank == 2 && a.w13_bias.shape[0] == s.E && a.w13_bias.shape[1] == 2 * s.I, op,
           ": w13_bias must be [", s.E, ", ", 2 * s.I, "] (one bias per expert and gate/up row), got ",
           describe(a.w13_bias));
  FK_CHECK(a.w2.rank == 3 && a.w2.shape[0] == s.E && a.w2.shape[1] == s.H && a.w2.shape[2] == s.I, op,
           ": w2 must be [", s.E, ", ", s.H, ", ", s.I, "], got ", describe(a.w2));
  FK_CHECK(a.w2_bias.rank == 2 && a.w2_bias.shape[0] == s.E && a.w2_bias.shape[1] == s.H, op, ": w2_bias must be [",
           s.E, ", ", s.H, "] (one bias per expert and output row), got ", describe(a.w2_bias));
  const std::pair<const char*, const TensorView*> weights[] = {
      {"w13", &a.w13}, {"w13_bias", &a.w13_bias}, {"w2", &a.w2}, {"w2_bias", &a.w2_bias}};
  for (const auto& [name, v] : weights) {
    expect_dtype(op, name, *v, a.hidden.dtype);
    expect_contiguous(op, name, *v);
    expect_device(op, name, *v, backend);
  }
  expect_rank(op, "topk_weights", a.topk_weights, 2);
  expect_rank(op, "topk_ids", a.topk_ids, 2);
  expect_dtype(op, "topk_weights", a.topk_weights, DType::f32);
  expect_dtype(op, "topk_ids", a.topk_ids, DType::i32);
  expect_same_shape(op, "topk_weights", a.topk_weights, "topk_ids", a.topk_ids);
  expect_contiguous(op, "topk_weights", a.topk_weights);
  expect_contiguous(op, "topk_ids", a.topk_ids);
  expect_device(op, "topk_weights", a.topk_weights, backend);
  expect_device(op, "topk_ids", a.topk_ids, backend);
  FK_CHECK(a.topk_ids.shape[0] == s.T && a.topk_ids.shape[1] >= 1, op, ": topk_ids must be [", s.T,
           ", k >= 1] (one row per token), got ", describe(a.topk_ids));
  s.k = a.topk_ids.shape[1];
  FK_CHECK(s.T * s.k <= INT_MAX && s.I <= INT_MAX / 2, op, ": at most 2^31-1 slots and intermediate values, got ",
           s.T * s.k, " slots");
  expect_rank(op, "out", a.out, 2);
  expect_written_dtype(op, "out", a.out, a.hidden.dtype, backend);
  expect_contiguous(op, "out", a.out);
  expect_device(op, "out", a.out, backend);
  expect_dim(op, "out", a.out, 0, s.T);
  expect_dim(op, "out", a.out, 1, s.H);
  FK_CHECK(std::isfinite(a.alpha) && std::isfinite(a.limit) && a.limit > 0, op,
           ": alpha must be finite and limit finite and > 0, got alpha ", a.alpha, ", limit ", a.limit);
  if (backend != DeviceType::cpu) {
    const int64_t need = fused_experts_swigluoai_workspace_bytes(s.T, s.k, s.I);
    FK_CHECK(a.workspace.data != nullptr && a.workspace.nbytes() >= need, op, ": workspace needs ", need,
             " bytes (fused_experts_swigluoai_workspace_bytes), got ", describe(a.workspace));
    expect_device(op, "workspace", a.workspace, backend);
  }
  for (const auto& [name, v] : weights) expect_no_overlap(op, "out", a.out, name, *v);
  expect_no_overlap(op, "out", a.out, "hidden", a.hidden);
  expect_no_overlap(op, "out", a.out, "topk_weights", a.topk_weights);
  expect_no_overlap(op, "out", a.out, "topk_ids", a.topk_ids);
  return s;
}

}  // namespace fk::ops
