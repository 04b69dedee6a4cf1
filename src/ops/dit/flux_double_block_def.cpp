// flux_double_block: definition (workloads, case, cost, tolerance), validation, the composed
// baseline (its parts through the registry) and the CPU reference in double (the oracle,
// when hidden is f64), in the order of fk/ops/dit.h.
#include <cmath>
#include <utility>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/dit.h"
#include "fk/ops/linear.h"
#include "fk/ops/rope.h"
#include "fk/ops/varlen_attention.h"
#include "ops/activation/activation_reference.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/common/packed_validate.h"
#include "ops/common/validate.h"
#include "ops/common/views.h"
#include "ops/dit/dit_defs.h"
#include "ops/dit/flux_double_block_composed.h"
#include "ops/linear/linear_reference.h"

namespace fk::ops {
namespace {

using A = FluxDoubleBlockArgs;
using W = FluxDoubleBlockWeights;
constexpr const char* kOp = A::kName;

struct Shape {
  int64_t tokens, hidden, mlp, heads, head_dim, batch, seq, text, image;
};

void validate_weights(const char* stream, const W& w, const Shape& s, DType dt) {
  const std::string p = std::string(stream) + ".";
  const int64_t h = s.hidden, m = s.mlp;
  expect_packed_matrix(kOp, (p + "norm1_weight").c_str(), w.norm1_weight, 6 * h, h, dt);
  expect_packed_vector(kOp, (p + "norm1_bias").c_str(), w.norm1_bias, 6 * h, dt);
  expect_packed_matrix(kOp, (p + "qkv_weight").c_str(), w.qkv_weight, 3 * h, h, dt);
  expect_packed_vector(kOp, (p + "qkv_bias").c_str(), w.qkv_bias, 3 * h, dt);
  expect_packed_vector(kOp, (p + "norm_q").c_str(), w.norm_q, s.head_dim, dt);
  expect_packed_vector(kOp, (p + "norm_k").c_str(), w.norm_k, s.head_dim, dt);
  expect_packed_matrix(kOp, (p + "out_weight").c_str(), w.out_weight, h, h, dt);
  expect_packed_vector(kOp, (p + "out_bias").c_str(), w.out_bias, h, dt);
  expect_packed_matrix(kOp, (p + "ff_up_weight").c_str(), w.ff_up_weight, m, h, dt);
  expect_packed_vector(kOp, (p + "ff_up_bias").c_str(), w.ff_up_bias, m, dt);
  expect_packed_matrix(kOp, (p + "ff_down_weight").c_str(), w.ff_down_weight, h, m, dt);
  expect_packed_vector(kOp, (p + "ff_down_bias").c_str(), w.ff_down_bias, h, dt);
}

Shape validate(const A& a, DeviceType backend) {
  FK_CHECK(a.hidden.rank == 2, kOp, ": hidden must be [tokens, hidden], got ", describe(a.hidden));
  const DType dt = a.img.qkv_weight.dtype;
  FK_CHECK(dt == DType::f16 || dt == DType::bf16, kOp, ": the weights must be f16 or bf16, got ",
           describe(a.img.qkv_weight));
  expect_written_dtype(kOp, "hidden", a.hidden, dt, backend);
  expect_contiguous(kOp, "hidden", a.hidden);
  Shape s{a.hidden.shape[0], a.hidden.shape[1], a.img.ff_up_weight.rank == 2 ? a.img.ff_up_weight.shape[0] : -1,
          a.num_heads, 0, a.cond.rank == 2 ? a.cond.shape[0] : -1, 0, a.text_len, 0};
  FK_CHECK(s.heads > 0 && s.hidden % s.heads == 0, kOp, ": num_heads ", s.heads, " must divide the hidden size ",
           s.hidden);
  s.head_dim = s.hidden / s.heads;
  FK_CHECK(s.batch >= 1 && s.tokens % s.batch == 0, kOp, ": cond must be [B, ", s.hidden, "] with B dividing the ",
           s.tokens, " tokens (B samples of S joint tokens), got ", describe(a.cond));
  s.seq = s.tokens / s.batch;
  s.image = s.seq - s.text;
  FK_CHECK(s.text >= 1 && s.image >= 1, kOp, ": text_len ", s.text, " must leave at least one image token of the ",
           s.seq, " joint tokens per sample, and be at least 1");
  expect_packed_matrix(kOp, "cond", a.cond, s.batch, s.hidden, dt);
  FK_CHECK(s.mlp > 0, kOp, ": img.ff_up_weight must be [mlp, ", s.hidden, "], got ", describe(a.img.ff_up_weight));
  validate_weights("img", a.img, s, dt);
  validate_weights("txt", a.txt, s, dt);
  FK_CHECK(a.positions.rank == 1 && a.positions.shape[0] == s.tokens, kOp, ": positions must be [", s.tokens,
           "], got ", describe(a.positions));
  expect_dtype(kOp, "positions", a.positions, DType::i32);
  FK_CHECK(a.cos_sin_cache.rank == 2 && a.cos_sin_cache.shape[1] == s.head_dim, kOp, ": cos_sin_cache must be [P, ",
           s.head_dim, "], got ", describe(a.cos_sin_cache));
  expect_dtype(kOp, "cos_sin_cache", a.cos_sin_cache, DType::f32);
  FK_CHECK(a.cu_seqlens.rank == 1 && a.cu_seqlens.shape[0] == s.batch + 1, kOp, ": cu_seqlens must be [",
           s.batch + 1, "], got ", describe(a.cu_seqlens));
  expect_dtype(kOp, "cu_seqlens", a.cu_seqlens, DType::i32);
  expect_packed_matrix(kOp, "mod", a.mod, s.batch, 6 * s.hidden, dt);
  expect_packed_matrix(kOp, "mod_txt", a.mod_txt, s.batch, 6 * s.hidden, dt);
  expect_packed_matrix(kOp, "normed", a.normed, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "qkv", a.qkv, s.tokens, 3 * s.hidden, dt);
  expect_packed_matrix(kOp, "attn", a.attn, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "mlp", a.mlp, s.tokens, s.mlp, dt);
  expect_packed_matrix(kOp, "act", a.act, s.tokens, s.mlp, dt);
  expect_packed_matrix(kOp, "out", a.out, s.tokens, s.hidden, dt);
  FK_CHECK(a.eps > 0, kOp, ": eps must be positive, got ", a.eps);
  return s;
}

// Rows [first, first + n) and columns [c0, c0 + nc) of a 2-D view (any row-major view).
using views::block;
TensorView rows(const TensorView& m, int64_t first, int64_t n) { return block(m, first, n, 0, m.shape[1]); }
TensorView span(const TensorView& v1, int64_t first, int64_t n) {  // of a 1-D view
  TensorView v = v1;
  v.data = static_cast<char*>(v1.data) + first * v1.strides[0] * static_cast<int64_t>(dtype_size(v1.dtype));
  v.shape[0] = n;
  return v;
}
TensorView heads_of(const TensorView& m, int64_t col, const Shape& s) {
  return views::heads(block(m, 0, s.tokens, col, s.hidden), s.heads, s.head_dim);
}

// A stream's rows of sample b: (first row, count).
std::pair<int64_t, int64_t> stream_rows(const Shape& s, int64_t b, bool text) {
  return text ? std::pair{b * s.seq, s.text} : std::pair{b * s.seq + s.text, s.image};
}

VarlenAttentionArgs attention(const A& a, const Shape& s, const TensorView& out) {
  VarlenAttentionArgs v{};
  v.out = out;
  v.q = heads_of(a.qkv, 0, s);
  v.k = heads_of(a.qkv, s.hidden, s);
  v.v = heads_of(a.qkv, 2 * s.hidden, s);
  v.cu_seqlens_q = v.cu_seqlens_k = a.cu_seqlens;
  v.max_seqlen_q = v.max_seqlen_k = static_cast<int32_t>(s.seq);
  v.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  v.causal = 0;
  return v;
}

QkNormRopeArgs rope(const A& a, const W& w, const Shape& s, int64_t first, int64_t n) {
  QkNormRopeArgs r{};
  r.positions = span(a.positions, first, n);
  r.query = block(a.qkv, first, n, 0, s.hidden);
  r.key = block(a.qkv, first, n, s.hidden, s.hidden);
  r.q_weight = w.norm_q;
  r.k_weight = w.norm_k;
  r.cos_sin_cache = a.cos_sin_cache;
  r.head_size = static_cast<int32_t>(s.head_dim);
  r.style = RopeStyle::gptj;
  r.eps = a.eps;
  return r;
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Shape s = validate(a, B);
    if (s.tokens == 0) return;
    const TensorView none{};
    const int64_t h = s.hidden, m = s.mlp;
    call_op(LinearArgs{a.mod, a.cond, a.img.norm1_weight, a.img.norm1_bias, none, none}, B, stream);
    call_op(LinearArgs{a.mod_txt, a.cond, a.txt.norm1_weight, a.txt.norm1_bias, none, none}, B, stream);
    struct Stream {
      const W& w;
      const TensorView& mod;
      bool text;
    };
    const Stream streams[2] = {{a.img, a.mod, false}, {a.txt, a.mod_txt, true}};
    for (int64_t b = 0; b < s.batch; ++b)
      for (const Stream& st : streams) {
        const auto [first, n] = stream_rows(s, b, st.text);
        call_op(AdaLnModulateArgs{rows(a.normed, first, n), rows(a.hidden, first, n), block(st.mod, b, 1, 0, h),
                                  block(st.mod, b, 1, h, h), a.eps},
                B, stream);
        call_op(LinearArgs{rows(a.qkv, first, n), rows(a.normed, first, n), st.w.qkv_weight, st.w.qkv_bias, none, none},
                B, stream);
        call_op(rope(a, st.w, s, first, n), B, stream);
      }
    call_op(attention(a, s, heads_of(a.attn, 0, s)), B, stream);
    for (int64_t b = 0; b < s.batch; ++b)
      for (const Stream& st : streams) {
        const auto [first, n] = stream_rows(s, b, st.text);
        const TensorView x = rows(a.hidden, first, n), y = rows(a.out, first, n), nn = rows(a.normed, first, n);
        call_op(LinearArgs{y, rows(a.attn, first, n), st.w.out_weight, st.w.out_bias, none, none}, B, stream);
        call_op(GatedResidualAddArgs{x, y, block(st.mod, b, 1, 2 * h, h)}, B, stream);
        call_op(AdaLnModulateArgs{nn, x, block(st.mod, b, 1, 3 * h, h), block(st.mod, b, 1, 4 * h, h), a.eps}, B,
                stream);
        call_op(LinearArgs{rows(a.mlp, first, n), nn, st.w.ff_up_weight, st.w.ff_up_bias, none, none}, B, stream);
        call_op(GeluArgs{rows(a.act, first, n), rows(a.mlp, first, n), GeluApprox::tanh}, B, stream);
        call_op(LinearArgs{y, rows(a.act, first, n), st.w.ff_down_weight, st.w.ff_down_bias, none, none}, B, stream);
        call_op(GatedResidualAddArgs{x, y, block(st.mod, b, 1, 5 * h, h)}, B, stream);
      }
    (void)m;
  });
}

