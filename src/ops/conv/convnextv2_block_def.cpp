// convnextv2_block: definition (workloads, case, cost, tolerance, capture), validation, the
// composed baseline (its parts through the registry) and the CPU reference in double (the
// oracle, when out is f64), in the order of fk/ops/conv.h.
//
// Workload fields: batch (1), size (H = W), channels (C), mlp (M, 4C), dtype (f16).
#include <cmath>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/conv.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/conv/convnextv2_block_composed.h"

namespace fk::ops {
namespace {

using A = ConvNextV2BlockArgs;
constexpr const char* kOp = A::kName;
constexpr double kLnEps = 1e-6;  // upstream hard-codes it

struct CnxShape {
  int64_t n, h, w, c, m;
};

CnxShape cnx_validate(const A& a, DeviceType backend) {
  FK_CHECK(a.input.rank == 4, kOp, ": input must be NHWC [N, H, W, C], got ", describe(a.input));
  const DType dt = a.input.dtype;
  FK_CHECK(dt == DType::f16 || dt == DType::bf16, kOp, ": input must be f16 or bf16 (the MLP is linear calls), got ",
           describe(a.input));
  const CnxShape s{a.input.shape[0], a.input.shape[1], a.input.shape[2], a.input.shape[3],
                   a.pw1_weight.rank == 2 ? a.pw1_weight.shape[0] : 0};
  auto expect = [&](const char* name, const TensorView& v, std::initializer_list<int64_t> shape, DType want,
                    bool written) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    FK_CHECK(v.rank == static_cast<int>(shape.size()) && std::equal(shape.begin(), shape.end(), v.shape) &&
                 v.is_contiguous(),
             kOp, ": ", name, " must be a contiguous [", dims, "], got ", describe(v));
    if (written)
      expect_written_dtype(kOp, name, v, want, backend);
    else
      expect_dtype(kOp, name, v, want);
    expect_device(kOp, name, v, backend);
  };
  expect("input", a.input, {s.n, s.h, s.w, s.c}, dt, false);
  expect("out", a.out, {s.n, s.h, s.w, s.c}, dt, true);
  if (a.out.data != a.input.data) expect_no_overlap(kOp, "out", a.out, "input", a.input);
  expect("dw_weight", a.dw_weight, {s.c, 7, 7, 1}, dt, false);
  FK_CHECK(s.m >= 1, kOp, ": pw1_weight must be [M, ", s.c, "], got ", describe(a.pw1_weight));
  expect("pw1_weight", a.pw1_weight, {s.m, s.c}, dt, false);
  expect("pw2_weight", a.pw2_weight, {s.c, s.m}, dt, false);
  for (const auto& [name, v, len] : {std::tuple{"dw_bias", a.dw_bias, s.c}, std::tuple{"ln_weight", a.ln_weight, s.c},
                                     std::tuple{"ln_bias", a.ln_bias, s.c}, std::tuple{"pw1_bias", a.pw1_bias, s.m},
                                     std::tuple{"grn_gamma", a.grn_gamma, s.m}, std::tuple{"grn_beta", a.grn_beta, s.m},
                                     std::tuple{"pw2_bias", a.pw2_bias, s.c}})
    expect(name, v, {len}, dt, false);
  if (a.out.dtype == DType::f64) return s;  // the oracle runs in double: no workspaces
  expect("dw_out", a.dw_out, {s.n, s.h, s.w, s.c}, dt, false);
  expect("norm_out", a.norm_out, {s.n, s.h, s.w, s.c}, dt, false);
  expect("mlp_out", a.mlp_out, {s.n, s.h, s.w, s.m}, dt, false);
  expect("act_out", a.act_out, {s.n, s.h, s.w, s.m}, dt, false);
  expect("grn_scale", a.grn_scale, {s.n, s.m}, DType::f32, false);
  return s;
}

// A contiguous NHWC view as [N * H * W, C] rows.
TensorView cnx_rows(TensorView v) {
  const int64_t c = v.shape[3], rows = v.shape[0] * v.shape[1] * v.shape[2];
  v.rank = 2;
  v.shape[0] = rows, v.shape[1] = c;
  v.strides[0] = c, v.strides[1] = 1;
  return v;
}

template <DeviceType B>
fk_status cnx_composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const CnxShape s = cnx_validate(a, B);
    if (s.n == 0) return;
    Conv2dArgs dw{};
    dw.out = a.dw_out, dw.input = a.input, dw.weight = a.dw_weight, dw.bias = a.dw_bias;
    dw.stride_h = dw.stride_w = 1, dw.pad_h = dw.pad_w = 3, dw.groups = static_cast<int32_t>(s.c);
    dw.activation = ConvActivation::none;
    call_op(dw, B, stream);
    LayerNormArgs ln{};
    ln.out = cnx_rows(a.norm_out), ln.input = cnx_rows(a.dw_out), ln.weight = a.ln_weight, ln.bias = a.ln_bias;
    ln.eps = static_cast<float>(kLnEps);
    call_op(ln, B, stream);
    LinearArgs pw1{};
    pw1.out = cnx_rows(a.mlp_out), pw1.input = cnx_rows(a.norm_out), pw1.weight = a.pw1_weight, pw1.bias = a.pw1_bias;
    call_op(pw1, B, stream);
    GeluArgs gelu{};
    gelu.out = cnx_rows(a.act_out), gelu.input = cnx_rows(a.mlp_out), gelu.approximate = GeluApprox::none;
    call_op(gelu, B, stream);
    GrnArgs grn{};
    grn.out = a.mlp_out, grn.scale = a.grn_scale, grn.input = a.act_out, grn.gamma = a.grn_gamma;
    grn.beta = a.grn_beta;
    call_op(grn, B, stream);
    LinearArgs pw2{};
    pw2.out = cnx_rows(a.dw_out), pw2.input = cnx_rows(a.mlp_out), pw2.weight = a.pw2_weight, pw2.bias = a.pw2_bias;
    call_op(pw2, B, stream);
    AddArgs add{};
    add.out = cnx_rows(a.out), add.a = cnx_rows(a.input), add.b = cnx_rows(a.dw_out);
    call_op(add, B, stream);
  });
}

