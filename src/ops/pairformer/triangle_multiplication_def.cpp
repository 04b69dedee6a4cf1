// triangle_multiplication: definition (workloads, case, cost, tolerance), validation, the
// composed baseline (layer_norm and linear through the registry around the backend's
// gating, per-channel GEMMs, transposition and output gate), the CPU steps and the CPU
// reference in double (the oracle, when pair is f64), in the order of fk/ops/pairformer.h.
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/norm.h"
#include "fk/ops/pairformer.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/pairformer/triangle_multiplication_composed.h"
#include "ops/pairformer/triangle_multiplication_view.h"

namespace fk::ops {

using TriA = TriangleMultiplicationArgs;

TriangleDims validate_triangle_multiplication(const TriA& a, DeviceType backend) {
  constexpr const char* op = TriA::kName;
  FK_CHECK(a.pair.rank == 4 && a.pair.shape[1] == a.pair.shape[2], op, ": pair must be [B, N, N, Cz], got ",
           describe(a.pair));
  const DType dt = a.w.in_weight.dtype;
  FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, op,
           ": the weights must be f32, f16 or bf16, got in_weight ", describe(a.w.in_weight));
  expect_written_dtype(op, "pair", a.pair, dt, backend);
  expect_contiguous(op, "pair", a.pair);
  TriangleDims d{a.pair.shape[0], a.pair.shape[1], a.pair.shape[3], 0};
  const int64_t B = d.batch, N = d.n, Cz = d.pair_channels;
  FK_CHECK(Cz > 0, op, ": pair must have at least one channel, got ", describe(a.pair));
  FK_CHECK(a.w.in_weight.rank == 2 && a.w.in_weight.shape[1] == Cz && a.w.in_weight.shape[0] > Cz &&
               (a.w.in_weight.shape[0] - Cz) % 4 == 0,
           op, ": in_weight must be [4 C + ", Cz, ", ", Cz, "] (a gate, a, b gate, b, then the ", Cz,
           " output-gate rows), got ", describe(a.w.in_weight));
  d.hidden = (a.w.in_weight.shape[0] - Cz) / 4;
  const int64_t C = d.hidden;
  FK_CHECK(a.w.out_weight.rank == 2 && a.w.out_weight.shape[0] == Cz, op, ": out_weight must be [", Cz,
           ", C], got ", describe(a.w.out_weight));
  FK_CHECK(a.w.out_weight.shape[1] == C, op, ": C does not match between in_weight (", C,
           " hidden channels: ", describe(a.w.in_weight), ") and out_weight (", a.w.out_weight.shape[1],
           " columns: ", describe(a.w.out_weight), ")");
  expect_packed_shape(op, "in_weight", a.w.in_weight, {4 * C + Cz, Cz}, dt);
  expect_packed_shape(op, "out_weight", a.w.out_weight, {Cz, C}, dt);
  expect_packed_shape(op, "ln_in_weight", a.w.ln_in_weight, {Cz}, dt);
  expect_packed_shape(op, "ln_in_bias", a.w.ln_in_bias, {Cz}, dt);
  expect_packed_shape(op, "ln_out_weight", a.w.ln_out_weight, {C}, dt);
  expect_packed_shape(op, "ln_out_bias", a.w.ln_out_bias, {C}, dt);
  if (arg_present(a.mask)) expect_packed_shape(op, "mask", a.mask, {B, N, N}, dt);
  expect_packed_shape(op, "normed", a.normed, {B, N, N, Cz}, dt);
  expect_packed_shape(op, "projected", a.projected, {B, N, N, 4 * C + Cz}, dt);
  expect_packed_shape(op, "left", a.left, {B, C, N, N}, dt);
  expect_packed_shape(op, "right", a.right, {B, C, N, N}, dt);
  expect_packed_shape(op, "product", a.product, {B, N, N, C}, dt);
  expect_packed_shape(op, "update", a.update, {B, N, N, Cz}, dt);
  FK_CHECK(a.incoming == 0 || a.incoming == 1, op, ": incoming must be 0 (outgoing edges) or 1 (incoming), got ",
           a.incoming);
  return d;
}

