// Parts of the layer ops' CPU references that every paged-attention layer shares: the
// checks made before anything is written, and the attention op's reference over the
// layer's cache.
#pragma once
#include <type_traits>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "ops/kv_cache/kv_cache_reference.h"
#include "ops/layer/decoder_layer_attention.h"
#include "ops/rope/rope_reference.h"
#include "ops/rope/rope_validate.h"

namespace fk::ops {

// Whether a layer op's CPU call is the oracle's (f64 stream or caches): the reference runs,
// not the composition of the parts, which take the model dtype only.
template <class LayerArgs>
bool is_oracle_call(const LayerArgs& a) {
  return a.hidden.dtype == DType::f64 || a.residual.dtype == DType::f64 || a.k_cache.dtype == DType::f64 ||
         a.v_cache.dtype == DType::f64;
}

// An uninitialised f64 matrix, and the values of one [rows, cols] matrix into another of
// any dtype (rounded to it).
Tensor f64_matrix(int64_t rows, int64_t cols);
void copy_values(const TensorView& dst, const TensorView& src);

// A cache in the model dtype for the attention reference, which reads caches of q's dtype:
// a copy of the oracle's f64 cache. The copy is exact: every value of the oracle's cache is
// a model-dtype value (the case's inputs, and keys and values the layer rounded to the dtype).
Tensor model_dtype_copy(const TensorView& cache, DType model);

// Bad positions and slots are reported before anything is written.
template <class LayerArgs>
void check_layer_before_writing(const char* op, const LayerArgs& a, const DecoderLayerShape& s) {
  const int64_t max_pos = a.cos_sin_cache.rank == 2 ? a.cos_sin_cache.shape[0] : 0;
  for (int64_t t = 0; t < s.tokens; ++t) {
    const int64_t p = get_index(a.positions, t);
    FK_CHECK(p >= 0 && p < max_pos, op, ": positions[", t, "] = ", p, " is outside the cos/sin cache [0, ", max_pos,
             ")");
  }
  check_cache_slots(op, a.slot_mapping, a.k_cache.shape[0], a.k_cache.shape[1]);
}

// Rope of q and k in qkv (after the per-head norms q_norm / k_norm, where given), then k and
// v into the cache rows of slot_mapping (rope_and_cache).
template <class LayerArgs>
void layer_rope_and_cache_reference(const char* op, const LayerArgs& a, const DecoderLayerViews& v,
                                    const TensorView* q_norm, const TensorView* k_norm) {
  RopeReferenceCall rope;
  rope.op = op;
  rope.shape = validate_rope_common(op, a.positions, v.q, v.k, a.cos_sin_cache, a.head_dim, a.rope_style,
                                    RopeImpl::reference);
  rope.positions = a.positions;
  rope.query = v.q;
  rope.key = v.k;
  rope.cos_sin_cache = a.cos_sin_cache;
  rope.style = a.rope_style;
  if (q_norm != nullptr) {
    rope.q_weight = q_norm;
    rope.k_weight = k_norm;
    rope.eps = a.eps;
  }
  rope_reference(rope);
  const auto copy = [](double y) { return y; };
  write_cache_reference(v.k, v.v, a.k_cache, a.v_cache, a.slot_mapping, copy, copy);
}

// The attention op's CPU baseline (its reference, attention_reference.cpp) on the layer's
// batch; it writes f64 outputs for the oracle.
template <class LayerArgs>
void layer_attention_reference(const char* op, const LayerArgs& a, const DecoderLayerShape& s,
                               const DecoderLayerViews& v) {
  Tensor k_copy, v_copy;
  TensorView k_cache = a.k_cache, v_cache = a.v_cache;
  if (k_cache.dtype != s.model) {
    k_copy = model_dtype_copy(a.k_cache, s.model);
    v_copy = model_dtype_copy(a.v_cache, s.model);
    k_cache = k_copy.view();
    v_cache = v_copy.view();
  }
  with_layer_attention(a, s, v, k_cache, v_cache, [op](const auto& args) {
    using Args = std::decay_t<decltype(args)>;
    const fk_op_fn ref = OpRegistry::global().baseline(Args::kName, DeviceType::cpu);
    FK_CHECK(ref != nullptr, op, ": ", Args::kName, " has no CPU reference");
    const fk_status st = ref(&args, nullptr);
    if (st != FK_OK) FK_FAIL(st, last_error_message());
  });
}

}  // namespace fk::ops
