// decoder_layer's CPU reference: the references of the ops the layer is made of, called in
// the layer's order (fk/ops/layer.h).
//
// With the layer's tensors in the model dtype the activations between the parts live in
// the workspace tensors, in the model dtype as the engine's buffers hold them, and the
// result is bit for bit that of the parts called one by one (the CPU baseline, which calls
// them through the registry; the op's test holds the two together). With hidden, residual
// and the caches in f64 it is the oracle: the activations between
// the parts are f64, so no implementation is held to roundings that a fused one need not
// make. The roundings that remain belong to the layer's state: the residual stream (held in
// the dtype, and the norms read the rounded values) and q, k, v (the cache holds k and v in
// the dtype, and attention reads all three so).
#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "ops/activation/activation_reference.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/layer/decoder_layer_reference.h"
#include "ops/layer/decoder_layer_validate.h"
#include "ops/linear/linear_reference.h"
#include "ops/norm/norm_reference.h"

namespace fk::ops {

namespace {

constexpr const char* kOp = DecoderLayerArgs::kName;

// The activations between the parts: the workspace tensors (CPU backend) or f64 copies of
// their shapes (oracle). qkv keeps the model dtype in both (q, k and v are rounded). `o` is
// the first layer's output projection (residual_mid's place).
struct Activations {
  TensorView normed, attn_out, gate_up, act, o;
  Tensor storage[5];
};

Activations activations(const DecoderLayerArgs& a, bool oracle) {
  Activations x;
  const TensorView* workspace[5] = {&a.normed, &a.attn_out, &a.gate_up, &a.act, &a.residual_mid};
  TensorView* view[5] = {&x.normed, &x.attn_out, &x.gate_up, &x.act, &x.o};
  for (int i = 0; i < 5; ++i) {
    if (!oracle) {
      *view[i] = *workspace[i];
      continue;
    }
    x.storage[i] = Tensor::empty({workspace[i]->shape[0], workspace[i]->shape[1]}, DType::f64);
    *view[i] = x.storage[i].view();
  }
  return x;
}

}  // namespace

void decoder_layer_reference(const DecoderLayerArgs& a) {
  const DecoderLayerShape s = validate_decoder_layer(a, DeviceType::cpu);
  if (s.tokens == 0) return;
  check_layer_before_writing(kOp, a, s);
  const bool oracle = a.hidden.dtype == DType::f64;
  const Activations x = activations(a, oracle);
  DecoderLayerViews v = decoder_layer_views(a, s);
  v.attn_out.data = x.attn_out.data;
  v.attn_out.dtype = x.attn_out.dtype;
  const TensorView none{};

  // Input norm and the QKV projection (rms_norm_linear, without the add on the first
  // layer). The stream s lives in residual_mid, or in hidden itself on the first layer.
  const TensorView& stream = a.first_layer ? a.hidden : a.residual_mid;
  if (a.first_layer) {
    rms_norm_reference(x.normed, a.hidden, nullptr, a.input_norm, a.eps, NormScale::weight);
  } else {
    copy_values(a.residual_mid, a.residual);
    rms_norm_reference(x.normed, a.hidden, &a.residual_mid, a.input_norm, a.eps, NormScale::weight);
  }
  linear_reference(LinearArgs{a.qkv, x.normed, a.qkv_weight, a.qkv_bias, none, none});

  // Rope (after the per-head q/k norms) and the cache write (rope_and_cache).
  layer_rope_and_cache_reference(kOp, a, v, arg_present(a.q_norm) ? &a.q_norm : nullptr,
                                 arg_present(a.q_norm) ? &a.k_norm : nullptr);

  layer_attention_reference(kOp, a, s, v);

  // The output projection (into hidden; on the first layer, whose stream is in hidden,
  // into residual_mid, or the oracle's f64 copy of it), then residual = o + s, its norm and
  // the MLP (rms_norm_linear).
  const TensorView& o = a.first_layer ? x.o : a.hidden;
  linear_reference(LinearArgs{o, x.attn_out, a.o_weight, none, none, none});
  copy_values(a.residual, stream);
  rms_norm_reference(x.normed, o, &a.residual, a.post_attention_norm, a.eps, NormScale::weight);
  linear_reference(LinearArgs{x.gate_up, x.normed, a.gate_up_weight, none, none, none});
  gated_reference(x.act, x.gate_up, silu_ref);
  linear_reference(LinearArgs{a.hidden, x.act, a.down_weight, none, none, none});
}

}  // namespace fk::ops
