// triangle_attention (fk/ops/pairformer.h, AlphaFold3 Algorithms 14 and 15): definition
// (workloads, case, cost, tolerance), validation, the composed baseline (its parts through
// the registry, the layout moves of triangle_attention_layout.h between them) and the
// oracle in double (when the pair is f64; the CPU implementation of an f32 pair too, as
// linear has no f32 path).
#include <cmath>
#include <string>
#include <utility>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/pairformer.h"
#include "fk/ops/ssm_gating.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/pairformer/pairformer_tolerance.h"
#include "ops/linear/linear_reference.h"
#include "ops/pairformer/triangle_attention_composed.h"
#include "ops/pairformer/triangle_attention_layout.h"
#include "ops/pairformer/triangle_attention_reference.h"

namespace fk::ops {
namespace {

using A = TriangleAttentionArgs;
constexpr const char* kOp = A::kName;

struct Dims {
  int64_t batch = 0, tokens = 0, c_z = 0, heads = 0, head_dim = 0;
  bool masked = false;
  int64_t pairs() const { return batch * tokens * tokens; }
  int64_t hd() const { return heads * head_dim; }
};

void expect_packed(const TensorView& t, const char* name, std::initializer_list<int64_t> shape, DType dt,
                   DeviceType backend) {
  bool ok = t.rank == static_cast<int>(shape.size());
  int d = 0;
  for (int64_t s : shape) ok = ok && t.shape[d++] == s;
  FK_CHECK(ok && t.dtype == dt && t.is_contiguous(), kOp, ": ", name, " must be a packed ", dtype_name(dt),
           shape_to_string(Shape(shape.begin(), shape.end()).data(), static_cast<int>(shape.size())), ", got ",
           describe(t));
  expect_device(kOp, name, t, backend);
}

Dims validate(const A& a, DeviceType backend) {
  FK_CHECK(a.pair.rank == 4 && a.pair.shape[1] == a.pair.shape[2], kOp, ": pair must be [B, N, N, Cz], got ",
           describe(a.pair));
  const DType dt = a.w.qkvg_weight.dtype;
  FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, kOp,
           ": the weights must be f32, f16 or bf16, got qkvg_weight ", describe(a.w.qkvg_weight));
  expect_written_dtype(kOp, "pair", a.pair, dt, backend);
  expect_contiguous(kOp, "pair", a.pair);
  expect_device(kOp, "pair", a.pair, backend);
  Dims d;
  d.batch = a.pair.shape[0], d.tokens = a.pair.shape[1], d.c_z = a.pair.shape[3];
  FK_CHECK(d.c_z > 0, kOp, ": pair must have Cz > 0 channels, got ", describe(a.pair));
  d.heads = a.num_heads;
  const int64_t rows = a.w.qkvg_weight.rank == 2 ? a.w.qkvg_weight.shape[0] : -1;
  FK_CHECK(d.heads > 0 && rows > 0 && rows % (4 * d.heads) == 0, kOp, ": qkvg_weight must be [4 Hh D, Cz] with Hh = ",
           "num_heads ", a.num_heads, " (positive), got ", describe(a.w.qkvg_weight));
  d.head_dim = rows / (4 * d.heads);
  FK_CHECK(a.ending == 0 || a.ending == 1, kOp, ": ending must be 0 (starting node) or 1 (ending node), got ",
           a.ending);
  const int64_t B = d.batch, N = d.tokens, Cz = d.c_z, H = d.heads, HD = d.hd();
  expect_packed(a.w.ln_weight, "ln_weight", {Cz}, dt, backend);
  expect_packed(a.w.ln_bias, "ln_bias", {Cz}, dt, backend);
  expect_packed(a.w.qkvg_weight, "qkvg_weight", {4 * HD, Cz}, dt, backend);
  expect_packed(a.w.bias_weight, "bias_weight", {H, Cz}, dt, backend);
  expect_packed(a.w.out_weight, "out_weight", {Cz, HD}, dt, backend);
  d.masked = arg_present(a.mask);
  if (d.masked) expect_packed(a.mask, "mask", {B, N, N}, dt, backend);
  expect_packed(a.normed, "normed", {B, N, N, Cz}, dt, backend);
  expect_packed(a.qkvg, "qkvg", {B, N, N, 4 * HD}, dt, backend);
  expect_packed(a.q, "q", {B * N, N, H, d.head_dim}, dt, backend);
  expect_packed(a.k, "k", {B * N, N, H, d.head_dim}, dt, backend);
  expect_packed(a.v, "v", {B * N, N, H, d.head_dim}, dt, backend);
  expect_packed(a.bias, "bias", {B, H, N, N}, dt, backend);
  expect_packed(a.attn, "attn", {B * N, N, H, d.head_dim}, dt, backend);
  expect_packed(a.gated, "gated", {B, N, N, HD}, dt, backend);
  expect_packed(a.update, "update", {B, N, N, Cz}, dt, backend);
  return d;
}

// A packed tensor's memory seen as [rows, cols] (a prefix when smaller).
TensorView rows_of(const TensorView& t, int64_t rows, int64_t cols) {
  return make_view(t.data, {rows, cols}, t.dtype, t.device);
}
TensorView cols_of(const TensorView& m, int64_t c0, int64_t nc) {
  TensorView v = m;
  v.data = static_cast<char*>(m.data) + c0 * static_cast<int64_t>(dtype_size(m.dtype));
  v.shape[1] = nc;
  return v;
}

template <DeviceType Backend>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Dims d = validate(a, Backend);
    if (d.pairs() == 0) return;
    if (a.pair.dtype == DType::f32)
      FK_FAIL(FK_ERR_UNSUPPORTED, kOp, ": the composed baseline takes f16 or bf16 (linear has no f32 path)");
    const int64_t B = d.batch, N = d.tokens, P = d.pairs(), Cz = d.c_z, H = d.heads, HD = d.hd();
    const bool end = a.ending != 0;
    const TensorView none{};
    const TensorView pair = rows_of(a.pair, P, Cz), normed = rows_of(a.normed, P, Cz);
    const TensorView qkvg = rows_of(a.qkvg, P, 4 * HD), gated = rows_of(a.gated, P, HD);
    call_op(LayerNormArgs{normed, pair, a.w.ln_weight, a.w.ln_bias, 1e-5f}, Backend, stream);
    call_op(LinearArgs{qkvg, normed, a.w.qkvg_weight, none, none, none}, Backend, stream);
    // Rows of the attention: the pair's rows (starting node) or its columns (ending node).
    pair_rows_copy(rows_of(a.q, P, HD), qkvg, B, N, N, 0, end, Backend, stream);
    pair_rows_copy(rows_of(a.k, P, HD), qkvg, B, N, N, HD, end, Backend, stream);
    pair_rows_copy(rows_of(a.v, P, HD), qkvg, B, N, N, 2 * HD, end, Backend, stream);
    // The bias projection per pair, through `gated` (free until the gate), to [B, Hh, N, N].
    const TensorView proj = rows_of(a.gated, P, H);
    call_op(LinearArgs{proj, normed, a.w.bias_weight, none, none, none}, Backend, stream);
    pair_heads_major(a.bias, proj, B, N, end, Backend, stream);
    // Key masks per attention row; the ending node's go through `update` (free until the
    // output projection).
    TensorView mask{};
    if (d.masked) {
      if (end) {
        pair_rows_copy(rows_of(a.update, P, 1), rows_of(a.mask, P, 1), B, N, N, 0, true, Backend, stream);
        mask = rows_of(a.update, B * N, N);
      } else {
        mask = rows_of(a.mask, B * N, N);
      }
    }
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
    call_op(PairBiasAttentionArgs{a.attn, a.q, a.k, a.v, a.bias, mask, scale}, Backend, stream);
    // The output back in pair order (the ending node's through q, free after the attention).
    TensorView o = rows_of(a.attn, P, HD);
    if (end) {
      pair_rows_copy(rows_of(a.q, P, HD), o, B, N, N, 0, true, Backend, stream);
      o = rows_of(a.q, P, HD);
    }
    call_op(SigmoidMulArgs{gated, o, cols_of(qkvg, 3 * HD, HD)}, Backend, stream);
    const TensorView update = rows_of(a.update, P, Cz);
    call_op(LinearArgs{update, gated, a.w.out_weight, none, none, none}, Backend, stream);
    call_op(AddArgs{pair, pair, update}, Backend, stream);
  });
}