// The workspaces' roles: left and right hold a and b channel-major for the GEMMs, which
// write t channel-major into product's bytes; t goes back to token-major in left's bytes
// (a is spent), its layer norm into right's (b is spent), and the output projection into
// update.
void triangle_multiplication_composed(const TriA& a, DeviceType backend, const TriangleMultiplicationSteps& steps,
                                      void* stream) {
  const TriangleDims d = validate_triangle_multiplication(a, backend);
  const int64_t B = d.batch, N = d.n, Cz = d.pair_channels, C = d.hidden, rows = B * N * N;
  if (rows == 0) return;
  call_op(LayerNormArgs{packed_matrix(a.normed, rows, Cz), packed_matrix(a.pair, rows, Cz), a.w.ln_in_weight,
                        a.w.ln_in_bias, 1e-5f},
          backend, stream);
  pairformer_project(packed_matrix(a.projected, rows, 4 * C + Cz), packed_matrix(a.normed, rows, Cz), a.w.in_weight,
                     backend, steps.gemm, stream);
  steps.gate(a, d, stream);
  // Per (structure, channel): T = L R^T, t[i, j] = sum_k L[i, k] R[j, k].
  steps.gemm(NtGemm{a.product.data, a.left.data, a.right.data, a.left.dtype,
                    B * C, N, N, N, N, N, N, N * N, N * N, N * N},
             stream);
  steps.to_token_major(a.left, a.product, d, stream);
  call_op(LayerNormArgs{packed_matrix(a.right, rows, C), packed_matrix(a.left, rows, C), a.w.ln_out_weight,
                        a.w.ln_out_bias, 1e-5f},
          backend, stream);
  pairformer_project(packed_matrix(a.update, rows, Cz), packed_matrix(a.right, rows, C), a.w.out_weight, backend,
                     steps.gemm, stream);
  steps.output_gate(a, d, stream);
}

namespace {

constexpr const char* kOp = TriA::kName;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double rounded(DType t, double x) {
  alignas(8) unsigned char buf[8] = {};
  store_element(buf, t, x);
  return load_element(buf, t);
}
double at(const TensorView& v, int64_t i) { return load_element(v.element_ptr(i), v.dtype); }
void put(const TensorView& v, int64_t i, double x) { store_element(v.element_ptr(i), v.dtype, x); }

// CPU steps of the composed baseline.
void gate_cpu(const TriA& a, const TriangleDims& d, void*) {
  const int64_t N = d.n, C = d.hidden, P = 4 * C + d.pair_channels;
  const bool masked = arg_present(a.mask);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t pair = (b * N + i) * N + j, base = pair * P;
        const double m = masked ? at(a.mask, pair) : 1.0;
        // Outgoing: row i, column (the summed k) j; incoming: row j, column i.
        const int64_t r = a.incoming ? j : i, k = a.incoming ? i : j;
        for (int64_t c = 0; c < C; ++c) {
          const int64_t dst = ((b * C + c) * N + r) * N + k;
          put(a.left, dst, sigmoid(at(a.projected, base + c)) * at(a.projected, base + C + c) * m);
          put(a.right, dst, sigmoid(at(a.projected, base + 2 * C + c)) * at(a.projected, base + 3 * C + c) * m);
        }
      }
}

void to_token_major_cpu(const TensorView& dst, const TensorView& src, const TriangleDims& d, void*) {
  const int64_t N = d.n, C = d.hidden;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ij = 0; ij < N * N; ++ij) put(dst, (b * N * N + ij) * C + c, at(src, (b * C + c) * N * N + ij));
}

void output_gate_cpu(const TriA& a, const TriangleDims& d, void*) {
  const int64_t Cz = d.pair_channels, C = d.hidden, P = 4 * C + Cz, rows = d.batch * d.n * d.n;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < Cz; ++ch) {
      const int64_t i = r * Cz + ch;
      put(a.pair, i, at(a.pair, i) + sigmoid(at(a.projected, r * P + 4 * C + ch)) * at(a.update, i));
    }
}

constexpr TriangleMultiplicationSteps kCpuSteps{gate_cpu, nt_gemm_cpu, to_token_major_cpu, output_gate_cpu};

