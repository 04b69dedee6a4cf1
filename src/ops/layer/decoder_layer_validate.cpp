#include "ops/layer/decoder_layer_validate.h"

namespace fk::ops {

namespace {

constexpr const char* kOp = DecoderLayerArgs::kName;

// A [rows, cols] matrix of the model dtype on `backend` with a contiguous last dimension.
void expect_matrix(const char* arg, const TensorView& v, int64_t rows, int64_t cols, DType model,
                   DeviceType backend, bool written = false) {
  expect_rank(kOp, arg, v, 2);
  expect_dim(kOp, arg, v, 0, rows);
  expect_dim(kOp, arg, v, 1, cols);
  if (written)
    expect_written_dtype(kOp, arg, v, model, backend);
  else
    expect_dtype(kOp, arg, v, model);
  expect_rows_contiguous(kOp, arg, v);
  expect_device(kOp, arg, v, backend);
}

void expect_vector(const char* arg, const TensorView& v, int64_t size, DType dtype, DeviceType backend) {
  expect_rank(kOp, arg, v, 1);
  expect_dim(kOp, arg, v, 0, size);
  expect_dtype(kOp, arg, v, dtype);
  expect_contiguous(kOp, arg, v);
  expect_device(kOp, arg, v, backend);
}

}  // namespace

DecoderLayerShape validate_decoder_layer(const DecoderLayerArgs& a, DeviceType backend) {
  DecoderLayerShape s;
  FK_CHECK(a.num_heads > 0 && a.num_kv_heads > 0 && a.head_dim > 0, kOp,
           ": num_heads, num_kv_heads and head_dim must be positive, got ", a.num_heads, ", ", a.num_kv_heads, ", ",
           a.head_dim);
  FK_CHECK(a.num_heads % a.num_kv_heads == 0, kOp, ": num_heads (", a.num_heads, ") must be a multiple of num_kv_heads (",
           a.num_kv_heads, ")");
  FK_CHECK(a.first_layer == 0 || a.first_layer == 1, kOp, ": first_layer must be 0 or 1, got ", a.first_layer);
  FK_CHECK(a.eps > 0, kOp, ": eps must be positive, got ", a.eps);
  s.heads = a.num_heads;
  s.kv_heads = a.num_kv_heads;
  s.head_dim = a.head_dim;

  expect_rank(kOp, "input_norm", a.input_norm, 1);
  expect_dtype_in(kOp, "input_norm", a.input_norm, {DType::bf16, DType::f16});
  s.model = a.input_norm.dtype;
  s.hidden = a.input_norm.shape[0];
  FK_CHECK(s.hidden > 0, kOp, ": the hidden size (input_norm's length) must be positive, got ", describe(a.input_norm));
  expect_rank(kOp, "hidden", a.hidden, 2);
  s.tokens = a.hidden.shape[0];
  FK_CHECK(a.hidden.shape[1] == s.hidden, kOp, ": hidden has ", a.hidden.shape[1],
           " columns but input_norm's hidden size is ", s.hidden, " (hidden ", describe(a.hidden), ")");
  const int64_t T = s.tokens, H = s.hidden;
  expect_matrix("hidden", a.hidden, T, H, s.model, backend, true);
  expect_matrix("residual", a.residual, T, H, s.model, backend, true);
  expect_vector("input_norm", a.input_norm, H, s.model, backend);
  expect_vector("post_attention_norm", a.post_attention_norm, H, s.model, backend);

  const int64_t qkv_rows = (s.heads + 2 * s.kv_heads) * s.head_dim;
  FK_CHECK(a.qkv_weight.rank == 2 && a.qkv_weight.shape[0] == qkv_rows && a.qkv_weight.shape[1] == H, kOp,
           ": qkv_weight must be [(num_heads + 2 * num_kv_heads) * head_dim, hidden] = [", qkv_rows, ", ", H,
           "], got ", describe(a.qkv_weight));
  expect_matrix("qkv_weight", a.qkv_weight, qkv_rows, H, s.model, backend);
  if (arg_present(a.qkv_bias)) expect_vector("qkv_bias", a.qkv_bias, qkv_rows, s.model, backend);
  FK_CHECK(arg_present(a.q_norm) == arg_present(a.k_norm), kOp, ": q_norm and k_norm come together (q_norm ",
           arg_present(a.q_norm) ? "given" : "absent", ", k_norm ", arg_present(a.k_norm) ? "given" : "absent", ")");
  if (arg_present(a.q_norm)) {
    expect_vector("q_norm", a.q_norm, s.head_dim, s.model, backend);
    expect_vector("k_norm", a.k_norm, s.head_dim, s.model, backend);
  }
  FK_CHECK(a.o_weight.rank == 2 && a.o_weight.shape[0] == H && a.o_weight.shape[1] == s.q_size(), kOp,
           ": o_weight must be [hidden, num_heads * head_dim] = [", H, ", ", s.q_size(), "], got ",
           describe(a.o_weight));
  expect_matrix("o_weight", a.o_weight, H, s.q_size(), s.model, backend);
  expect_rank(kOp, "down_weight", a.down_weight, 2);
  s.intermediate = a.down_weight.shape[1];
  FK_CHECK(a.down_weight.shape[0] == H && s.intermediate > 0, kOp,
           ": down_weight must be [hidden = ", H, ", intermediate > 0], got ", describe(a.down_weight));
  const int64_t I = s.intermediate;
  expect_matrix("down_weight", a.down_weight, H, I, s.model, backend);
  FK_CHECK(a.gate_up_weight.rank == 2 && a.gate_up_weight.shape[0] == 2 * I && a.gate_up_weight.shape[1] == H, kOp,
           ": gate_up_weight must be [2 * intermediate, hidden] = [", 2 * I, ", ", H, "], got ",
           describe(a.gate_up_weight));
  expect_matrix("gate_up_weight", a.gate_up_weight, 2 * I, H, s.model, backend);

  expect_rank(kOp, "positions", a.positions, 1);
  expect_dim(kOp, "positions", a.positions, 0, T);
  expect_vector("slot_mapping", a.slot_mapping, T, DType::i64, backend);
  expect_rank(kOp, "k_cache", a.k_cache, 4);
  FK_CHECK(a.k_cache.shape[2] == s.kv_heads && a.k_cache.shape[3] == s.head_dim, kOp,
           ": k_cache must be [pages, page_size, num_kv_heads = ", s.kv_heads, ", head_dim = ", s.head_dim, "], got ",
           describe(a.k_cache));
  expect_written_dtype(kOp, "k_cache", a.k_cache, s.model, backend);
  expect_same_shape(kOp, "v_cache", a.v_cache, "k_cache", a.k_cache);
  expect_written_dtype(kOp, "v_cache", a.v_cache, s.model, backend);

  expect_rank(kOp, "kv_indptr", a.kv_indptr, 1);
  s.seqs = a.kv_indptr.shape[0] - 1;
  FK_CHECK(s.seqs >= 0, kOp, ": kv_indptr must have B + 1 >= 1 entries, got ", describe(a.kv_indptr));
  expect_vector("qo_indptr", a.qo_indptr, s.seqs + 1, DType::i32, backend);
  expect_vector("qo_indptr_host", a.qo_indptr_host, s.seqs + 1, DType::i32, DeviceType::cpu);

  expect_matrix("normed", a.normed, T, H, s.model, backend);
  expect_matrix("residual_mid", a.residual_mid, T, H, s.model, backend);
  expect_matrix("qkv", a.qkv, T, qkv_rows, s.model, backend);
  expect_matrix("attn_out", a.attn_out, T, s.q_size(), s.model, backend);
  expect_contiguous(kOp, "attn_out", a.attn_out);
  expect_matrix("gate_up", a.gate_up, T, 2 * I, s.model, backend);
  expect_matrix("act", a.act, T, I, s.model, backend);
  return s;
}

DecoderLayerViews decoder_layer_views(const DecoderLayerArgs& a, const DecoderLayerShape& s) {
  auto heads = [&](int64_t column, int64_t n) {
    TensorView h = a.qkv;
    h.data = a.qkv.element_ptr(column);
    h.rank = 3;
    h.shape[1] = n;
    h.shape[2] = s.head_dim;
    h.strides[1] = s.head_dim;
    h.strides[2] = 1;
    return h;
  };
  DecoderLayerViews v;
  v.q = heads(0, s.heads);
  v.k = heads(s.q_size(), s.kv_heads);
  v.v = heads(s.q_size() + s.kv_size(), s.kv_heads);
  v.attn_out = a.attn_out;
  v.attn_out.rank = 3;
  v.attn_out.shape[1] = s.heads;
  v.attn_out.shape[2] = s.head_dim;
  v.attn_out.strides[0] = s.q_size();
  v.attn_out.strides[1] = s.head_dim;
  v.attn_out.strides[2] = 1;
  return v;
}

}  // namespace fk::ops