// The oracle: everything in double but q, k, v and the bias, which are rounded to the
// dtype (into their workspaces) as the attention reads them.
void reference(const A& a) {
  const Dims d = validate(a, DeviceType::cpu);
  if (d.pairs() == 0) return;
  const int64_t B = d.batch, N = d.tokens, P = d.pairs(), Cz = d.c_z, H = d.heads, D = d.head_dim, HD = d.hd();
  const bool end = a.ending != 0;
  const DType dt = a.w.qkvg_weight.dtype;
  const TensorView none{};
  const Tensor x = Tensor::empty({P, Cz}, DType::f64), proj = Tensor::empty({P, 4 * HD}, DType::f64);
  const Tensor bias = Tensor::empty({P, H}, DType::f64), o = Tensor::empty({B * N, N, H, D}, DType::f64);
  layer_norm_f64(x.view(), rows_of(a.pair, P, Cz), a.w.ln_weight, a.w.ln_bias);
  linear_reference(LinearArgs{proj.view(), x.view(), a.w.qkvg_weight, none, none, none});
  linear_reference(LinearArgs{bias.view(), x.view(), a.w.bias_weight, none, none, none});
  // Pair (b, i, j) of attention row (b, r) at position s: (r, s) starting, (s, r) ending.
  auto pair_of = [&](int64_t b, int64_t r, int64_t s) { return end ? (b * N + s) * N + r : (b * N + r) * N + s; };
  Tensor mask = Tensor::empty({B * N, N}, dt);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < N; ++r)
      for (int64_t s = 0; s < N; ++s) {
        const int64_t p = pair_of(b, r, s);
        for (int64_t c = 0; c < HD; ++c) {
          set(a.q, get(proj.view(), p, c), b * N + r, s, c / D, c % D);
          set(a.k, get(proj.view(), p, HD + c), b * N + r, s, c / D, c % D);
          set(a.v, get(proj.view(), p, 2 * HD + c), b * N + r, s, c / D, c % D);
        }
        for (int64_t h = 0; h < H; ++h) set(a.bias, get(bias.view(), p, h), b, h, r, s);
        if (d.masked) set(mask.view(), get(a.mask, p / (N * N), (p / N) % N, p % N), b * N + r, s);
      }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  pair_bias_attention_reference(
      PairBiasAttentionArgs{o.view(), a.q, a.k, a.v, a.bias, d.masked ? mask.view() : TensorView{}, scale}, kOp);
  const Tensor gated = Tensor::empty({P, HD}, DType::f64), update = Tensor::empty({P, Cz}, DType::f64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < N; ++r)
      for (int64_t s = 0; s < N; ++s) {
        const int64_t p = pair_of(b, r, s);
        for (int64_t c = 0; c < HD; ++c)
          set(gated.view(), sigmoid_f64(get(proj.view(), p, 3 * HD + c)) * get(o.view(), b * N + r, s, c / D, c % D),
              p, c);
      }
  linear_reference(LinearArgs{update.view(), gated.view(), a.w.out_weight, none, none, none});
  const TensorView pair = rows_of(a.pair, P, Cz);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < Cz; ++c) set(pair, get(pair, p, c) + get(update.view(), p, c), p, c);
}

