// gpt_oss_layer composed of registry calls of its parts, in the order of
// fk/ops/gpt_oss_layer.h, with the residual stream carried as decoder_layer's composition
// carries it (decoder_layer_composed.cpp): the input add into residual_mid, the residual add
// back into residual; the first layer's o goes into residual_mid.
#include <type_traits>

#include "fk/op_registry.h"
#include "fk/ops/attention_sink.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "fk/ops/moe_swigluoai.h"
#include "ops/layer/decoder_layer_attention.h"
#include "ops/layer/gpt_oss_layer_composed.h"
#include "ops/layer/gpt_oss_layer_validate.h"

namespace fk::ops {

namespace {

DecoderLayerViews views(const GptOssLayerArgs& a, const DecoderLayerShape& s) {
  DecoderLayerViews v = qkv_views(a.qkv, a.attn_out, s);
  v.lse = a.lse;
  return v;
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const GptOssLayerArgs*>(args);
    const DecoderLayerShape s = validate_gpt_oss_layer(a, B).attn;
    if (s.tokens == 0) return;
    const DecoderLayerViews v = views(a, s);
    const TensorView none{};

    if (a.first_layer)
      call_op(RmsNormLinearArgs{a.qkv, a.normed, none, a.hidden, none, a.input_norm, a.qkv_weight, a.qkv_bias, a.eps},
              B, stream);
    else
      call_op(RmsNormLinearArgs{a.qkv, a.normed, a.residual_mid, a.hidden, a.residual, a.input_norm, a.qkv_weight,
                                a.qkv_bias, a.eps},
              B, stream);
    call_op(RopeAndCacheArgs{a.positions, v.q, v.k, v.v, none, none, a.cos_sin_cache, a.k_cache, a.v_cache,
                             a.slot_mapping, a.head_dim, a.rope_style, a.eps},
            B, stream);
    with_layer_attention(a, s, v, a.k_cache, a.v_cache, [&](const auto& attn) { call_op(attn, B, stream); });
    call_op(AttentionSinkRescaleArgs{v.attn_out, a.lse, a.sinks}, B, stream);
    // o, then residual = o + s with its norm into the router's GEMM.
    const TensorView& o = a.first_layer ? a.residual_mid : a.hidden;
    const TensorView& stream_in = a.first_layer ? a.hidden : a.residual_mid;
    call_op(LinearArgs{o, a.attn_out, a.o_weight, a.o_bias, none, none}, B, stream);
    call_op(RmsNormLinearArgs{a.router_logits, a.normed, a.residual, o, stream_in, a.post_attention_norm,
                              a.router_weight, a.router_bias, a.eps},
            B, stream);
    call_op(MoeTopkSoftmaxArgs{a.topk_weights, a.topk_ids, a.router_logits, 1}, B, stream);
    call_op(FusedExpertsSwigluOaiArgs{a.hidden, a.normed, a.w13, a.w13_bias, a.w2, a.w2_bias, a.topk_weights,
                                      a.topk_ids, a.moe_workspace, a.swiglu_alpha, a.swiglu_limit},
            B, stream);
  });
}

}  // namespace

fk_status gpt_oss_layer_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}

fk_status gpt_oss_layer_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

fk_status gpt_oss_layer_plan_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const GptOssLayerArgs*>(args);
    const DecoderLayerShape s = validate_gpt_oss_layer(a, DeviceType::cuda).attn;
    with_layer_attention(a, s, views(a, s), a.k_cache, a.v_cache, [&](const auto& attn) {
      using Args = std::decay_t<decltype(attn)>;
      OpRegistry::global().plan(Args::kName, DeviceType::cuda, &attn, stream);
    });
  });
}

}  // namespace fk::ops
