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
  TensorView lse;       // [T, Hq] f32: the attention rows' log-sum-exps, where the layer wants them (sinks)
};
DecoderLayerViews decoder_layer_views(const DecoderLayerArgs& a, const DecoderLayerShape& s);
// The same views of any layer's qkv [T, (Hq + 2 Hk) D] and attention output [T, Hq D].
DecoderLayerViews qkv_views(const TensorView& qkv, const TensorView& attn_out, const DecoderLayerShape& s);

// The checks of the layer ops (op names the op in messages): a [rows, cols] matrix of the
// model dtype on `backend` with a contiguous last dimension (`written`: the CPU oracle's f64
// accepted), and a packed vector.
void expect_layer_matrix(const char* op, const char* arg, const TensorView& v, int64_t rows, int64_t cols,
                         DType model, DeviceType backend, bool written = false);
void expect_layer_vector(const char* op, const char* arg, const TensorView& v, int64_t size, DType dtype,
                         DeviceType backend);

// What every paged-attention layer op checks of its attention half: head counts, eps,
// first_layer, the stream (hidden, residual) and its norms, qkv_weight (and qkv_bias where
// given), o_weight, the rope, cache and batch fields (validate_layer_paged_fields) and the
// workspaces normed, residual_mid, qkv and attn_out. The shape it returns has no
// intermediate size: the layer's MLP sets it.
template <class LayerArgs>
DecoderLayerShape validate_layer_attention_half(const char* op, const LayerArgs& a, DeviceType backend);

// What every paged-attention layer checks of its rope, cache and batch fields (positions,
// slot_mapping, k_cache, v_cache, the indptrs) given s.tokens, kv_heads, head_dim and
// model; sets s.seqs.
template <class LayerArgs>
void validate_layer_paged_fields(const char* op, const LayerArgs& a, DecoderLayerShape& s, DeviceType backend) {
  const int64_t T = s.tokens;
  expect_rank(op, "positions", a.positions, 1);
  expect_dim(op, "positions", a.positions, 0, T);
  expect_layer_vector(op, "slot_mapping", a.slot_mapping, T, DType::i64, backend);
  expect_rank(op, "k_cache", a.k_cache, 4);
  FK_CHECK(a.k_cache.shape[2] == s.kv_heads && a.k_cache.shape[3] == s.head_dim, op,
           ": k_cache must be [pages, page_size, num_kv_heads = ", s.kv_heads, ", head_dim = ", s.head_dim, "], got ",
           describe(a.k_cache));
  expect_written_dtype(op, "k_cache", a.k_cache, s.model, backend);
  expect_same_shape(op, "v_cache", a.v_cache, "k_cache", a.k_cache);
  expect_written_dtype(op, "v_cache", a.v_cache, s.model, backend);
  expect_rank(op, "kv_indptr", a.kv_indptr, 1);
  s.seqs = a.kv_indptr.shape[0] - 1;
  FK_CHECK(s.seqs >= 0, op, ": kv_indptr must have B + 1 >= 1 entries, got ", describe(a.kv_indptr));
  expect_layer_vector(op, "qo_indptr", a.qo_indptr, s.seqs + 1, DType::i32, backend);
  expect_layer_vector(op, "qo_indptr_host", a.qo_indptr_host, s.seqs + 1, DType::i32, DeviceType::cpu);
}

template <class LayerArgs>
DecoderLayerShape validate_layer_attention_half(const char* op, const LayerArgs& a, DeviceType backend) {
  DecoderLayerShape s;
  FK_CHECK(a.num_heads > 0 && a.num_kv_heads > 0 && a.head_dim > 0, op,
           ": num_heads, num_kv_heads and head_dim must be positive, got ", a.num_heads, ", ", a.num_kv_heads, ", ",
           a.head_dim);
  FK_CHECK(a.num_heads % a.num_kv_heads == 0, op, ": num_heads (", a.num_heads, ") must be a multiple of num_kv_heads (",
           a.num_kv_heads, ")");
  FK_CHECK(a.first_layer == 0 || a.first_layer == 1, op, ": first_layer must be 0 or 1, got ", a.first_layer);
  FK_CHECK(a.eps > 0, op, ": eps must be positive, got ", a.eps);
  s.heads = a.num_heads;
  s.kv_heads = a.num_kv_heads;
  s.head_dim = a.head_dim;

  expect_rank(op, "input_norm", a.input_norm, 1);
  expect_dtype_in(op, "input_norm", a.input_norm, {DType::bf16, DType::f16});
  s.model = a.input_norm.dtype;
  s.hidden = a.input_norm.shape[0];
  FK_CHECK(s.hidden > 0, op, ": the hidden size (input_norm's length) must be positive, got ", describe(a.input_norm));
  expect_rank(op, "hidden", a.hidden, 2);
  s.tokens = a.hidden.shape[0];
  FK_CHECK(a.hidden.shape[1] == s.hidden, op, ": hidden has ", a.hidden.shape[1],
           " columns but input_norm's hidden size is ", s.hidden, " (hidden ", describe(a.hidden), ")");
  const int64_t T = s.tokens, H = s.hidden;
  expect_layer_matrix(op, "hidden", a.hidden, T, H, s.model, backend, true);
  expect_layer_matrix(op, "residual", a.residual, T, H, s.model, backend, true);
  expect_layer_vector(op, "input_norm", a.input_norm, H, s.model, backend);
  expect_layer_vector(op, "post_attention_norm", a.post_attention_norm, H, s.model, backend);

  const int64_t qkv_rows = (s.heads + 2 * s.kv_heads) * s.head_dim;
  FK_CHECK(a.qkv_weight.rank == 2 && a.qkv_weight.shape[0] == qkv_rows && a.qkv_weight.shape[1] == H, op,
           ": qkv_weight must be [(num_heads + 2 * num_kv_heads) * head_dim, hidden] = [", qkv_rows, ", ", H,
           "], got ", describe(a.qkv_weight));
  expect_layer_matrix(op, "qkv_weight", a.qkv_weight, qkv_rows, H, s.model, backend);
  if (arg_present(a.qkv_bias)) expect_layer_vector(op, "qkv_bias", a.qkv_bias, qkv_rows, s.model, backend);
  FK_CHECK(a.o_weight.rank == 2 && a.o_weight.shape[0] == H && a.o_weight.shape[1] == s.q_size(), op,
           ": o_weight must be [hidden, num_heads * head_dim] = [", H, ", ", s.q_size(), "], got ",
           describe(a.o_weight));
  expect_layer_matrix(op, "o_weight", a.o_weight, H, s.q_size(), s.model, backend);

  validate_layer_paged_fields(op, a, s, backend);

  expect_layer_matrix(op, "normed", a.normed, T, H, s.model, backend);
  expect_layer_matrix(op, "residual_mid", a.residual_mid, T, H, s.model, backend);
  expect_layer_matrix(op, "qkv", a.qkv, T, qkv_rows, s.model, backend);
  expect_layer_matrix(op, "attn_out", a.attn_out, T, s.q_size(), s.model, backend);
  expect_contiguous(op, "attn_out", a.attn_out);
  return s;
}

}  // namespace fk::ops