fk_status triangle_attention_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.pair.dtype != DType::f64 && a.pair.dtype != DType::f32) return triangle_attention_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

std::vector<TensorArg> layout() {
  return {{"pair", ArgRole::inout, offsetof(A, pair)},
          {"mask", ArgRole::in, offsetof(A, mask)},
          {"ln_weight", ArgRole::in, offsetof(A, w) + offsetof(TriangleAttentionWeights, ln_weight)},
          {"ln_bias", ArgRole::in, offsetof(A, w) + offsetof(TriangleAttentionWeights, ln_bias)},
          {"qkvg_weight", ArgRole::in, offsetof(A, w) + offsetof(TriangleAttentionWeights, qkvg_weight)},
          {"bias_weight", ArgRole::in, offsetof(A, w) + offsetof(TriangleAttentionWeights, bias_weight)},
          {"out_weight", ArgRole::in, offsetof(A, w) + offsetof(TriangleAttentionWeights, out_weight)},
          {"normed", ArgRole::workspace, offsetof(A, normed)},
          {"qkvg", ArgRole::workspace, offsetof(A, qkvg)},
          {"q", ArgRole::workspace, offsetof(A, q)},
          {"k", ArgRole::workspace, offsetof(A, k)},
          {"v", ArgRole::workspace, offsetof(A, v)},
          {"bias", ArgRole::workspace, offsetof(A, bias)},
          {"attn", ArgRole::workspace, offsetof(A, attn)},
          {"gated", ArgRole::workspace, offsetof(A, gated)},
          {"update", ArgRole::workspace, offsetof(A, update)}};
}