// Layer norm of `rows` rows of `width` values (double), eps 1e-5, into out (rounded to dt).
std::vector<double> layer_norm_rounded(const std::vector<double>& x, int64_t rows, int64_t width,
                                       const TensorView& w, const TensorView& bias, DType dt) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x[r * width];
    double mean = 0, var = 0;
    for (int64_t c = 0; c < width; ++c) mean += row[c];
    mean /= static_cast<double>(width);
    for (int64_t c = 0; c < width; ++c) var += (row[c] - mean) * (row[c] - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(width) + 1e-5);
    for (int64_t c = 0; c < width; ++c)
      out[r * width + c] = rounded(dt, (row[c] - mean) * rstd * at(w, c) + at(bias, c));
  }
  return out;
}

// rows x out_width = x (rows x in_width) @ weight^T, rounded to dt.
std::vector<double> project_rounded(const std::vector<double>& x, int64_t rows, int64_t in_width,
                                    const TensorView& weight, DType dt) {
  const int64_t out_width = weight.shape[0];
  std::vector<double> w(static_cast<size_t>(out_width * in_width)), out(static_cast<size_t>(rows * out_width));
  for (int64_t i = 0; i < out_width * in_width; ++i) w[i] = at(weight, i);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out_width; ++o) {
      double acc = 0;
      for (int64_t k = 0; k < in_width; ++k) acc += x[r * in_width + k] * w[o * in_width + k];
      out[r * out_width + o] = rounded(dt, acc);
    }
  return out;
}

// The oracle: pair is f64. Every workspace intermediate of the composed baseline (normed,
// projected, a, b, t, layer_norm(t), the projected update) is rounded to the dtype where
// the baseline stores it; the math between is double.
void reference(const TriA& a) {
  const TriangleDims d = validate_triangle_multiplication(a, DeviceType::cpu);
  const int64_t B = d.batch, N = d.n, Cz = d.pair_channels, C = d.hidden, P = 4 * C + Cz, rows = B * N * N;
  if (rows == 0) return;
  const DType dt = a.w.in_weight.dtype;
  std::vector<double> z(static_cast<size_t>(rows * Cz));
  for (int64_t i = 0; i < rows * Cz; ++i) z[i] = at(a.pair, i);
  const std::vector<double> x = layer_norm_rounded(z, rows, Cz, a.w.ln_in_weight, a.w.ln_in_bias, dt);
  const std::vector<double> p = project_rounded(x, rows, Cz, a.w.in_weight, dt);
  // a and b by (structure, channel, i, k), the rows and summed index of each channel's GEMM.
  std::vector<double> left(static_cast<size_t>(B * C * N * N)), right(left.size());
  const bool masked = arg_present(a.mask);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t pair = (b * N + i) * N + j;
        const double m = masked ? at(a.mask, pair) : 1.0;
        const double* pr = &p[pair * P];
        for (int64_t c = 0; c < C; ++c) {
          const int64_t dst = a.incoming ? ((b * C + c) * N + j) * N + i : ((b * C + c) * N + i) * N + j;
          left[dst] = rounded(dt, sigmoid(pr[c]) * pr[C + c] * m);
          right[dst] = rounded(dt, sigmoid(pr[2 * C + c]) * pr[3 * C + c] * m);
        }
      }
  std::vector<double> t(static_cast<size_t>(rows * C));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const double* l = &left[(b * C + c) * N * N];
      const double* r = &right[(b * C + c) * N * N];
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < N; ++k) acc += l[i * N + k] * r[j * N + k];
          t[((b * N + i) * N + j) * C + c] = rounded(dt, acc);
        }
    }
  const std::vector<double> tn = layer_norm_rounded(t, rows, C, a.w.ln_out_weight, a.w.ln_out_bias, dt);
  const std::vector<double> u = project_rounded(tn, rows, C, a.w.out_weight, dt);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < Cz; ++ch)
      put(a.pair, r * Cz + ch, z[r * Cz + ch] + sigmoid(p[r * P + 4 * C + ch]) * u[r * Cz + ch]);
}

fk_status triangle_multiplication_cpu(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const TriA*>(args);
    if (a.pair.dtype == DType::f64) reference(a);
    else triangle_multiplication_composed(a, DeviceType::cpu, kCpuSteps, stream);
  });
}

