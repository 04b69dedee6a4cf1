// single_attention_pair_bias (fk/ops/pairformer.h, AlphaFold3 Algorithm 24 without
// conditioning): definition (workloads, case, cost, tolerance), validation, the composed
// baseline (its parts through the registry) and the oracle in double (when the single
// representation is f64; the CPU implementation of f32 too, as linear has no f32 path).
#include <cmath>
#include <string>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/pairformer.h"
#include "fk/ops/ssm_gating.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/common/views.h"
#include "ops/pairformer/pairformer_tolerance.h"
#include "ops/linear/linear_reference.h"
#include "ops/pairformer/single_attention_pair_bias_composed.h"
#include "ops/pairformer/triangle_attention_layout.h"
#include "ops/pairformer/triangle_attention_reference.h"

namespace fk::ops {
namespace {

using A = SingleAttentionPairBiasArgs;
using W = SingleAttentionPairBiasWeights;
constexpr const char* kOp = A::kName;

struct Dims {
  int64_t batch = 0, tokens = 0, c_s = 0, c_z = 0, heads = 0, head_dim = 0;
  bool masked = false;
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
  FK_CHECK(a.single.rank == 3, kOp, ": single must be [B, N, Cs], got ", describe(a.single));
  const DType dt = a.w.q_weight.dtype;
  FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, kOp,
           ": the weights must be f32, f16 or bf16, got q_weight ", describe(a.w.q_weight));
  expect_written_dtype(kOp, "single", a.single, dt, backend);
  expect_contiguous(kOp, "single", a.single);
  expect_device(kOp, "single", a.single, backend);
  Dims d;
  d.batch = a.single.shape[0], d.tokens = a.single.shape[1], d.c_s = a.single.shape[2];
  FK_CHECK(d.c_s > 0, kOp, ": single must have Cs > 0 channels, got ", describe(a.single));
  FK_CHECK(a.pair.rank == 4 && a.pair.shape[0] == d.batch && a.pair.shape[1] == d.tokens &&
               a.pair.shape[2] == d.tokens && a.pair.shape[3] > 0,
           kOp, ": pair must be [", d.batch, ", ", d.tokens, ", ", d.tokens, ", Cz] (single's B and N), got ",
           describe(a.pair));
  d.c_z = a.pair.shape[3];
  expect_packed(a.pair, "pair", {d.batch, d.tokens, d.tokens, d.c_z}, dt, backend);
  d.heads = a.num_heads;
  const int64_t rows = a.w.q_weight.rank == 2 ? a.w.q_weight.shape[0] : -1;
  FK_CHECK(d.heads > 0 && rows > 0 && rows % d.heads == 0, kOp, ": q_weight must be [Hh D, Cs] with Hh = num_heads ",
           a.num_heads, " (positive), got ", describe(a.w.q_weight));
  d.head_dim = rows / d.heads;
  const int64_t B = d.batch, N = d.tokens, Cs = d.c_s, Cz = d.c_z, H = d.heads, D = d.head_dim, HD = d.hd();
  expect_packed(a.w.ln_single_weight, "ln_single_weight", {Cs}, dt, backend);
  expect_packed(a.w.ln_single_bias, "ln_single_bias", {Cs}, dt, backend);
  expect_packed(a.w.ln_pair_weight, "ln_pair_weight", {Cz}, dt, backend);
  expect_packed(a.w.ln_pair_bias, "ln_pair_bias", {Cz}, dt, backend);
  expect_packed(a.w.q_weight, "q_weight", {HD, Cs}, dt, backend);
  expect_packed(a.w.q_bias, "q_bias", {HD}, dt, backend);
  expect_packed(a.w.kvg_weight, "kvg_weight", {3 * HD, Cs}, dt, backend);
  expect_packed(a.w.bias_weight, "bias_weight", {H, Cz}, dt, backend);
  expect_packed(a.w.out_weight, "out_weight", {Cs, HD}, dt, backend);
  d.masked = arg_present(a.mask);
  if (d.masked) expect_packed(a.mask, "mask", {B, N}, dt, backend);
  expect_packed(a.normed_single, "normed_single", {B, N, Cs}, dt, backend);
  expect_packed(a.normed_pair, "normed_pair", {B, N, N, Cz}, dt, backend);
  expect_packed(a.q, "q", {B, N, H, D}, dt, backend);
  expect_packed(a.kvg, "kvg", {B, N, 3 * HD}, dt, backend);
  expect_packed(a.k, "k", {B, N, H, D}, dt, backend);
  expect_packed(a.v, "v", {B, N, H, D}, dt, backend);
  expect_packed(a.g, "g", {B, N, H, D}, dt, backend);
  expect_packed(a.bias, "bias", {B, H, N, N}, dt, backend);
  expect_packed(a.attn, "attn", {B, N, H, D}, dt, backend);
  expect_packed(a.update, "update", {B, N, Cs}, dt, backend);
  return d;
}

TensorView rows_of(const TensorView& t, int64_t rows, int64_t cols) {
  return make_view(t.data, {rows, cols}, t.dtype, t.device);
}
TensorView at_offset(const TensorView& t, int64_t elements, std::initializer_list<int64_t> shape) {
  return make_view(static_cast<char*>(t.data) + elements * static_cast<int64_t>(dtype_size(t.dtype)), shape, t.dtype,
                   t.device);
}
TensorView cols_of(const TensorView& m, int64_t c0, int64_t nc) { return views::columns(m, c0, nc); }

template <DeviceType Backend>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Dims d = validate(a, Backend);
    if (d.batch == 0 || d.tokens == 0) return;
    if (a.single.dtype == DType::f32)
      FK_FAIL(FK_ERR_UNSUPPORTED, kOp, ": the composed baseline takes f16 or bf16 (linear has no f32 path)");
    const int64_t B = d.batch, N = d.tokens, T = B * N, Cs = d.c_s, Cz = d.c_z, H = d.heads, HD = d.hd();
    const TensorView none{};
    const TensorView single = rows_of(a.single, T, Cs), normed = rows_of(a.normed_single, T, Cs);
    const TensorView kvg = rows_of(a.kvg, T, 3 * HD);
    call_op(LayerNormArgs{normed, single, a.w.ln_single_weight, a.w.ln_single_bias, 1e-5f}, Backend, stream);
    call_op(LayerNormArgs{rows_of(a.normed_pair, T * N, Cz), rows_of(a.pair, T * N, Cz), a.w.ln_pair_weight,
                          a.w.ln_pair_bias, 1e-5f},
            Backend, stream);
    call_op(LinearArgs{rows_of(a.q, T, HD), normed, a.w.q_weight, a.w.q_bias, none, none}, Backend, stream);
    call_op(LinearArgs{kvg, normed, a.w.kvg_weight, none, none, none}, Backend, stream);
    pair_rows_copy(rows_of(a.k, T, HD), kvg, 1, 1, T, 0, false, Backend, stream);
    pair_rows_copy(rows_of(a.v, T, HD), kvg, 1, 1, T, HD, false, Backend, stream);
    // bias[b] as [Hh, N N] = bias_weight @ normed_pair[b]^T: the projection lands in the
    // attention's layout, one GEMM per structure.
    for (int64_t b = 0; b < B; ++b)
      call_op(LinearArgs{at_offset(a.bias, b * H * N * N, {H, N * N}), a.w.bias_weight,
                         at_offset(a.normed_pair, b * N * N * Cz, {N * N, Cz}), none, none, none},
              Backend, stream);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
    call_op(PairBiasAttentionArgs{a.attn, a.q, a.k, a.v, a.bias, d.masked ? a.mask : TensorView{}, scale}, Backend,
            stream);
    // g holds sigmoid(gate) * o; the gate itself is read from kvg in place.
    const TensorView gated = rows_of(a.g, T, HD);
    call_op(SigmoidMulArgs{gated, rows_of(a.attn, T, HD), cols_of(kvg, 2 * HD, HD)}, Backend, stream);
    const TensorView update = rows_of(a.update, T, Cs);
    call_op(LinearArgs{update, gated, a.w.out_weight, none, none, none}, Backend, stream);
    call_op(AddArgs{single, single, update}, Backend, stream);
  });
}

