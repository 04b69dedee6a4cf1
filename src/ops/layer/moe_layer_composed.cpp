// moe_layer composed of registry calls of its parts, in the order of fk/ops/moe_layer.h,
// with the residual stream carried as decoder_layer's composition carries it
// (decoder_layer_composed.cpp): the input add into residual_mid, the residual add back into
// residual; the first layer's o goes into residual_mid.
#include <type_traits>

#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "ops/layer/decoder_layer_attention.h"
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
    const DecoderLayerViews v = qkv_views(a.qkv, a.attn_out, s);
    const TensorView none{};

    if (a.first_layer)
      call_op(RmsNormLinearArgs{a.qkv, a.normed, none, a.hidden, none, a.input_norm, a.qkv_weight, a.qkv_bias, a.eps},
              B, stream);
    else
      call_op(RmsNormLinearArgs{a.qkv, a.normed, a.residual_mid, a.hidden, a.residual, a.input_norm, a.qkv_weight,
                                a.qkv_bias, a.eps},
              B, stream);
    call_op(RopeAndCacheArgs{a.positions, v.q, v.k, v.v, a.q_norm, a.k_norm, a.cos_sin_cache, a.k_cache, a.v_cache,
                             a.slot_mapping, a.head_dim, a.rope_style, a.eps},
            B, stream);
    with_layer_attention(a, s, v, a.k_cache, a.v_cache, [&](const auto& attn) { call_op(attn, B, stream); });
    // o, then residual = o + s with its norm into the router's GEMM, then the routing and
    // the experts in one op (the registry runs it as its two parts when either has a
    // candidate).
    const TensorView& o = a.first_layer ? a.residual_mid : a.hidden;
    const TensorView& stream_in = a.first_layer ? a.hidden : a.residual_mid;
    call_op(LinearArgs{o, a.attn_out, a.o_weight, none, none, none}, B, stream);
    call_op(RmsNormLinearArgs{a.router_logits, a.normed, a.residual, o, stream_in, a.post_attention_norm,
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
    with_layer_attention(a, s, qkv_views(a.qkv, a.attn_out, s), a.k_cache, a.v_cache, [&](const auto& attn) {
      using Args = std::decay_t<decltype(attn)>;
      OpRegistry::global().plan(Args::kName, DeviceType::cuda, &attn, stream);
    });
  });
}

}  // namespace fk::ops