// Workload fields: tokens, c_z, heads, head_dim required; batch [1], ending [0], dtype
// [bf16], lengths (the real tokens of each structure; pairs beyond are masked out) [no mask],
// masked [false] (true without lengths: a mask of every token, as a captured call records).
OpCase make_case(const Json& w, uint64_t seed) {
  const int64_t B = wl_int(w, "batch", 1), N = wl_int(w, "tokens"), Cz = wl_int(w, "c_z"), H = wl_int(w, "heads"),
                D = wl_int(w, "head_dim");
  const int64_t ending = wl_int(w, "ending", 0);
  FK_CHECK(B >= 0 && N >= 0 && Cz > 0 && H > 0 && D > 0 && (ending == 0 || ending == 1), kOp,
           " workload needs batch, tokens >= 0, c_z, heads, head_dim > 0 and ending 0 or 1; got ", w.dump());
  const DType dt = wl_dtype(w);
  const int64_t HD = H * D;
  OpCase c = begin_case<A>(w, 16);
  c.tensors[0] = random_tensor({B, N, N, Cz}, dt, seed, 1, -2.f, 2.f);
  if (w.contains("lengths") || wl_bool(w, "masked", false)) {
    // A captured call names only whether it had a mask: its values are data (every token real).
    const std::vector<int64_t> lengths =
        w.contains("lengths") ? wl_int_list(w, "lengths") : std::vector<int64_t>(static_cast<size_t>(B), N);
    FK_CHECK(static_cast<int64_t>(lengths.size()) == B, kOp, " workload: lengths needs one entry per structure (", B,
             "), got ", w.dump());
    Tensor m = Tensor::zeros({B, N, N}, dt);
    for (int64_t b = 0; b < B; ++b) {
      FK_CHECK(lengths[b] >= 0 && lengths[b] <= N, kOp, " workload: lengths[", b, "] must be in [0, ", N, "]");
      for (int64_t i = 0; i < lengths[b]; ++i)
        for (int64_t j = 0; j < lengths[b]; ++j) set(m.view(), 1.0, b, i, j);
    }
    c.tensors[1] = m;
  } else {
    c.tensors[1] = absent_tensor(dt);
  }
  auto projection = [&](int64_t rows, int64_t cols, uint64_t stream) {  // 1/sqrt(fan-in): order-one outputs
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows, cols}, dt, seed, stream, -r, r);
  };
  c.tensors[2] = random_tensor({Cz}, dt, seed, 2, 0.5f, 1.5f);
  c.tensors[3] = random_tensor({Cz}, dt, seed, 3, -0.2f, 0.2f);
  c.tensors[4] = projection(4 * HD, Cz, 4);
  c.tensors[5] = projection(H, Cz, 5);
  c.tensors[6] = projection(Cz, HD, 6);
  c.tensors[7] = Tensor::empty({B, N, N, Cz}, dt);
  c.tensors[8] = Tensor::empty({B, N, N, 4 * HD}, dt);
  for (size_t i : {9, 10, 11}) c.tensors[i] = Tensor::empty({B * N, N, H, D}, dt);
  c.tensors[12] = Tensor::empty({B, H, N, N}, dt);
  c.tensors[13] = Tensor::empty({B * N, N, H, D}, dt);
  c.tensors[14] = Tensor::empty({B, N, N, HD}, dt);
  c.tensors[15] = Tensor::empty({B, N, N, Cz}, dt);
  A& a = c.as<A>();
  a.num_heads = static_cast<int32_t>(H);
  a.ending = static_cast<int32_t>(ending);
  c.bind(layout());
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const Dims d = validate(a, a.pair.device.type);
  return Json{{"batch", d.batch},       {"tokens", d.tokens},   {"c_z", d.c_z},
              {"heads", d.heads},       {"head_dim", d.head_dim}, {"ending", a.ending},
              {"masked", d.masked}, {"dtype", std::string(dtype_name(a.w.qkvg_weight.dtype))}};
}