void cnx_reference(const A& a) {
  const CnxShape s = cnx_validate(a, DeviceType::cpu);
  const int64_t pixels = s.n * s.h * s.w;
  std::vector<double> x0(static_cast<size_t>(pixels * s.c)), x1(x0.size()), x2(x0.size());
  for (size_t i = 0; i < x0.size(); ++i)
    x0[i] = load_element(a.input.element_ptr(static_cast<int64_t>(i)), a.input.dtype);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t y = 0; y < s.h; ++y)
      for (int64_t x = 0; x < s.w; ++x)
        for (int64_t c = 0; c < s.c; ++c) {
          double acc = get(a.dw_bias, c);
          for (int64_t u = 0; u < 7; ++u)
            for (int64_t v = 0; v < 7; ++v) {
              const int64_t yy = y - 3 + u, xx = x - 3 + v;
              if (yy < 0 || yy >= s.h || xx < 0 || xx >= s.w) continue;
              acc += get(a.dw_weight, c, u, v, 0) * x0[static_cast<size_t>(((n * s.h + yy) * s.w + xx) * s.c + c)];
            }
          x1[static_cast<size_t>(((n * s.h + y) * s.w + x) * s.c + c)] = acc;
        }
  for (int64_t p = 0; p < pixels; ++p) {
    const double* r = &x1[static_cast<size_t>(p * s.c)];
    double mean = 0, var = 0;
    for (int64_t c = 0; c < s.c; ++c) mean += r[c] / static_cast<double>(s.c);
    for (int64_t c = 0; c < s.c; ++c) var += (r[c] - mean) * (r[c] - mean) / static_cast<double>(s.c);
    for (int64_t c = 0; c < s.c; ++c)
      x2[static_cast<size_t>(p * s.c + c)] =
          (r[c] - mean) / std::sqrt(var + kLnEps) * get(a.ln_weight, c) + get(a.ln_bias, c);
  }
  std::vector<double> x3(static_cast<size_t>(pixels * s.m));
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t j = 0; j < s.m; ++j) {
      double acc = get(a.pw1_bias, j);
      for (int64_t c = 0; c < s.c; ++c) acc += x2[static_cast<size_t>(p * s.c + c)] * get(a.pw1_weight, j, c);
      x3[static_cast<size_t>(p * s.m + j)] = 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
    }
  const int64_t per_image = s.h * s.w;
  for (int64_t n = 0; n < s.n; ++n) {  // GRN over each image
    std::vector<double> g(static_cast<size_t>(s.m));
    double mean = 0;
    for (int64_t j = 0; j < s.m; ++j) {
      double sum = 0;
      for (int64_t p = n * per_image; p < (n + 1) * per_image; ++p)
        sum += x3[static_cast<size_t>(p * s.m + j)] * x3[static_cast<size_t>(p * s.m + j)];
      g[static_cast<size_t>(j)] = std::sqrt(sum);
      mean += g[static_cast<size_t>(j)] / static_cast<double>(s.m);
    }
    for (int64_t p = n * per_image; p < (n + 1) * per_image; ++p)
      for (int64_t j = 0; j < s.m; ++j) {
        double& v = x3[static_cast<size_t>(p * s.m + j)];
        v = get(a.grn_gamma, j) * (v * g[static_cast<size_t>(j)] / (mean + 1e-6)) + get(a.grn_beta, j) + v;
      }
  }
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < s.c; ++c) {
      double acc = get(a.pw2_bias, c);
      for (int64_t j = 0; j < s.m; ++j) acc += x3[static_cast<size_t>(p * s.m + j)] * get(a.pw2_weight, c, j);
      store_element(a.out.element_ptr(p * s.c + c), a.out.dtype, x0[static_cast<size_t>(p * s.c + c)] + acc);
    }
}

