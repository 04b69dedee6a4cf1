// What the layer ops' compositions of their parts share (decoder_layer, moe_layer,
// gpt_oss_layer): the input norm fused into the QKV projection, rope with the cache write,
// the attention op; where o and the stream it is added to live; and the plan step.
#pragma once
#include <type_traits>

#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/ops/rope.h"
#include "ops/layer/decoder_layer_attention.h"

namespace fk::ops {

// rms_norm_linear writes the residual out of place: a layer's input add goes into
// residual_mid (the first layer has none: its stream is hidden itself). Then rope_and_cache
// (with the per-head q / k norms where given) and the attention op, into v.attn_out.
template <DeviceType B, class Args>
void compose_qkv_and_attention(const Args& a, const DecoderLayerShape& s, const DecoderLayerViews& v,
                               const TensorView& q_norm, const TensorView& k_norm, void* stream) {
  const TensorView none{};
  if (a.first_layer)
    call_op(RmsNormLinearArgs{a.qkv, a.normed, none, a.hidden, none, a.input_norm, a.qkv_weight, a.qkv_bias, a.eps}, B,
            stream);
  else
    call_op(RmsNormLinearArgs{a.qkv, a.normed, a.residual_mid, a.hidden, a.residual, a.input_norm, a.qkv_weight,
                              a.qkv_bias, a.eps},
            B, stream);
  call_op(RopeAndCacheArgs{a.positions, v.q, v.k, v.v, q_norm, k_norm, a.cos_sin_cache, a.k_cache, a.v_cache,
                           a.slot_mapping, a.head_dim, a.rope_style, a.eps},
          B, stream);
  with_layer_attention(a, s, v, a.k_cache, a.v_cache, [&](const auto& attn) { call_op(attn, B, stream); });
}

// Where o goes and the stream it is added to (the residual add back into residual): hidden
// and residual_mid, or on the first layer, whose stream is hidden, residual_mid and hidden.
struct LayerOAndStream {
  TensorView o, stream;
};
template <class Args>
LayerOAndStream layer_o_and_stream(const Args& a) {
  return a.first_layer ? LayerOAndStream{a.residual_mid, a.hidden} : LayerOAndStream{a.hidden, a.residual_mid};
}

// The plan step: the attention op's plan with the layer's metadata (CUDA; the CPU has none).
template <class Args>
void plan_layer_attention(const Args& a, const DecoderLayerShape& s, const DecoderLayerViews& v, void* stream) {
  with_layer_attention(a, s, v, a.k_cache, a.v_cache, [&](const auto& attn) {
    using AttentionArgs = std::decay_t<decltype(attn)>;
    OpRegistry::global().plan(AttentionArgs::kName, DeviceType::cuda, &attn, stream);
  });
}

}  // namespace fk::ops
