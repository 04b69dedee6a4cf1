// gpt_oss_layer's oracle: the references of the ops the layer is made of, in the layer's
// order (fk/ops/gpt_oss_layer.h), with every intermediate in f64 but the rounded state: the
// residual stream (the norms read the rounded values) and q, k, v (the cache and the
// attention read them in the dtype). The routing is the top-k of the f64 logits.
#include "ops/layer/gpt_oss_layer_reference.h"

#include <algorithm>
#include <cmath>

#include "fk/element.h"
#include "fk/ops/linear.h"
#include "ops/layer/gpt_oss_layer_validate.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/linear/linear_reference.h"
#include "ops/moe/swigluoai_experts_reference.h"
#include "ops/norm/norm_reference.h"

namespace fk::ops {

namespace {

constexpr const char* kOp = GptOssLayerArgs::kName;

// out[t, h, :] *= sigmoid(lse[t, h] ln 2 - sinks[h]) (attention_sink_rescale); a row that saw
// no key (lse = -inf) is zero and stays so.
void rescale_by_sinks(const TensorView& out, const TensorView& lse, const TensorView& sinks) {
  for (int64_t t = 0; t < out.shape[0]; ++t)
    for (int64_t h = 0; h < out.shape[1]; ++h) {
      const double z = get(lse, t, h) * std::log(2.0) - get(sinks, h);
      const double scale = std::isfinite(z) ? 1.0 / (1.0 + std::exp(-z)) : 0.0;
      for (int64_t d = 0; d < out.shape[2]; ++d) set(out, get(out, t, h, d) * scale, t, h, d);
    }
}

SwigluOaiShape experts_shape(const GptOssLayerArgs& a, int64_t tokens, int64_t k) {
  return SwigluOaiShape{tokens, k, a.w13.shape[0], a.w13.shape[2], a.w13.shape[1] / 2};
}

}  // namespace

MoeLayerRouter gpt_oss_layer_router(const GptOssLayerArgs& a) {
  MoeLayerRouter r{a.post_attention_norm, a.router_weight, a.router_bias, a.eps, /*renormalize=*/true, {}};
  r.expert_row = [a](const TensorView& x, int64_t row, int32_t e) {
    // The clamped SwiGLU of fk/ops/moe_swigluoai.h on [g | u] = w13[e] @ x[row] + w13_bias[e].
    GateUp gu = gate_up_row(a.w13, a.w13_bias, e, x, row);
    const double limit = a.swiglu_limit, alpha = a.swiglu_alpha;
    std::vector<double>& act = gu.g;
    for (size_t i = 0; i < act.size(); ++i) {
      const double g = std::min(act[i], limit), u = std::clamp(gu.u[i], -limit, limit);
      act[i] = (u + 1.0) * g / (1.0 + std::exp(-alpha * g));
    }
    return down_projection(a.w2, a.w2_bias, e, act);
  };
  return r;
}

void gpt_oss_layer_reference(const GptOssLayerArgs& a) {
  const GptOssLayerShape g = validate_gpt_oss_layer(a, DeviceType::cpu);
  const DecoderLayerShape& s = g.attn;
  if (s.tokens == 0) return;
  check_layer_before_writing(kOp, a, s);
  const int64_t T = s.tokens, H = s.hidden, k = g.top_k;
  const TensorView none{};

  // The input norm and the QKV projection; the stream s in residual_mid (rounded), or in
  // hidden itself on the first layer.
  Tensor normed = f64_matrix(T, H), attn_out = f64_matrix(T, s.q_size()), lse = f64_matrix(T, s.heads),
         first_o = f64_matrix(T, H);
  const TensorView& stream = a.first_layer ? a.hidden : a.residual_mid;
  if (a.first_layer) {
    rms_norm_reference(normed, a.hidden, nullptr, a.input_norm, a.eps, NormScale::weight);
  } else {
    copy_values(a.residual_mid, a.residual);
    rms_norm_reference(normed, a.hidden, &a.residual_mid, a.input_norm, a.eps, NormScale::weight);
  }
  linear_reference(LinearArgs{a.qkv, normed, a.qkv_weight, a.qkv_bias, none, none});

  DecoderLayerViews v = qkv_views(a.qkv, attn_out, s);
  v.lse = lse;
  layer_rope_and_cache_reference(kOp, a, v, nullptr, nullptr);
  layer_attention_reference(kOp, a, s, v);
  rescale_by_sinks(v.attn_out, lse, a.sinks);

  // o (into hidden, or the first layer's own buffer), residual = o + s, the router.
  const TensorView o = a.first_layer ? first_o.view() : a.hidden;
  linear_reference(LinearArgs{o, attn_out, a.o_weight, a.o_bias, none, none});
  copy_values(a.residual, stream);
  rms_norm_reference(normed, o, &a.residual, a.post_attention_norm, a.eps, NormScale::weight);
  Tensor logits = f64_matrix(T, g.experts);
  linear_reference(LinearArgs{logits, normed, a.router_weight, a.router_bias, none, none});

  // Top-k of the f64 logits, softmax over the k, the experts.
  const MoeLayerRouter router = gpt_oss_layer_router(a);
  const RoutedRows routed = route_rows(router, logits, k);
  const FusedExpertsSwigluOaiArgs experts{a.hidden,   normed,         a.w13,      a.w13_bias,
                                          a.w2,       a.w2_bias,      routed.weights, routed.ids,
                                          TensorView{}, a.swiglu_alpha, a.swiglu_limit};
  swigluoai_experts_reference(experts, experts_shape(a, T, k));
}

}  // namespace fk::ops
