// Argument checks of decoder_layer, shared by its CPU reference, its composition of the
// parts and its plan, and the views of the packed qkv activation every one of them reads
// the heads through. Only what the layer itself must agree on (one hidden size, head counts
// that divide, weights that fit each other): the parts check the rest of their arguments.
#pragma once
#include <cstdint>

#include "fk/ops/layer.h"
#include "ops/common/validate.h"

namespace fk::ops {

struct DecoderLayerShape {
  int64_t tokens = 0;        // T
  int64_t hidden = 0;        // H
  int64_t heads = 0;         // Hq
  int64_t kv_heads = 0;      // Hk
  int64_t head_dim = 0;      // D
  int64_t intermediate = 0;  // I
  int64_t seqs = 0;          // B
  DType model = DType::bf16;
  // T == B: every sequence brings one query token and the decode attention serves it.
  bool decode() const { return tokens == seqs; }
  int64_t q_size() const { return heads * head_dim; }
  int64_t kv_size() const { return kv_heads * head_dim; }
};

// `backend`: where the device tensors live. The CPU reference (also the oracle) takes f64
// for hidden, residual and the caches.
DecoderLayerShape validate_decoder_layer(const DecoderLayerArgs& a, DeviceType backend);

// The heads inside the packed qkv activation [T, (Hq + 2 Hk) D] (no copies).
struct DecoderLayerViews {
  TensorView q;         // [T, Hq, D] (row stride of qkv)
  TensorView k;         // [T, Hk, D]
  TensorView v;         // [T, Hk, D]
  TensorView attn_out;  // [T, Hq, D]
};
DecoderLayerViews decoder_layer_views(const DecoderLayerArgs& a, const DecoderLayerShape& s);

}  // namespace fk::ops