// The oracle: everything in double but q, k, v and the bias, which are rounded to the
// dtype (into their workspaces) as the attention reads them.
void reference(const A& a) {
  const Dims d = validate(a, DeviceType::cpu);
  if (d.batch == 0 || d.tokens == 0) return;
  const int64_t B = d.batch, N = d.tokens, T = B * N, Cs = d.c_s, Cz = d.c_z, H = d.heads, D = d.head_dim, HD = d.hd();
  const TensorView none{};
  const Tensor x = Tensor::empty({T, Cs}, DType::f64), zn = Tensor::empty({T * N, Cz}, DType::f64);
  const Tensor q = Tensor::empty({T, HD}, DType::f64), kvg = Tensor::empty({T, 3 * HD}, DType::f64);
  const Tensor bias = Tensor::empty({T * N, H}, DType::f64), o = Tensor::empty({B, N, H, D}, DType::f64);
  layer_norm_f64(x.view(), rows_of(a.single, T, Cs), a.w.ln_single_weight, a.w.ln_single_bias);
  layer_norm_f64(zn.view(), rows_of(a.pair, T * N, Cz), a.w.ln_pair_weight, a.w.ln_pair_bias);
  linear_reference(LinearArgs{q.view(), x.view(), a.w.q_weight, a.w.q_bias, none, none});
  linear_reference(LinearArgs{kvg.view(), x.view(), a.w.kvg_weight, none, none, none});
  linear_reference(LinearArgs{bias.view(), zn.view(), a.w.bias_weight, none, none, none});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < HD; ++c) {
      set(a.q, get(q.view(), t, c), t / N, t % N, c / D, c % D);
      set(a.k, get(kvg.view(), t, c), t / N, t % N, c / D, c % D);
      set(a.v, get(kvg.view(), t, HD + c), t / N, t % N, c / D, c % D);
    }
  for (int64_t p = 0; p < T * N; ++p)
    for (int64_t h = 0; h < H; ++h) set(a.bias, get(bias.view(), p, h), p / (N * N), h, (p / N) % N, p % N);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  pair_bias_attention_reference(
      PairBiasAttentionArgs{o.view(), a.q, a.k, a.v, a.bias, d.masked ? a.mask : TensorView{}, scale}, kOp);
  const Tensor gated = Tensor::empty({T, HD}, DType::f64), update = Tensor::empty({T, Cs}, DType::f64);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < HD; ++c)
      set(gated.view(), sigmoid_f64(get(kvg.view(), t, 2 * HD + c)) * get(o.view(), t / N, t % N, c / D, c % D), t, c);
  linear_reference(LinearArgs{update.view(), gated.view(), a.w.out_weight, none, none, none});
  const TensorView single = rows_of(a.single, T, Cs);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < Cs; ++c) set(single, get(single, t, c) + get(update.view(), t, c), t, c);
}

