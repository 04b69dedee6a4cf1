#include "ops/layer/moe_layer_validate.h"

#include "fk/ops/moe.h"

namespace fk::ops {

namespace {

constexpr const char* kOp = MoeLayerArgs::kName;

void expect_experts(const char* arg, const TensorView& v, int64_t e, int64_t rows, int64_t cols, DType dtype,
                    DeviceType backend) {
  FK_CHECK(v.rank == 3 && v.shape[0] == e && v.shape[1] == rows && v.shape[2] == cols, kOp, ": ", arg, " must be [",
           e, ", ", rows, ", ", cols, "], got ", describe(v));
  expect_dtype(kOp, arg, v, dtype);
  expect_contiguous(kOp, arg, v);
  expect_device(kOp, arg, v, backend);
}

}  // namespace

MoeLayerShape validate_moe_layer(const MoeLayerArgs& a, DeviceType backend) {
  FK_CHECK(a.renormalize == 0 || a.renormalize == 1, kOp, ": renormalize must be 0 or 1, got ", a.renormalize);
  MoeLayerShape g;
  DecoderLayerShape& s = g.attn;
  s = validate_layer_attention_half(kOp, a, backend);
  const int64_t T = s.tokens, H = s.hidden;
  FK_CHECK(arg_present(a.q_norm) == arg_present(a.k_norm), kOp, ": q_norm and k_norm come together (q_norm ",
           arg_present(a.q_norm) ? "given" : "absent", ", k_norm ", arg_present(a.k_norm) ? "given" : "absent", ")");
  if (arg_present(a.q_norm)) {
    expect_layer_vector(kOp, "q_norm", a.q_norm, s.head_dim, s.model, backend);
    expect_layer_vector(kOp, "k_norm", a.k_norm, s.head_dim, s.model, backend);
  }

  expect_rank(kOp, "router_weight", a.router_weight, 2);
  g.experts = a.router_weight.shape[0];
  FK_CHECK(g.experts >= 1, kOp, ": router_weight must be [experts >= 1, hidden], got ", describe(a.router_weight));
  const int64_t E = g.experts;
  expect_layer_matrix(kOp, "router_weight", a.router_weight, E, H, s.model, backend);
  FK_CHECK(a.w13.rank == 3 && a.w13.shape[1] % 2 == 0 && a.w13.shape[1] > 0, kOp,
           ": w13 must be [experts, 2 * intermediate, hidden] (gate rows then up rows), got ", describe(a.w13));
  s.intermediate = a.w13.shape[1] / 2;
  const int64_t I = s.intermediate;
  expect_experts("w13", a.w13, E, 2 * I, H, s.model, backend);
  expect_experts("w2", a.w2, E, H, I, s.model, backend);

  expect_rank(kOp, "topk_ids", a.topk_ids, 2);
  g.top_k = a.topk_ids.shape[1];
  FK_CHECK(g.top_k >= 1 && g.top_k <= E, kOp, ": topk_ids must be [tokens, k] with 1 <= k <= experts (", E,
           "), got ", describe(a.topk_ids));
  expect_layer_matrix(kOp, "topk_ids", a.topk_ids, T, g.top_k, DType::i32, backend);
  expect_layer_matrix(kOp, "topk_weights", a.topk_weights, T, g.top_k, DType::f32, backend);
  expect_layer_matrix(kOp, "router_logits", a.router_logits, T, E, s.model, backend);
  // The CPU implementation of the experts needs no scratch.
  const int64_t need = fused_experts_workspace_bytes(T, g.top_k, E, H, I);
  FK_CHECK(backend == DeviceType::cpu || a.moe_workspace.numel() >= need, kOp,
           ": moe_workspace must hold fused_experts_workspace_bytes(", T, ", ", g.top_k, ", ", E, ", ", H, ", ", I,
           ") = ", need, " bytes, got ", describe(a.moe_workspace));
  return g;
}

}  // namespace fk::ops
