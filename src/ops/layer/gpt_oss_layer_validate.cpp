#include "ops/layer/gpt_oss_layer_validate.h"

#include "fk/ops/moe_swigluoai.h"

namespace fk::ops {

namespace {

constexpr const char* kOp = GptOssLayerArgs::kName;

void expect_matrix(const char* arg, const TensorView& v, int64_t rows, int64_t cols, DType dtype, DeviceType backend,
                   bool written = false) {
  expect_layer_matrix(kOp, arg, v, rows, cols, dtype, backend, written);
}

void expect_vector(const char* arg, const TensorView& v, int64_t size, DType dtype, DeviceType backend) {
  expect_layer_vector(kOp, arg, v, size, dtype, backend);
}

void expect_experts(const char* arg, const TensorView& v, int64_t e, int64_t rows, int64_t cols, DType dtype,
                    DeviceType backend) {
  FK_CHECK(v.rank == 3 && v.shape[0] == e && v.shape[1] == rows && v.shape[2] == cols, kOp, ": ", arg, " must be [",
           e, ", ", rows, ", ", cols, "], got ", describe(v));
  expect_dtype(kOp, arg, v, dtype);
  expect_contiguous(kOp, arg, v);
  expect_device(kOp, arg, v, backend);
}

}  // namespace

GptOssLayerShape validate_gpt_oss_layer(const GptOssLayerArgs& a, DeviceType backend) {
  FK_CHECK(a.swiglu_limit > 0, kOp, ": swiglu_limit must be positive, got ", a.swiglu_limit);
  GptOssLayerShape g;
  DecoderLayerShape& s = g.attn;
  s = validate_layer_attention_half(kOp, a, backend);
  const int64_t T = s.tokens, H = s.hidden;
  expect_vector("qkv_bias", a.qkv_bias, (s.heads + 2 * s.kv_heads) * s.head_dim, s.model, backend);
  FK_CHECK(a.sinks.rank == 1 && a.sinks.shape[0] == s.heads, kOp, ": sinks must be [num_heads = ", s.heads,
           "] (one sink logit per query head), got ", describe(a.sinks));
  expect_vector("sinks", a.sinks, s.heads, DType::f32, backend);
  expect_vector("o_bias", a.o_bias, H, s.model, backend);

  expect_rank(kOp, "router_weight", a.router_weight, 2);
  g.experts = a.router_weight.shape[0];
  FK_CHECK(g.experts >= 1, kOp, ": router_weight must be [experts >= 1, hidden], got ", describe(a.router_weight));
  const int64_t E = g.experts;
  expect_matrix("router_weight", a.router_weight, E, H, s.model, backend);
  expect_vector("router_bias", a.router_bias, E, s.model, backend);
  FK_CHECK(a.w13.rank == 3 && a.w13.shape[1] % 2 == 0 && a.w13.shape[1] > 0, kOp,
           ": w13 must be [experts, 2 * intermediate, hidden] (gate rows then up rows), got ", describe(a.w13));
  s.intermediate = a.w13.shape[1] / 2;
  const int64_t I = s.intermediate;
  expect_experts("w13", a.w13, E, 2 * I, H, s.model, backend);
  expect_matrix("w13_bias", a.w13_bias, E, 2 * I, s.model, backend);
  expect_experts("w2", a.w2, E, H, I, s.model, backend);
  expect_matrix("w2_bias", a.w2_bias, E, H, s.model, backend);

  expect_rank(kOp, "topk_ids", a.topk_ids, 2);
  g.top_k = a.topk_ids.shape[1];
  FK_CHECK(g.top_k >= 1 && g.top_k <= E, kOp, ": topk_ids must be [tokens, k] with 1 <= k <= experts (", E,
           "), got ", describe(a.topk_ids));
  expect_matrix("topk_ids", a.topk_ids, T, g.top_k, DType::i32, backend);
  expect_matrix("topk_weights", a.topk_weights, T, g.top_k, DType::f32, backend);
  expect_matrix("lse", a.lse, T, s.heads, DType::f32, backend);
  expect_matrix("router_logits", a.router_logits, T, E, s.model, backend);
  // The CPU implementation of the experts needs no scratch.
  FK_CHECK(backend == DeviceType::cpu || a.moe_workspace.numel() >= fused_experts_swigluoai_workspace_bytes(T, g.top_k, I), kOp,
           ": moe_workspace must hold fused_experts_swigluoai_workspace_bytes(", T, ", ", g.top_k, ", ", I, ") = ",
           fused_experts_swigluoai_workspace_bytes(T, g.top_k, I), " bytes, got ", describe(a.moe_workspace));
  return g;
}

}  // namespace fk::ops