fk_status single_attention_pair_bias_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.single.dtype != DType::f64 && a.single.dtype != DType::f32)
    return single_attention_pair_bias_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

std::vector<TensorArg> layout() {
  const size_t w = offsetof(A, w);
  return {{"single", ArgRole::inout, offsetof(A, single)},
          {"pair", ArgRole::in, offsetof(A, pair)},
          {"mask", ArgRole::in, offsetof(A, mask)},
          {"ln_single_weight", ArgRole::in, w + offsetof(W, ln_single_weight)},
          {"ln_single_bias", ArgRole::in, w + offsetof(W, ln_single_bias)},
          {"ln_pair_weight", ArgRole::in, w + offsetof(W, ln_pair_weight)},
          {"ln_pair_bias", ArgRole::in, w + offsetof(W, ln_pair_bias)},
          {"q_weight", ArgRole::in, w + offsetof(W, q_weight)},
          {"q_bias", ArgRole::in, w + offsetof(W, q_bias)},
          {"kvg_weight", ArgRole::in, w + offsetof(W, kvg_weight)},
          {"bias_weight", ArgRole::in, w + offsetof(W, bias_weight)},
          {"out_weight", ArgRole::in, w + offsetof(W, out_weight)},
          {"normed_single", ArgRole::workspace, offsetof(A, normed_single)},
          {"normed_pair", ArgRole::workspace, offsetof(A, normed_pair)},
          {"q", ArgRole::workspace, offsetof(A, q)},
          {"kvg", ArgRole::workspace, offsetof(A, kvg)},
          {"k", ArgRole::workspace, offsetof(A, k)},
          {"v", ArgRole::workspace, offsetof(A, v)},
          {"g", ArgRole::workspace, offsetof(A, g)},
          {"bias", ArgRole::workspace, offsetof(A, bias)},
          {"attn", ArgRole::workspace, offsetof(A, attn)},
          {"update", ArgRole::workspace, offsetof(A, update)}};
}

