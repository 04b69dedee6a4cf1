// decoder_layer composed of registry calls of its parts, in the order of fk/ops/layer.h.
// rms_norm_linear writes the residual out of place: a layer's input add goes into
// residual_mid and its residual add back into residual. The first layer's stream is
// hidden itself (no input add), so its o goes into residual_mid for the add to read.
#include <type_traits>

#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/linear.h"
#include "fk/ops/rope.h"
#include "ops/layer/decoder_layer_attention.h"
#include "ops/layer/decoder_layer_composed.h"
#include "ops/layer/decoder_layer_validate.h"

namespace fk::ops {

namespace {

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DecoderLayerArgs*>(args);
    const DecoderLayerShape s = validate_decoder_layer(a, B);
    if (s.tokens == 0) return;
    const DecoderLayerViews v = decoder_layer_views(a, s);
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
    // o, and residual = o + s with its norm into the MLP's GEMM.
    const TensorView& o = a.first_layer ? a.residual_mid : a.hidden;
    const TensorView& stream_in = a.first_layer ? a.hidden : a.residual_mid;
    call_op(LinearArgs{o, a.attn_out, a.o_weight, none, none, none}, B, stream);
    call_op(RmsNormLinearArgs{a.gate_up, a.normed, a.residual, o, stream_in, a.post_attention_norm, a.gate_up_weight,
                              none, a.eps},
            B, stream);
    call_op(SiluAndMulArgs{a.act, a.gate_up}, B, stream);
    call_op(LinearArgs{a.hidden, a.act, a.down_weight, none, none, none}, B, stream);
  });
}

}  // namespace

fk_status decoder_layer_composed_cpu(const void* args, void* stream) { return composed<DeviceType::cpu>(args, stream); }

fk_status decoder_layer_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

fk_status decoder_layer_plan_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DecoderLayerArgs*>(args);
    const DecoderLayerShape s = validate_decoder_layer(a, DeviceType::cuda);
    const DecoderLayerViews v = decoder_layer_views(a, s);
    with_layer_attention(a, s, v, a.k_cache, a.v_cache, [&](const auto& attn) {
      using Args = std::decay_t<decltype(attn)>;
      OpRegistry::global().plan(Args::kName, DeviceType::cuda, &attn, stream);
    });
  });
}

}  // namespace fk::ops