// The baselines are already their parts called through the registry (a candidate for a
// covered op runs inside them), so the composed forms are the baselines: the CPU one here,
// the CUDA one as registered by the CUDA build.
fk_status composed_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const fk_op_fn cuda = OpRegistry::global().baseline(kOp, DeviceType::cuda);
    FK_CHECK(cuda != nullptr, kOp, ": no CUDA baseline in this build");
    const fk_status s = cuda(args, stream);
    if (s != FK_OK) FK_FAIL(s, last_error_message());
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const TriA*>(args);
  Json w{{"n", a.pair.shape[1]},
         {"pair_channels", a.pair.shape[3]},
         {"hidden", a.w.out_weight.shape[1]},
         {"batch", a.pair.shape[0]},
         {"incoming", a.incoming},
         {"dtype", std::string(dtype_name(a.w.in_weight.dtype))}};
  // A mask comes back as the padding of the last structure (make_case pads it most) where
  // the host can read it; a device mask keeps its shape, with no padding.
  if (arg_present(a.mask)) {
    const int64_t B = a.pair.shape[0], N = a.pair.shape[1];
    int64_t valid = N;
    if (a.mask.device.is_cpu() && B > 0) {
      valid = 0;
      for (int64_t i = 0; i < N; ++i) valid += at(a.mask, ((B - 1) * N + i) * N + i) != 0 ? 1 : 0;
    }
    w["padded"] = N - valid;
  }
  return w;
}