// n = layer_norm(x rows) * (1 + scale) + shift, in double.
// The oracle: hidden is f64; q, k, v (the qkv workspace, normalised and rotated in place by
// qk_norm_rope's double-precision CPU baseline) in the dtype, as the attention reads them;
// everything else f64.
void reference(const A& a) {
  const Shape s = validate(a, DeviceType::cpu);
  if (s.tokens == 0) return;
  const int64_t h = s.hidden, m = s.mlp;
  const TensorView none{};
  auto f64 = [](int64_t r, int64_t c) { return Tensor::empty({r, c}, DType::f64); };
  Tensor mod = f64(s.batch, 6 * h), mod_txt = f64(s.batch, 6 * h), normed = f64(s.tokens, h), attn = f64(s.tokens, h);
  linear_reference(LinearArgs{mod.view(), a.cond, a.img.norm1_weight, a.img.norm1_bias, none, none});
  linear_reference(LinearArgs{mod_txt.view(), a.cond, a.txt.norm1_weight, a.txt.norm1_bias, none, none});
  for (int64_t b = 0; b < s.batch; ++b)
    for (bool text : {false, true}) {
      const W& w = text ? a.txt : a.img;
      const TensorView md = text ? mod_txt.view() : mod.view();
      const auto [first, n] = stream_rows(s, b, text);
      modulate_rows(rows(a.hidden, first, n), rows(normed.view(), first, n), md, b, 0, h, h, a.eps);
      linear_reference(LinearArgs{rows(a.qkv, first, n), rows(normed.view(), first, n), w.qkv_weight, w.qkv_bias, none, none});
      part_reference(kOp, rope(a, w, s, first, n));
    }
  part_reference(kOp, attention(a, s, heads_of(attn.view(), 0, s)));
  Tensor y = f64(s.tokens, h), mlp = f64(s.tokens, m);
  for (int64_t b = 0; b < s.batch; ++b)
    for (bool text : {false, true}) {
      const W& w = text ? a.txt : a.img;
      const TensorView md = text ? mod_txt.view() : mod.view();
      const auto [first, n] = stream_rows(s, b, text);
      const TensorView x = rows(a.hidden, first, n), yv = rows(y.view(), first, n), nn = rows(normed.view(), first, n);
      auto gated_add = [&](int64_t gate_col) {
        for (int64_t t = 0; t < n; ++t)
          for (int64_t j = 0; j < h; ++j) set(x, get(x, t, j) + get(md, b, gate_col + j) * get(yv, t, j), t, j);
      };
      linear_reference(LinearArgs{yv, rows(attn.view(), first, n), w.out_weight, w.out_bias, none, none});
      gated_add(2 * h);
      modulate_rows(x, nn, md, b, 3 * h, 4 * h, h, a.eps);
      const TensorView mv = rows(mlp.view(), first, n);
      linear_reference(LinearArgs{mv, nn, w.ff_up_weight, w.ff_up_bias, none, none});
      for (int64_t t = 0; t < n; ++t)
        for (int64_t j = 0; j < m; ++j) set(mv, gelu_ref(get(mv, t, j), GeluApprox::tanh), t, j);
      linear_reference(LinearArgs{yv, mv, w.ff_down_weight, w.ff_down_bias, none, none});
      gated_add(5 * h);
    }
}

