#include "ops/layer/decoder_layer_validate.h"

#include "ops/common/views.h"

namespace fk::ops {

void expect_layer_matrix(const char* op, const char* arg, const TensorView& v, int64_t rows, int64_t cols,
                         DType model, DeviceType backend, bool written) {
  expect_rank(op, arg, v, 2);
  expect_dim(op, arg, v, 0, rows);
  expect_dim(op, arg, v, 1, cols);
  if (written)
    expect_written_dtype(op, arg, v, model, backend);
  else
    expect_dtype(op, arg, v, model);
  expect_rows_contiguous(op, arg, v);
  expect_device(op, arg, v, backend);
}

void expect_layer_vector(const char* op, const char* arg, const TensorView& v, int64_t size, DType dtype,
                         DeviceType backend) {
  expect_rank(op, arg, v, 1);
  expect_dim(op, arg, v, 0, size);
  expect_dtype(op, arg, v, dtype);
  expect_contiguous(op, arg, v);
  expect_device(op, arg, v, backend);
}

namespace {

constexpr const char* kOp = DecoderLayerArgs::kName;

void expect_matrix(const char* arg, const TensorView& v, int64_t rows, int64_t cols, DType model,
                   DeviceType backend, bool written = false) {
  expect_layer_matrix(kOp, arg, v, rows, cols, model, backend, written);
}

void expect_vector(const char* arg, const TensorView& v, int64_t size, DType dtype, DeviceType backend) {
  expect_layer_vector(kOp, arg, v, size, dtype, backend);
}

}  // namespace

DecoderLayerShape validate_decoder_layer(const DecoderLayerArgs& a, DeviceType backend) {
  DecoderLayerShape s = validate_layer_attention_half(kOp, a, backend);
  const int64_t T = s.tokens, H = s.hidden;
  FK_CHECK(arg_present(a.q_norm) == arg_present(a.k_norm), kOp, ": q_norm and k_norm come together (q_norm ",
           arg_present(a.q_norm) ? "given" : "absent", ", k_norm ", arg_present(a.k_norm) ? "given" : "absent", ")");
  if (arg_present(a.q_norm)) {
    expect_vector("q_norm", a.q_norm, s.head_dim, s.model, backend);
    expect_vector("k_norm", a.k_norm, s.head_dim, s.model, backend);
  }
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
  expect_matrix("gate_up", a.gate_up, T, 2 * I, s.model, backend);
  expect_matrix("act", a.act, T, I, s.model, backend);
  return s;
}

DecoderLayerViews qkv_views(const TensorView& qkv, const TensorView& attn_out, const DecoderLayerShape& s) {
  DecoderLayerViews v;
  v.q = views::heads(views::columns(qkv, 0, s.q_size()), s.heads, s.head_dim);
  v.k = views::heads(views::columns(qkv, s.q_size(), s.kv_size()), s.kv_heads, s.head_dim);
  v.v = views::heads(views::columns(qkv, s.q_size() + s.kv_size(), s.kv_size()), s.kv_heads, s.head_dim);
  v.attn_out = views::heads(attn_out, s.heads, s.head_dim);
  return v;
}

DecoderLayerViews decoder_layer_views(const DecoderLayerArgs& a, const DecoderLayerShape& s) {
  return qkv_views(a.qkv, a.attn_out, s);
}

}  // namespace fk::ops