// Workload fields: tokens, c_s, c_z, heads, head_dim required; batch [1], dtype [bf16],
// lengths (the real tokens of each structure; the rest are masked out) [no mask], masked
// [false] (true without lengths: a mask of every token, as a captured call records).
OpCase make_case(const Json& w, uint64_t seed) {
  const int64_t B = wl_int(w, "batch", 1), N = wl_int(w, "tokens"), Cs = wl_int(w, "c_s"), Cz = wl_int(w, "c_z");
  const int64_t H = wl_int(w, "heads"), D = wl_int(w, "head_dim");
  FK_CHECK(B >= 0 && N >= 0 && Cs > 0 && Cz > 0 && H > 0 && D > 0, kOp,
           " workload needs batch, tokens >= 0 and c_s, c_z, heads, head_dim > 0; got ", w.dump());
  const DType dt = wl_dtype(w);
  const int64_t HD = H * D;
  OpCase c = begin_case<A>(w, 22);
  c.tensors[0] = random_tensor({B, N, Cs}, dt, seed, 1, -2.f, 2.f);
  c.tensors[1] = random_tensor({B, N, N, Cz}, dt, seed, 2, -2.f, 2.f);
  if (w.contains("lengths") || wl_bool(w, "masked", false)) {
    // A captured call names only whether it had a mask: its values are data (every token real).
    const std::vector<int64_t> lengths =
        w.contains("lengths") ? wl_int_list(w, "lengths") : std::vector<int64_t>(static_cast<size_t>(B), N);
    FK_CHECK(static_cast<int64_t>(lengths.size()) == B, kOp, " workload: lengths needs one entry per structure (", B,
             "), got ", w.dump());
    Tensor m = Tensor::zeros({B, N}, dt);
    for (int64_t b = 0; b < B; ++b) {
      FK_CHECK(lengths[b] >= 0 && lengths[b] <= N, kOp, " workload: lengths[", b, "] must be in [0, ", N, "]");
      for (int64_t i = 0; i < lengths[b]; ++i) set(m.view(), 1.0, b, i);
    }
    c.tensors[2] = m;
  } else {
    c.tensors[2] = absent_tensor(dt);
  }
  auto projection = [&](int64_t rows, int64_t cols, uint64_t stream) {  // 1/sqrt(fan-in): order-one outputs
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows, cols}, dt, seed, stream, -r, r);
  };
  c.tensors[3] = random_tensor({Cs}, dt, seed, 3, 0.5f, 1.5f);
  c.tensors[4] = random_tensor({Cs}, dt, seed, 4, -0.2f, 0.2f);
  c.tensors[5] = random_tensor({Cz}, dt, seed, 5, 0.5f, 1.5f);
  c.tensors[6] = random_tensor({Cz}, dt, seed, 6, -0.2f, 0.2f);
  c.tensors[7] = projection(HD, Cs, 7);
  c.tensors[8] = random_tensor({HD}, dt, seed, 8, -0.2f, 0.2f);
  c.tensors[9] = projection(3 * HD, Cs, 9);
  c.tensors[10] = projection(H, Cz, 10);
  c.tensors[11] = projection(Cs, HD, 11);
  c.tensors[12] = Tensor::empty({B, N, Cs}, dt);
  c.tensors[13] = Tensor::empty({B, N, N, Cz}, dt);
  c.tensors[14] = Tensor::empty({B, N, H, D}, dt);
  c.tensors[15] = Tensor::empty({B, N, 3 * HD}, dt);
  for (size_t i : {16, 17, 18}) c.tensors[i] = Tensor::empty({B, N, H, D}, dt);
  c.tensors[19] = Tensor::empty({B, H, N, N}, dt);
  c.tensors[20] = Tensor::empty({B, N, H, D}, dt);
  c.tensors[21] = Tensor::empty({B, N, Cs}, dt);
  c.as<A>().num_heads = static_cast<int32_t>(H);
  c.bind(layout());
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const Dims d = validate(a, a.single.device.type);
  return Json{{"batch", d.batch}, {"tokens", d.tokens},     {"c_s", d.c_s},
              {"c_z", d.c_z},     {"heads", d.heads},       {"head_dim", d.head_dim},
              {"masked", d.masked}, {"dtype", std::string(dtype_name(a.w.q_weight.dtype))}};
}