fk_status flux_double_block_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.hidden.dtype != DType::f64) return flux_double_block_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const int64_t b = a.cond.shape[0], seq = b > 0 ? a.hidden.shape[0] / b : 0;
  return Json{{"hidden", a.hidden.shape[1]},
              {"heads", a.num_heads},
              {"mlp", a.img.ff_up_weight.shape[0]},
              {"batch", b},
              {"text", a.text_len},
              {"image", seq - a.text_len},
              {"dtype", std::string(dtype_name(a.img.qkv_weight.dtype))},
              {"eps", a.eps}};
}

constexpr size_t kWeights = 12;  // tensors of one stream's FluxDoubleBlockWeights

// Workload fields: hidden, heads, mlp, text, image (tokens per sample) required; batch [1],
// dtype [bf16], eps [1e-6].
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t H = wl_int(w, "hidden"), heads = wl_int(w, "heads"), M = wl_int(w, "mlp");
  const int64_t Lt = wl_int(w, "text"), Li = wl_int(w, "image"), B = wl_int(w, "batch", 1);
  FK_CHECK(H > 0 && heads > 0 && H % heads == 0 && (H / heads) % 2 == 0 && M > 0 && Lt > 0 && Li > 0 && B > 0, kOp,
           " workload needs hidden, heads dividing it into even head dims, mlp, text, image and batch, all ",
           "positive; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::bf16;
  const int64_t S = Lt + Li, T = B * S, D = H / heads;
  OpCase c = begin_case<A>(w, 2 + 2 * kWeights + 3 + 8);
  uint64_t stream = 1;
  const auto weight = [&](int64_t rows_n, int64_t cols) {
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows_n, cols}, dt, seed, stream++, -r, r);
  };
  const auto vec = [&](int64_t n, float lo, float hi) { return random_tensor({n}, dt, seed, stream++, lo, hi); };
  size_t i = 0;
  c.tensors[i++] = random_tensor({T, H}, dt, seed, stream++, -2.f, 2.f);
  c.tensors[i++] = random_tensor({B, H}, dt, seed, stream++, -1.f, 2.f);
  for (int s = 0; s < 2; ++s) {
    c.tensors[i++] = weight(6 * H, H);
    c.tensors[i++] = vec(6 * H, -0.2f, 0.2f);
    c.tensors[i++] = weight(3 * H, H);
    c.tensors[i++] = vec(3 * H, -0.2f, 0.2f);
    c.tensors[i++] = vec(D, 0.5f, 1.5f);
    c.tensors[i++] = vec(D, 0.5f, 1.5f);
    c.tensors[i++] = weight(H, H);
    c.tensors[i++] = vec(H, -0.2f, 0.2f);
    c.tensors[i++] = weight(M, H);
    c.tensors[i++] = vec(M, -0.2f, 0.2f);
    c.tensors[i++] = weight(H, M);
    c.tensors[i++] = vec(H, -0.2f, 0.2f);
  }
  Tensor pos = Tensor::empty({T}, DType::i32);
  for (int64_t t = 0; t < T; ++t) pos.data_as<int32_t>()[t] = static_cast<int32_t>(t % S);
  c.tensors[i++] = pos;
  const Tensor angles = random_tensor({S, D / 2}, DType::f32, seed, stream++, -3.14159f, 3.14159f);
  Tensor cache = Tensor::empty({S, D}, DType::f32);
  for (int64_t p = 0; p < S; ++p)
    for (int64_t k = 0; k < D / 2; ++k) {
      const float th = angles.data_as<float>()[p * (D / 2) + k];
      cache.data_as<float>()[p * D + k] = std::cos(th);
      cache.data_as<float>()[p * D + D / 2 + k] = std::sin(th);
    }
  c.tensors[i++] = cache;
  Tensor cu = Tensor::empty({B + 1}, DType::i32);
  for (int64_t b = 0; b <= B; ++b) cu.data_as<int32_t>()[b] = static_cast<int32_t>(b * S);
  c.tensors[i++] = cu;
  c.tensors[i++] = Tensor::empty({B, 6 * H}, dt);
  c.tensors[i++] = Tensor::empty({B, 6 * H}, dt);
  c.tensors[i++] = Tensor::empty({T, H}, dt);
  c.tensors[i++] = Tensor::empty({T, 3 * H}, dt);
  c.tensors[i++] = Tensor::empty({T, H}, dt);
  c.tensors[i++] = Tensor::empty({T, M}, dt);
  c.tensors[i++] = Tensor::empty({T, M}, dt);
  c.tensors[i++] = Tensor::empty({T, H}, dt);
  A& a = c.as<A>();
  a.num_heads = static_cast<int32_t>(heads);
  a.text_len = static_cast<int32_t>(Lt);
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
  c.bind(layout);
  return c;
}