fk_status convnextv2_block_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.out.dtype != DType::f64) return convnextv2_block_composed_cpu(args, stream);
  return op_guard([&] { cnx_reference(a); });
}

Json cnx_workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json w{{"batch", a.input.shape[0]},
         {"size", a.input.shape[1]},
         {"channels", a.input.shape[3]},
         {"mlp", a.pw1_weight.shape[0]},
         {"dtype", std::string(dtype_name(a.input.dtype))}};
  if (a.input.shape[2] != a.input.shape[1]) w["width"] = a.input.shape[2];
  return w;
}

OpCase cnx_make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t n = wl_int(w, "batch", 1), h = wl_int(w, "size"), wd = wl_int(w, "width", h), c = wl_int(w, "channels");
  const int64_t m = wl_int(w, "mlp", 4 * c);
  FK_CHECK(n >= 0 && h >= 1 && wd >= 1 && c >= 1 && m >= 1, kOp,
           " workload needs size, channels and mlp >= 1, batch >= 0; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::f16;
  OpCase k = begin_case<A>(w, layout.size());
  // Weights of standard deviation 1/sqrt(fan-in), pw2 smaller (a residual branch's end);
  // inputs of order one (a block's input is a previous block's output).
  auto weight = [&](const Shape& shape, double var, uint64_t stream) {
    const float r = static_cast<float>(std::sqrt(3.0 * var));
    return random_tensor(shape, dt, seed, stream, -r, r);
  };
  k.tensors[0] = Tensor::empty({n, h, wd, c}, dt);
  k.tensors[1] = random_tensor({n, h, wd, c}, dt, seed, 1, -1.f, 1.f);
  k.tensors[2] = weight({c, 7, 7, 1}, 1.0 / 49, 2);
  k.tensors[3] = random_tensor({c}, dt, seed, 3, -0.1f, 0.1f);
  k.tensors[4] = random_tensor({c}, dt, seed, 4, 0.8f, 1.2f);
  k.tensors[5] = random_tensor({c}, dt, seed, 5, -0.1f, 0.1f);
  k.tensors[6] = weight({m, c}, 1.0 / static_cast<double>(c), 6);
  k.tensors[7] = random_tensor({m}, dt, seed, 7, -0.1f, 0.1f);
  k.tensors[8] = random_tensor({m}, dt, seed, 8, -0.5f, 0.5f);
  k.tensors[9] = random_tensor({m}, dt, seed, 9, -0.1f, 0.1f);
  k.tensors[10] = weight({c, m}, 0.2 / static_cast<double>(m), 10);
  k.tensors[11] = random_tensor({c}, dt, seed, 11, -0.1f, 0.1f);
  k.tensors[12] = Tensor::empty({n, h, wd, c}, dt);
  k.tensors[13] = Tensor::empty({n, h, wd, c}, dt);
  k.tensors[14] = Tensor::empty({n, h, wd, m}, dt);
  k.tensors[15] = Tensor::empty({n, h, wd, m}, dt);
  k.tensors[16] = Tensor::empty({n, m}, DType::f32);
  k.bind(layout);
  return k;
}

