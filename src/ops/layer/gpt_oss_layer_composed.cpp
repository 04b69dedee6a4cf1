// gpt_oss_layer composed of registry calls of its parts, in the order of
// fk/ops/gpt_oss_layer.h, with the residual stream carried as decoder_layer's composition
// carries it (layer_composed_parts.h); the sinks rescale the attention output before o.
#include "fk/op_registry.h"
#include "fk/ops/attention_sink.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "fk/ops/moe_swigluoai.h"
#include "ops/layer/gpt_oss_layer_composed.h"
#include "ops/layer/gpt_oss_layer_validate.h"
#include "ops/layer/layer_composed_parts.h"

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
    compose_qkv_and_attention<B>(a, s, v, none, none, stream);
    call_op(AttentionSinkRescaleArgs{v.attn_out, a.lse, a.sinks}, B, stream);
    // o, then residual = o + s with its norm into the router's GEMM.
    const LayerOAndStream x = layer_o_and_stream(a);
    call_op(LinearArgs{x.o, a.attn_out, a.o_weight, a.o_bias, none, none}, B, stream);
    call_op(RmsNormLinearArgs{a.router_logits, a.normed, a.residual, x.o, x.stream, a.post_attention_norm,
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
    plan_layer_attention(a, s, views(a, s), stream);
  });
}

}  // namespace fk::ops