OpCost cost(const OpCase& c) {
  const auto& a = c.as<A>();
  // The case's own device: cost is asked of device cases too (the GPU tests' timing).
  const Dims d = validate(a, a.pair.device.type);
  const double P = static_cast<double>(d.pairs()), N = static_cast<double>(d.tokens), Cz = static_cast<double>(d.c_z);
  const double H = static_cast<double>(d.heads), HD = static_cast<double>(d.hd());
  const double es = static_cast<double>(a.w.qkvg_weight.element_size());
  const double weights = (4 * HD * Cz + H * Cz + Cz * HD + 2 * Cz) * es;
  // The projections, Q K^T and P V over N keys per query, the output projection; the pair
  // read and written once, the mask read once.
  const double flops = 2 * P * Cz * (4 * HD + H) + 4 * P * N * HD + 2 * P * HD * Cz;
  return OpCost{weights + 2 * P * Cz * es + static_cast<double>(a.mask.nbytes()), flops, a.w.qkvg_weight.dtype};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "pairformer";
  d.level = "L2";
  d.summary = "AlphaFold3's triangle attention around the starting (Algorithm 14) or ending node (Algorithm 15): "
              "LayerNorm, q/k/v/gate and per-head bias projections, pair-biased attention along rows (or columns), "
              "sigmoid gate, output projection, in place on the pair representation";
  d.args_size = sizeof(A);
  d.tensor_args = layout();
  d.make_case = make_case;
  d.cost = cost;
  // z + update: the composed baseline rounds LayerNorm, the projections, the bias, the
  // attention output, the gate product and the update to the dtype where the oracle keeps
  // f64 (but q, k, v and the bias); the update is of order one and z of order two.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = pairformer_rounding_unit(c.as<A>().w.qkvg_weight.dtype);
    return Tolerance{16 * ulp, 16 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {LayerNormArgs::kName, LinearArgs::kName, PairBiasAttentionArgs::kName, SigmoidMulArgs::kName,
              AddArgs::kName};
  d.composed[0] = triangle_attention_composed_cpu;
  d.composed[1] = triangle_attention_composed_cuda;
  d.architectures = {"openfold3"};
  // 16-bit only: f32 runs on the CPU alone (the CUDA baseline refuses it; the op test's tiny
  // example covers it).
  d.test_workloads = {
      {{"tokens", 8}, {"c_z", 16}, {"heads", 2}, {"head_dim", 16}},
      {{"tokens", 7}, {"c_z", 16}, {"heads", 2}, {"head_dim", 16}, {"ending", 1}, {"dtype", "f16"}},
      {{"batch", 2}, {"tokens", 9}, {"c_z", 32}, {"heads", 4}, {"head_dim", 8}, {"lengths", {9, 5}}},
      {{"batch", 2}, {"tokens", 6}, {"c_z", 16}, {"heads", 1}, {"head_dim", 24}, {"lengths", {4, 6}}, {"ending", 1}},
      {{"tokens", 1}, {"c_z", 16}, {"heads", 2}, {"head_dim", 16}, {"ending", 1}},
      // OpenFold3's widths on a short crop.
      {{"tokens", 12}, {"c_z", 128}, {"heads", 4}, {"head_dim", 32}, {"ending", 1}, {"lengths", {10}}},
  };
  // OpenFold3's trunk (c_z 128, 4 heads of 32), bf16: 384- and 768-token crops, both nodes.
  for (int64_t n : {384, 768})
    for (int64_t e : {0, 1})
      d.bench_workloads.push_back({{"tokens", n}, {"c_z", 128}, {"heads", 4}, {"head_dim", 32}, {"ending", e}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("triangle_attention", cpu, triangle_attention_cpu);

}  // namespace

fk_status triangle_attention_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}
fk_status triangle_attention_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