Json cnx_wl(int64_t n, int64_t size, int64_t c, const char* dtype = "f16") {
  return Json{{"batch", n}, {"size", size}, {"channels", c}, {"mlp", 4 * c}, {"dtype", dtype}};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "conv";
  d.level = "L3";
  d.summary = "ConvNeXt V2's block: 7x7 depthwise conv, LayerNorm, linear to 4C, GELU, GRN, linear back, residual";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"input", ArgRole::in, offsetof(A, input)},
                   {"dw_weight", ArgRole::in, offsetof(A, dw_weight)},
                   {"dw_bias", ArgRole::in, offsetof(A, dw_bias)},
                   {"ln_weight", ArgRole::in, offsetof(A, ln_weight)},
                   {"ln_bias", ArgRole::in, offsetof(A, ln_bias)},
                   {"pw1_weight", ArgRole::in, offsetof(A, pw1_weight)},
                   {"pw1_bias", ArgRole::in, offsetof(A, pw1_bias)},
                   {"grn_gamma", ArgRole::in, offsetof(A, grn_gamma)},
                   {"grn_beta", ArgRole::in, offsetof(A, grn_beta)},
                   {"pw2_weight", ArgRole::in, offsetof(A, pw2_weight)},
                   {"pw2_bias", ArgRole::in, offsetof(A, pw2_bias)},
                   {"dw_out", ArgRole::workspace, offsetof(A, dw_out)},
                   {"norm_out", ArgRole::workspace, offsetof(A, norm_out)},
                   {"mlp_out", ArgRole::workspace, offsetof(A, mlp_out)},
                   {"act_out", ArgRole::workspace, offsetof(A, act_out)},
                   {"grn_scale", ArgRole::workspace, offsetof(A, grn_scale)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return cnx_make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double pixels = static_cast<double>(a.input.shape[0] * a.input.shape[1] * a.input.shape[2]);
    const double C = static_cast<double>(a.input.shape[3]), M = static_cast<double>(a.pw1_weight.shape[0]);
    const double flops = 2.0 * pixels * (49 * C + 2 * C * M);
    const double bytes = static_cast<double>(a.input.nbytes() + a.out.nbytes() + a.pw1_weight.nbytes() +
                                             a.pw2_weight.nbytes() + a.dw_weight.nbytes());
    return OpCost{bytes, flops, a.input.dtype};
  };
  // Seven roundings on the way (every part rounds once), the GEMMs' of values of about the
  // output's size: the dtype's default tolerance scaled by 8.
  d.tolerance = [](const OpCase&, const TensorArg&, DType dt) {
    const Tolerance t = default_tolerance(dt);
    return Tolerance{8 * t.atol, 8 * t.rtol};
  };
  d.workload_from_call = cnx_workload_from_call;
  d.covers = {"conv2d", "layer_norm", "linear", "gelu", "grn", "add"};
  d.composed[0] = convnextv2_block_composed_cpu;
  d.composed[1] = convnextv2_block_composed_cuda;
  d.architectures = {"convnextv2"};
  d.test_workloads = {cnx_wl(2, 9, 16),
                      cnx_wl(1, 5, 24, "bf16"),
                      cnx_wl(1, 3, 8),
                      cnx_wl(2, 1, 16),
                      Json{{"batch", 1}, {"size", 6}, {"width", 11}, {"channels", 8}, {"mlp", 24}},
                      cnx_wl(0, 4, 8)};
  // ConvNeXtV2-B at 384 x 384: a block of each stage, batch 1 and 32.
  for (int64_t n : {1, 32})
    for (const auto& [size, c] : std::vector<std::pair<int64_t, int64_t>>{{96, 128}, {48, 256}, {24, 512}, {12, 1024}})
      d.bench_workloads.push_back(cnx_wl(n, size, c));
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("convnextv2_block", cpu, convnextv2_block_cpu);

}  // namespace

fk_status convnextv2_block_composed_cpu(const void* args, void* stream) {
  return cnx_composed<DeviceType::cpu>(args, stream);
}
fk_status convnextv2_block_composed_cuda(const void* args, void* stream) {
  return cnx_composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