void add_weights(std::vector<TensorArg>& args, const char* stream, size_t base) {
  const std::pair<const char*, size_t> fields[kWeights] = {
      {"norm1_weight", offsetof(W, norm1_weight)},     {"norm1_bias", offsetof(W, norm1_bias)},
      {"qkv_weight", offsetof(W, qkv_weight)},         {"qkv_bias", offsetof(W, qkv_bias)},
      {"norm_q", offsetof(W, norm_q)},                 {"norm_k", offsetof(W, norm_k)},
      {"out_weight", offsetof(W, out_weight)},         {"out_bias", offsetof(W, out_bias)},
      {"ff_up_weight", offsetof(W, ff_up_weight)},     {"ff_up_bias", offsetof(W, ff_up_bias)},
      {"ff_down_weight", offsetof(W, ff_down_weight)}, {"ff_down_bias", offsetof(W, ff_down_bias)}};
  for (const auto& [name, off] : fields) args.push_back({std::string(stream) + "." + name, ArgRole::in, base + off});
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "dit";
  d.level = "L3";
  d.summary = "FLUX.1's double-stream (MMDiT) block: per-stream adaLN-Zero, QKV with per-head RMSNorm and "
              "interleaved RoPE, joint attention over [text; image], gated residuals, GELU-tanh MLPs";
  d.args_size = sizeof(A);
  d.tensor_args = {{"hidden", ArgRole::inout, offsetof(A, hidden)}, {"cond", ArgRole::in, offsetof(A, cond)}};
  add_weights(d.tensor_args, "img", offsetof(A, img));
  add_weights(d.tensor_args, "txt", offsetof(A, txt));
  for (const TensorArg& t : std::vector<TensorArg>{
           {"positions", ArgRole::in, offsetof(A, positions)},
           {"cos_sin_cache", ArgRole::in, offsetof(A, cos_sin_cache)},
           {"cu_seqlens", ArgRole::in, offsetof(A, cu_seqlens)},
           {"mod", ArgRole::workspace, offsetof(A, mod)},
           {"mod_txt", ArgRole::workspace, offsetof(A, mod_txt)},
           {"normed", ArgRole::workspace, offsetof(A, normed)},
           {"qkv", ArgRole::workspace, offsetof(A, qkv)},
           {"attn", ArgRole::workspace, offsetof(A, attn)},
           {"mlp", ArgRole::workspace, offsetof(A, mlp)},
           {"act", ArgRole::workspace, offsetof(A, act)},
           {"out", ArgRole::workspace, offsetof(A, out)}})
    d.tensor_args.push_back(t);
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double T = static_cast<double>(a.hidden.shape[0]), H = static_cast<double>(a.hidden.shape[1]),
                 M = static_cast<double>(a.img.ff_up_weight.shape[0]), B = static_cast<double>(a.cond.shape[0]);
    const double S = T / B, es = static_cast<double>(a.img.qkv_weight.element_size());
    const double per_stream = 6 * H * H + 3 * H * H + H * H + 2 * M * H;
    const double weights = 2 * per_stream * es;
    const double flops = 2 * B * 12 * H * H + 2 * T * (4 * H * H + 2 * M * H) + 4 * B * S * S * H;
    return OpCost{weights + 2 * T * H * es, flops, a.img.qkv_weight.dtype};
  };
  // hidden + gate * y, not normalised: the composed baseline rounds every intermediate to the
  // dtype where the oracle keeps f64 (but q, k, v), and gates of order one or two carry
  // those roundings into the output; the baseline's worst element over many seeds is about
  // 20 units in the last place (relative L2 about 0.005).
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = half_rounding_unit(c.as<A>().img.qkv_weight.dtype);
    return Tolerance{32 * ulp, 32 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {"linear", "adaln_modulate", "qk_norm_rope", "varlen_attention", "gelu", "gated_residual_add"};
  d.composed[0] = flux_double_block_composed_cpu;
  d.composed[1] = flux_double_block_composed_cuda;
  d.architectures = {"flux"};
  d.test_workloads = {
      {{"hidden", 128}, {"heads", 2}, {"mlp", 256}, {"text", 5}, {"image", 8}},
      {{"hidden", 128}, {"heads", 2}, {"mlp", 512}, {"text", 3}, {"image", 6}, {"batch", 2}},
      {{"hidden", 64}, {"heads", 1}, {"mlp", 128}, {"text", 1}, {"image", 30}, {"dtype", "f16"}},
      {{"hidden", 128}, {"heads", 4}, {"mlp", 256}, {"text", 4}, {"image", 1}, {"batch", 3}, {"eps", 1e-5}},
  };
  // FLUX.1-dev at 1024x1024 and 512x512 (512 T5 tokens), batch 1.
  for (int64_t img : {4096, 1024})
    d.bench_workloads.push_back({{"hidden", 3072}, {"heads", 24}, {"mlp", 12288}, {"text", 512}, {"image", img}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("flux_double_block", cpu, flux_double_block_cpu);

}  // namespace

fk_status flux_double_block_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}
fk_status flux_double_block_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