OpCost cost(const OpCase& c) {
  const auto& a = c.as<A>();
  // The case's own device: cost is asked of device cases too (the GPU tests' timing).
  const Dims d = validate(a, a.single.device.type);
  const double T = static_cast<double>(d.batch * d.tokens), N = static_cast<double>(d.tokens);
  const double Cs = static_cast<double>(d.c_s), Cz = static_cast<double>(d.c_z), H = static_cast<double>(d.heads);
  const double HD = static_cast<double>(d.hd()), es = static_cast<double>(a.w.q_weight.element_size());
  const double weights = (4 * HD * Cs + HD + H * Cz + Cs * HD + 2 * Cs + 2 * Cz) * es;
  // The single's projections, the bias projection of every pair, Q K^T and P V, the output
  // projection; single read and written, the pair and mask read once.
  const double flops = 2 * T * Cs * 4 * HD + 2 * T * N * Cz * H + 4 * T * N * HD + 2 * T * HD * Cs;
  return OpCost{weights + (2 * T * Cs + T * N * Cz) * es + static_cast<double>(a.mask.nbytes()), flops,
                a.w.q_weight.dtype};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "pairformer";
  d.level = "L2";
  d.summary = "AlphaFold3's AttentionPairBias without conditioning (Algorithm 24): LayerNorm of s and z, q (with "
              "bias) / k / v / gate projections of s, a per-head bias projected from z, pair-biased attention over "
              "tokens, sigmoid gate, output projection, in place on the single representation";
  d.args_size = sizeof(A);
  d.tensor_args = layout();
  d.make_case = make_case;
  d.cost = cost;
  // s + update: the composed baseline rounds the LayerNorms, the projections, the
  // attention output, the gate product and the update to the dtype where the oracle keeps
  // f64 (but q, k, v and the bias).
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = pairformer_rounding_unit(c.as<A>().w.q_weight.dtype);
    return Tolerance{16 * ulp, 16 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {LayerNormArgs::kName, LinearArgs::kName, PairBiasAttentionArgs::kName, SigmoidMulArgs::kName,
              AddArgs::kName};
  d.composed[0] = single_attention_pair_bias_composed_cpu;
  d.composed[1] = single_attention_pair_bias_composed_cuda;
  d.architectures = {"openfold3"};
  // 16-bit only: f32 runs on the CPU alone (the CUDA baseline refuses it; the op test's tiny
  // example covers it).
  d.test_workloads = {
      {{"tokens", 8}, {"c_s", 32}, {"c_z", 16}, {"heads", 2}, {"head_dim", 16}},
      {{"batch", 2}, {"tokens", 7}, {"c_s", 32}, {"c_z", 16}, {"heads", 2}, {"head_dim", 24}, {"lengths", {7, 3}}},
      {{"tokens", 1}, {"c_s", 16}, {"c_z", 8}, {"heads", 1}, {"head_dim", 16}, {"dtype", "f16"}},
      {{"tokens", 13}, {"c_s", 48}, {"c_z", 16}, {"heads", 4}, {"head_dim", 8}, {"lengths", {10}}, {"dtype", "f16"}},
      // OpenFold3's widths on a short crop.
      {{"tokens", 12}, {"c_s", 384}, {"c_z", 128}, {"heads", 16}, {"head_dim", 24}, {"lengths", {9}}},
  };
  // OpenFold3's Pairformer (c_s 384, c_z 128, 16 heads of 24), bf16: 384 and 768 tokens.
  for (int64_t n : {384, 768})
    d.bench_workloads.push_back({{"tokens", n}, {"c_s", 384}, {"c_z", 128}, {"heads", 16}, {"head_dim", 24}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("single_attention_pair_bias", cpu, single_attention_pair_bias_cpu);

}  // namespace

fk_status single_attention_pair_bias_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}
fk_status single_attention_pair_bias_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
