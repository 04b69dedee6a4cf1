// moe_layer's oracle: the references of the ops the layer is made of, in the layer's order
// (fk/ops/moe_layer.h), with every intermediate in f64 but the rounded state: the residual
// stream (the norms read the rounded values) and q, k, v (the cache and the attention read
// them in the dtype). The routing is the top-k of the f64 logits.
#include "ops/layer/moe_layer_reference.h"

#include <cmath>

#include "fk/element.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/layer/moe_layer_validate.h"
#include "ops/linear/linear_reference.h"
#include "ops/moe/fused_experts_reference.h"
#include "ops/norm/norm_reference.h"

namespace fk::ops {

namespace {

constexpr const char* kOp = MoeLayerArgs::kName;

// The experts of `weights` / `ids` [n, k] on x [n, H] into out [n, H] (any dtypes).
void experts(const MoeLayerArgs& a, const TensorView& out, const TensorView& x, const TensorView& weights,
             const TensorView& ids) {
  fused_experts_reference(FusedExpertsArgs{out, x, a.w13, a.w2, TensorView{}, TensorView{}, weights, ids, TensorView{}});
}

}  // namespace

MoeLayerRouter moe_layer_router(const MoeLayerArgs& a) {
  MoeLayerRouter r{a.post_attention_norm, a.router_weight, TensorView{}, a.eps, a.renormalize != 0, {}};
  r.expert_row = [a](const TensorView& x, int64_t row, int32_t e) {
    // act = silu(g) * u with [g | u] = w13[e] @ x[row], as fused_experts_reference.
    GateUp gu = gate_up_row(a.w13, TensorView{}, e, x, row);
    std::vector<double>& act = gu.g;
    for (size_t i = 0; i < act.size(); ++i) act[i] = act[i] / (1.0 + std::exp(-act[i])) * gu.u[i];
    return down_projection(a.w2, TensorView{}, e, act);
  };
  return r;
}

void moe_layer_reference(const MoeLayerArgs& a) {
  const MoeLayerShape g = validate_moe_layer(a, DeviceType::cpu);
  const DecoderLayerShape& s = g.attn;
  if (s.tokens == 0) return;
  check_layer_before_writing(kOp, a, s);
  const int64_t T = s.tokens, H = s.hidden, k = g.top_k;
  const TensorView none{};

  // The input norm and the QKV projection; the stream s in residual_mid (rounded), or in
  // hidden itself on the first layer.
  Tensor normed = f64_matrix(T, H), attn_out = f64_matrix(T, s.q_size()), first_o = f64_matrix(T, H);
  const TensorView& stream = a.first_layer ? a.hidden : a.residual_mid;
  if (a.first_layer) {
    rms_norm_reference(normed, a.hidden, nullptr, a.input_norm, a.eps, NormScale::weight);
  } else {
    copy_values(a.residual_mid, a.residual);
    rms_norm_reference(normed, a.hidden, &a.residual_mid, a.input_norm, a.eps, NormScale::weight);
  }
  linear_reference(LinearArgs{a.qkv, normed, a.qkv_weight, a.qkv_bias, none, none});

  // Rope (after the per-head q/k norms), the cache write, the attention.
  const DecoderLayerViews v = qkv_views(a.qkv, attn_out, s);
  layer_rope_and_cache_reference(kOp, a, v, arg_present(a.q_norm) ? &a.q_norm : nullptr,
                                 arg_present(a.q_norm) ? &a.k_norm : nullptr);
  layer_attention_reference(kOp, a, s, v);

  // o (into hidden, or the first layer's own buffer), residual = o + s, the router.
  const TensorView o = a.first_layer ? first_o.view() : a.hidden;
  linear_reference(LinearArgs{o, attn_out, a.o_weight, none, none, none});
  copy_values(a.residual, stream);
  rms_norm_reference(normed, o, &a.residual, a.post_attention_norm, a.eps, NormScale::weight);
  Tensor logits = f64_matrix(T, g.experts);
  linear_reference(LinearArgs{logits, normed, a.router_weight, none, none, none});

  // Top-k of the f64 logits, their weights, the experts.
  const MoeLayerRouter router = moe_layer_router(a);
  const RoutedRows routed = route_rows(router, logits, k);
  experts(a, a.hidden, normed, routed.weights, routed.ids);
}

}  // namespace fk::ops
