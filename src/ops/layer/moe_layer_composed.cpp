// moe_layer composed of registry calls of its parts, in the order of fk/ops/moe_layer.h,
// with the residual stream carried as decoder_layer's composition carries it
// (layer_composed_parts.h).
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "ops/layer/layer_composed_parts.h"
#include "ops/layer/moe_layer_composed.h"
#include "ops/layer/moe_layer_validate.h"

namespace fk::ops {

namespace {

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeLayerArgs*>(args);
    const DecoderLayerShape s = validate_moe_layer(a, B).attn;
    if (s.tokens == 0) return;
    const TensorView none{};
    compose_qkv_and_attention<B>(a, s, qkv_views(a.qkv, a.attn_out, s), a.q_norm, a.k_norm, stream);
    // o, then residual = o + s with its norm into the router's GEMM, then the routing and
    // the experts in one op (the registry runs it as its two parts when either has a
    // candidate).
    const LayerOAndStream x = layer_o_and_stream(a);
    call_op(LinearArgs{x.o, a.attn_out, a.o_weight, none, none, none}, B, stream);
    call_op(RmsNormLinearArgs{a.router_logits, a.normed, a.residual, x.o, x.stream, a.post_attention_norm,
                              a.router_weight, none, a.eps},
            B, stream);
    call_op(FusedMoeArgs{a.hidden, a.normed, a.w13, a.w2, none, none, a.router_logits, a.topk_weights, a.topk_ids,
                         a.moe_workspace, a.renormalize},
            B, stream);
  });
}

}  // namespace

fk_status moe_layer_composed_cpu(const void* args, void* stream) { return composed<DeviceType::cpu>(args, stream); }

fk_status moe_layer_composed_cuda(const void* args, void* stream) { return composed<DeviceType::cuda>(args, stream); }

fk_status moe_layer_plan_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeLayerArgs*>(args);
    const DecoderLayerShape s = validate_moe_layer(a, DeviceType::cuda).attn;
    plan_layer_attention(a, s, qkv_views(a.qkv, a.attn_out, s), stream);
  });
}

}  // namespace fk::ops