// Workload fields: n, pair_channels (Cz), hidden (C) required; batch [1], incoming [0],
// dtype [bf16], padded [absent: no mask] (structure b keeps its first N - padded * (b + 1) / B
// tokens, rounded down: later structures shorter, the first one padded least).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t N = wl_int(w, "n"), Cz = wl_int(w, "pair_channels"), C = wl_int(w, "hidden");
  const int64_t B = wl_int(w, "batch", 1), incoming = wl_int(w, "incoming", 0);
  FK_CHECK(N >= 0 && Cz > 0 && C > 0 && B >= 0 && (incoming == 0 || incoming == 1), kOp,
           " workload needs n >= 0, pair_channels and hidden positive, batch >= 0, incoming 0 or 1; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::bf16;
  OpCase c = begin_case<TriA>(w, 14);
  const auto weight = [&](int64_t rows, int64_t cols, uint64_t stream) {
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows, cols}, dt, seed, stream, -r, r);
  };
  c.tensors[0] = random_tensor({B, N, N, Cz}, dt, seed, 1, -2.f, 2.f);
  if (w.contains("padded")) {
    const int64_t padded = wl_int(w, "padded");
    FK_CHECK(padded >= 0 && padded <= N, kOp, " workload: padded must lie in [0, n], got ", w.dump());
    Tensor m = Tensor::empty({B, N, N}, dt);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t valid = N - padded * (b + 1) / B;
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j) put(m.view(), (b * N + i) * N + j, i < valid && j < valid ? 1.0 : 0.0);
    }
    c.tensors[1] = m;
  } else {
    c.tensors[1] = absent_tensor(dt);
  }
  c.tensors[2] = random_tensor({Cz}, dt, seed, 2, 0.5f, 1.5f);
  c.tensors[3] = random_tensor({Cz}, dt, seed, 3, -0.2f, 0.2f);
  c.tensors[4] = weight(4 * C + Cz, Cz, 4);
  c.tensors[5] = random_tensor({C}, dt, seed, 5, 0.5f, 1.5f);
  c.tensors[6] = random_tensor({C}, dt, seed, 6, -0.2f, 0.2f);
  c.tensors[7] = weight(Cz, C, 7);
  c.tensors[8] = Tensor::empty({B, N, N, Cz}, dt);
  c.tensors[9] = Tensor::empty({B, N, N, 4 * C + Cz}, dt);
  c.tensors[10] = Tensor::empty({B, C, N, N}, dt);
  c.tensors[11] = Tensor::empty({B, C, N, N}, dt);
  c.tensors[12] = Tensor::empty({B, N, N, C}, dt);
  c.tensors[13] = Tensor::empty({B, N, N, Cz}, dt);
  c.as<TriA>().incoming = static_cast<int32_t>(incoming);
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "pairformer";
  d.level = "L2";
  d.summary = "AlphaFold3's triangle multiplicative update (Algorithms 12 and 13, outgoing or incoming edges), in "
              "place on the pair representation: layer norm, gated and masked a / b projections, the per-channel "
              "k sum as batched GEMMs, layer norm, output projection and sigmoid gate";
  d.args_size = sizeof(TriA);
  d.tensor_args = {
      {"pair", ArgRole::inout, offsetof(TriA, pair)},
      {"mask", ArgRole::in, offsetof(TriA, mask)},
      {"ln_in_weight", ArgRole::in, offsetof(TriA, w.ln_in_weight)},
      {"ln_in_bias", ArgRole::in, offsetof(TriA, w.ln_in_bias)},
      {"in_weight", ArgRole::in, offsetof(TriA, w.in_weight)},
      {"ln_out_weight", ArgRole::in, offsetof(TriA, w.ln_out_weight)},
      {"ln_out_bias", ArgRole::in, offsetof(TriA, w.ln_out_bias)},
      {"out_weight", ArgRole::in, offsetof(TriA, w.out_weight)},
      {"normed", ArgRole::workspace, offsetof(TriA, normed)},
      {"projected", ArgRole::workspace, offsetof(TriA, projected)},
      {"left", ArgRole::workspace, offsetof(TriA, left)},
      {"right", ArgRole::workspace, offsetof(TriA, right)},
      {"product", ArgRole::workspace, offsetof(TriA, product)},
      {"update", ArgRole::workspace, offsetof(TriA, update)},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<TriA>();
    const double B = static_cast<double>(a.pair.shape[0]), N = static_cast<double>(a.pair.shape[1]),
                 Cz = static_cast<double>(a.pair.shape[3]), C = static_cast<double>(a.w.out_weight.shape[1]);
    const double es = static_cast<double>(a.w.in_weight.element_size()), pairs = B * N * N;
    const double weights = ((4 * C + Cz) * Cz + Cz * C) * es;
    const double mask = a.mask.numel() > 0 ? pairs * es : 0;
    const double flops = 2 * pairs * ((4 * C + Cz) * Cz + C * Cz) + 2 * B * C * N * N * N;
    return OpCost{weights + mask + 2 * pairs * Cz * es, flops, a.w.in_weight.dtype};
  };
  // z + sigmoid(g) * update is not normalised: a one-unit difference in a rounded
  // intermediate (the baseline's fp32 layer norms and sums against the oracle's double)
  // reaches the output through a layer norm and a projection.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const Tolerance t = default_tolerance(c.as<TriA>().w.in_weight.dtype);
    return Tolerance{4 * t.atol, 4 * t.rtol};
  };
  d.workload_from_call = workload_from_call;
  d.composed[0] = triangle_multiplication_cpu;
  d.composed[1] = composed_cuda;
  d.covers = {"layer_norm", "linear"};
  d.architectures = {"openfold3"};
  d.test_workloads = {
      {{"n", 1}, {"pair_channels", 16}, {"hidden", 8}},
      {{"n", 7}, {"pair_channels", 32}, {"hidden", 16}, {"batch", 2}},
      {{"n", 7}, {"pair_channels", 32}, {"hidden", 16}, {"batch", 2}, {"incoming", 1}},
      {{"n", 9}, {"pair_channels", 24}, {"hidden", 16}, {"batch", 2}, {"padded", 3}, {"dtype", "f16"}},
      {{"n", 9}, {"pair_channels", 24}, {"hidden", 16}, {"batch", 2}, {"padded", 3}, {"incoming", 1}},
      {{"n", 5}, {"pair_channels", 16}, {"hidden", 8}, {"padded", 2}, {"incoming", 1}, {"dtype", "f32"}},
      {{"n", 12}, {"pair_channels", 32}, {"hidden", 32}, {"dtype", "f32"}},
  };
  // OpenFold3 (AlphaFold3's trunk): Cz = C = 128, one structure of 384 or 768 tokens.
  for (int64_t n : {384, 768})
    for (int64_t incoming : {0, 1})
      d.bench_workloads.push_back({{"n", n}, {"pair_channels", 128}, {"hidden", 128}, {"incoming", incoming}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("triangle_multiplication", cpu, triangle_multiplication_cpu);

}  // namespace
}  // namespace fk::ops
