// decoder_layer composed of registry calls of its parts, in the order of fk/ops/layer.h.
// rms_norm_linear writes the residual out of place: a layer's input add goes into
// residual_mid and its residual add back into residual. The first layer's stream is
// hidden itself (no input add), so its o goes into residual_mid for the add to read
// (layer_composed_parts.h).
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/linear.h"
#include "ops/layer/decoder_layer_composed.h"
#include "ops/layer/decoder_layer_validate.h"
#include "ops/layer/layer_composed_parts.h"

namespace fk::ops {

namespace {

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DecoderLayerArgs*>(args);
    const DecoderLayerShape s = validate_decoder_layer(a, B);
    if (s.tokens == 0) return;
    const TensorView none{};
    compose_qkv_and_attention<B>(a, s, decoder_layer_views(a, s), a.q_norm, a.k_norm, stream);
    // o, and residual = o + s with its norm into the MLP's GEMM.
    const LayerOAndStream x = layer_o_and_stream(a);
    call_op(LinearArgs{x.o, a.attn_out, a.o_weight, none, none, none}, B, stream);
    call_op(RmsNormLinearArgs{a.gate_up, a.normed, a.residual, x.o, x.stream, a.post_attention_norm, a.gate_up_weight,
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
    plan_layer_attention(a, s, decoder_layer_views(a, s), stream);
  });
}

}  // namespace fk::ops
