// uir_block: definition (workloads, case, cost, tolerance, capture), validation, the
// composed baseline (its conv2d calls through the registry) and the CPU reference in double
// (the oracle, when out is f64, which conv2d does not take), in the order of fk/ops/conv.h.
//
// Workload fields: batch (1), size (H = W), channels (C), mid (M), out_channels (Cout),
// start (dw_start's kernel, 0: none), mid_kernel (dw_mid's, 0: none), stride (1), residual
// (false), dtype (f16).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/conv/uir_block_composed.h"

namespace fk::ops {
namespace {

using A = UirBlockArgs;
constexpr const char* kOp = A::kName;

// An optional weight or workspace is absent with no data or no elements (as conv2d's bias).
bool present(const TensorView& v) { return v.data != nullptr && v.numel() > 0; }

int64_t pad_for(int64_t kernel, int64_t stride) { return ((stride - 1) + (kernel - 1)) / 2; }
int64_t out_size(int64_t size, int64_t kernel, int64_t stride) {
  return (size + 2 * pad_for(kernel, stride) - kernel) / stride + 1;
}

struct BlockShape {
  int64_t n, h, c, m, cout, ks, km, h1, h3;  // h1: after dw_start, h3: after dw_mid (the output's)
};

BlockShape validate(const A& a, DeviceType backend) {
  FK_CHECK(a.input.rank == 4 && a.input.shape[1] == a.input.shape[2], kOp, ": input must be square NHWC [N, H, H, C], ",
           "got ", describe(a.input));
  FK_CHECK(a.stride == 1 || a.stride == 2, kOp, ": stride must be 1 or 2, got ", a.stride);
  const DType dt = a.input.dtype;
  FK_CHECK(dt == DType::f16 || dt == DType::bf16 || dt == DType::f32, kOp, ": input must be f16, bf16 or f32, got ",
           describe(a.input));
  BlockShape s{a.input.shape[0], a.input.shape[1], a.input.shape[3], 0, 0, 0, 0, 0, 0};
  const bool start = present(a.start_weight), mid = present(a.mid_weight);
  FK_CHECK(a.expand_weight.rank == 4 && a.expand_weight.shape[1] == 1 && a.expand_weight.shape[2] == 1 &&
               a.expand_weight.shape[3] == s.c,
           kOp, ": expand_weight must be [M, 1, 1, ", s.c, "], got ", describe(a.expand_weight));
  s.m = a.expand_weight.shape[0];
  FK_CHECK(a.project_weight.rank == 4 && a.project_weight.shape[1] == 1 && a.project_weight.shape[3] == s.m, kOp,
           ": project_weight must be [Cout, 1, 1, ", s.m, "], got ", describe(a.project_weight));
  s.cout = a.project_weight.shape[0];
  if (start) {
    FK_CHECK(a.start_weight.rank == 4 && a.start_weight.shape[0] == s.c && a.start_weight.shape[1] % 2 == 1 &&
                 a.start_weight.shape[2] == a.start_weight.shape[1] && a.start_weight.shape[3] == 1,
             kOp, ": start_weight must be a depthwise [", s.c, ", k, k, 1] with k odd, got ", describe(a.start_weight));
    s.ks = a.start_weight.shape[1];
  }
  if (mid) {
    FK_CHECK(a.mid_weight.rank == 4 && a.mid_weight.shape[0] == s.m && a.mid_weight.shape[1] % 2 == 1 &&
                 a.mid_weight.shape[2] == a.mid_weight.shape[1] && a.mid_weight.shape[3] == 1,
             kOp, ": mid_weight must be a depthwise [", s.m, ", k, k, 1] with k odd, got ", describe(a.mid_weight));
    s.km = a.mid_weight.shape[1];
  }
  FK_CHECK(start || mid || a.stride == 1, kOp, ": a stride of ", a.stride, " needs a depthwise convolution to carry it");
  s.h1 = start ? out_size(s.h, s.ks, mid ? 1 : a.stride) : s.h;
  s.h3 = mid ? out_size(s.h1, s.km, a.stride) : s.h1;
  FK_CHECK(!a.residual || (a.stride == 1 && s.cout == s.c), kOp, ": a residual needs stride 1 and Cout == C (", s.c,
           "), got stride ", a.stride, " and Cout ", s.cout);
  auto expect = [&](const char* name, const TensorView& v, std::initializer_list<int64_t> shape, bool written) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    FK_CHECK(v.rank == static_cast<int>(shape.size()) && std::equal(shape.begin(), shape.end(), v.shape) &&
                 v.is_contiguous(),
             kOp, ": ", name, " must be a contiguous [", dims, "], got ", describe(v));
    if (written) expect_written_dtype(kOp, name, v, dt, backend);
    else expect_dtype(kOp, name, v, dt);
    expect_device(kOp, name, v, backend);
  };
  expect("out", a.out, {s.n, s.h3, s.h3, s.cout}, true);
  expect("expand_bias", a.expand_bias, {s.m}, false);
  expect("project_bias", a.project_bias, {s.cout}, false);
  expect("expand_out", a.expand_out, {s.n, s.h1, s.h1, s.m}, false);
  if (start) {
    expect("start_bias", a.start_bias, {s.c}, false);
    expect("start_out", a.start_out, {s.n, s.h1, s.h1, s.c}, false);
  }
  if (mid) {
    expect("mid_bias", a.mid_bias, {s.m}, false);
    expect("mid_out", a.mid_out, {s.n, s.h3, s.h3, s.m}, false);
  }
  return s;
}

Conv2dArgs conv(const TensorView& out, const TensorView& in, const TensorView& w, const TensorView& b, int64_t stride,
                bool depthwise, bool relu, const TensorView& residual = TensorView{}) {
  Conv2dArgs c{};
  c.out = out, c.input = in, c.weight = w, c.bias = b, c.residual = residual;
  c.stride_h = c.stride_w = static_cast<int32_t>(stride);
  c.pad_h = c.pad_w = static_cast<int32_t>(pad_for(w.shape[1], stride));
  c.groups = depthwise ? static_cast<int32_t>(in.shape[3]) : 1;
  c.activation = relu ? ConvActivation::relu : ConvActivation::none;
  return c;
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate(a, B);
    const bool start = present(a.start_weight), mid = present(a.mid_weight);
    const TensorView none{};
    TensorView x = a.input;
    if (start) {
      call_op(conv(a.start_out, x, a.start_weight, a.start_bias, mid ? 1 : a.stride, true, false), B, stream);
      x = a.start_out;
    }
    call_op(conv(a.expand_out, x, a.expand_weight, a.expand_bias, 1, false, true), B, stream);
    x = a.expand_out;
    if (mid) {
      call_op(conv(a.mid_out, x, a.mid_weight, a.mid_bias, a.stride, true, true), B, stream);
      x = a.mid_out;
    }
    call_op(conv(a.out, x, a.project_weight, a.project_bias, 1, false, false, a.residual ? a.input : none), B, stream);
  });
}

// One convolution in double over an [n, h, h, cin] row-major buffer: a depthwise one (each
// channel its own k x k filter) or a 1x1 one; then ReLU if asked.
std::vector<double> conv_ref(const std::vector<double>& x, int64_t n, int64_t h, int64_t cin, const TensorView& w,
                             const TensorView& b, int64_t stride, bool depthwise, bool relu) {
  const int64_t k = w.shape[1], pad = pad_for(k, stride), ho = out_size(h, k, stride), cout = w.shape[0];
  std::vector<double> y(static_cast<size_t>(n * ho * ho * cout));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < ho; ++p)
      for (int64_t q = 0; q < ho; ++q)
        for (int64_t o = 0; o < cout; ++o) {
          double s = get(b, o);
          for (int64_t u = 0; u < k; ++u)
            for (int64_t v = 0; v < k; ++v) {
              const int64_t yy = p * stride - pad + u, xx = q * stride - pad + v;
              if (yy < 0 || yy >= h || xx < 0 || xx >= h) continue;
              const double* px = &x[static_cast<size_t>(((i * h + yy) * h + xx) * cin)];
              if (depthwise) {
                s += get(w, o, u, v, 0) * px[o];
              } else {
                for (int64_t c = 0; c < cin; ++c) s += get(w, o, u, v, c) * px[c];
              }
            }
          y[static_cast<size_t>(((i * ho + p) * ho + q) * cout + o)] = relu ? std::max(s, 0.0) : s;
        }
  return y;
}

void reference(const A& a) {
  const BlockShape s = validate(a, DeviceType::cpu);
  const bool start = present(a.start_weight), mid = present(a.mid_weight);
  std::vector<double> x0(static_cast<size_t>(s.n * s.h * s.h * s.c));
  for (size_t i = 0; i < x0.size(); ++i) x0[i] = load_element(a.input.element_ptr(static_cast<int64_t>(i)), a.input.dtype);
  std::vector<double> x = x0;
  int64_t h = s.h;
  if (start) {
    x = conv_ref(x, s.n, h, s.c, a.start_weight, a.start_bias, mid ? 1 : a.stride, true, false);
    h = s.h1;
  }
  x = conv_ref(x, s.n, h, s.c, a.expand_weight, a.expand_bias, 1, false, true);
  if (mid) {
    x = conv_ref(x, s.n, h, s.m, a.mid_weight, a.mid_bias, a.stride, true, true);
    h = s.h3;
  }
  x = conv_ref(x, s.n, h, s.m, a.project_weight, a.project_bias, 1, false, false);
  for (size_t i = 0; i < x.size(); ++i)
    store_element(a.out.element_ptr(static_cast<int64_t>(i)), a.out.dtype, x[i] + (a.residual ? x0[i] : 0.0));
}

fk_status uir_block_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.out.dtype != DType::f64) return uir_block_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json w{{"batch", a.input.shape[0]},
         {"size", a.input.shape[1]},
         {"channels", a.input.shape[3]},
         {"mid", a.expand_weight.shape[0]},
         {"out_channels", a.project_weight.shape[0]},
         {"start", present(a.start_weight) ? a.start_weight.shape[1] : 0},
         {"mid_kernel", present(a.mid_weight) ? a.mid_weight.shape[1] : 0},
         {"stride", a.stride},
         {"dtype", std::string(dtype_name(a.input.dtype))}};
  if (a.residual) w["residual"] = true;
  return w;
}

OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t n = wl_int(w, "batch", 1), h = wl_int(w, "size"), c = wl_int(w, "channels"), m = wl_int(w, "mid");
  const int64_t cout = wl_int(w, "out_channels"), ks = wl_int(w, "start", 0), km = wl_int(w, "mid_kernel", 0);
  const int64_t stride = wl_int(w, "stride", 1);
  FK_CHECK(n >= 0 && h >= 1 && c >= 1 && m >= 1 && cout >= 1 && ks >= 0 && km >= 0 && (stride == 1 || stride == 2),
           kOp, " workload needs size, channels, mid, out_channels >= 1, kernels >= 0, stride 1 or 2; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::f16;
  OpCase c_ = begin_case<A>(w, layout.size());
  const int64_t h1 = ks ? out_size(h, ks, km ? 1 : stride) : h, h3 = km ? out_size(h1, km, stride) : h1;
  // Weights of standard deviation 1/sqrt(fan-in); inputs of order one (a block's input is
  // a previous block's output).
  auto weight = [&](const Shape& shape, int64_t fan_in, uint64_t stream) {
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
    return random_tensor(shape, dt, seed, stream, -r, r);
  };
  c_.tensors[0] = Tensor::empty({n, h3, h3, cout}, dt);
  c_.tensors[1] = random_tensor({n, h, h, c}, dt, seed, 1, -1.f, 1.f);
  if (ks) {
    c_.tensors[2] = weight({c, ks, ks, 1}, ks * ks, 2);
    c_.tensors[3] = random_tensor({c}, dt, seed, 3, -0.1f, 0.1f);
    c_.tensors[10] = Tensor::empty({n, h1, h1, c}, dt);
  }
  c_.tensors[4] = weight({m, 1, 1, c}, c, 4);
  c_.tensors[5] = random_tensor({m}, dt, seed, 5, -0.1f, 0.1f);
  if (km) {
    c_.tensors[6] = weight({m, km, km, 1}, km * km, 6);
    c_.tensors[7] = random_tensor({m}, dt, seed, 7, -0.1f, 0.1f);
    c_.tensors[12] = Tensor::empty({n, h3, h3, m}, dt);
  }
  // Absent parts: tensors without elements (every argument of a case is a tensor).
  for (size_t i : {2, 3, 6, 7, 10, 12})
    if (!c_.tensors[i].defined()) c_.tensors[i] = Tensor::empty({0}, dt);
  c_.tensors[8] = weight({cout, 1, 1, m}, m, 8);
  c_.tensors[9] = random_tensor({cout}, dt, seed, 9, -0.1f, 0.1f);
  c_.tensors[11] = Tensor::empty({n, h1, h1, m}, dt);
  A& a = c_.as<A>();
  a.stride = static_cast<int32_t>(stride);
  a.residual = wl_bool(w, "residual", false) ? 1 : 0;
  c_.bind(layout);
  return c_;
}

Json wl(int64_t n, int64_t size, int64_t c, int64_t m, int64_t cout, int64_t start, int64_t mid, int64_t stride,
        bool residual, const char* dtype = "f16") {
  Json w{{"batch", n}, {"size", size}, {"channels", c}, {"mid", m}, {"out_channels", cout}, {"start", start},
         {"mid_kernel", mid}, {"stride", stride}, {"dtype", dtype}};
  if (residual) w["residual"] = true;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "conv";
  d.level = "L3";
  d.summary = "MobileNetV4's Universal Inverted Residual block: optional depthwise start, 1x1 expand + ReLU, optional "
              "depthwise mid + ReLU, 1x1 project (+ residual), BatchNorms folded";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"input", ArgRole::in, offsetof(A, input)},
                   {"start_weight", ArgRole::in, offsetof(A, start_weight)},
                   {"start_bias", ArgRole::in, offsetof(A, start_bias)},
                   {"expand_weight", ArgRole::in, offsetof(A, expand_weight)},
                   {"expand_bias", ArgRole::in, offsetof(A, expand_bias)},
                   {"mid_weight", ArgRole::in, offsetof(A, mid_weight)},
                   {"mid_bias", ArgRole::in, offsetof(A, mid_bias)},
                   {"project_weight", ArgRole::in, offsetof(A, project_weight)},
                   {"project_bias", ArgRole::in, offsetof(A, project_bias)},
                   {"start_out", ArgRole::workspace, offsetof(A, start_out)},
                   {"expand_out", ArgRole::workspace, offsetof(A, expand_out)},
                   {"mid_out", ArgRole::workspace, offsetof(A, mid_out)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    double flops = 0, bytes = static_cast<double>(a.input.nbytes() + a.out.nbytes());
    for (const auto& [w, out] : {std::pair<const TensorView*, const TensorView*>{&a.start_weight, &a.start_out},
                                 {&a.expand_weight, &a.expand_out},
                                 {&a.mid_weight, &a.mid_out},
                                 {&a.project_weight, &a.out}}) {
      if (w->data == nullptr) continue;
      // Each output element: one multiply-add per filter tap and input channel of its group.
      flops += 2.0 * static_cast<double>(out->numel()) * static_cast<double>(w->shape[1] * w->shape[2] * w->shape[3]);
      bytes += static_cast<double>(w->nbytes());
    }
    return OpCost{bytes, flops, a.input.dtype};
  };
  // Each output element passes through up to four roundings (every convolution rounds once)
  // of values of about its own size: the dtype's default tolerance scaled by 6.
  d.tolerance = [](const OpCase&, const TensorArg&, DType dt) {
    const Tolerance t = default_tolerance(dt);
    return Tolerance{6 * t.atol, 6 * t.rtol};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {"conv2d"};
  d.composed[0] = uir_block_composed_cpu;
  d.composed[1] = uir_block_composed_cuda;
  d.architectures = {"mobilenetv4"};
  d.test_workloads = {wl(2, 9, 16, 32, 16, 3, 3, 1, true),    wl(1, 10, 16, 48, 24, 5, 5, 2, false),
                      wl(2, 7, 24, 40, 24, 0, 5, 1, true, "bf16"), wl(1, 8, 8, 24, 16, 3, 0, 2, false),
                      wl(1, 5, 8, 16, 8, 0, 0, 1, true, "f32"),  wl(0, 4, 8, 16, 8, 3, 3, 1, true)};
  // MobileNetV4-Conv-S at 224 x 224: stage 3's first block (28 x 28 x 64 to 14 x 14 x 96) and
  // its repeated one, stage 4's first and its repeated one; batch 1 and 256.
  for (int64_t n : {1, 256}) {
    d.bench_workloads.push_back(wl(n, 28, 64, 192, 96, 5, 5, 2, false));
    d.bench_workloads.push_back(wl(n, 14, 96, 192, 96, 0, 3, 1, true));
    d.bench_workloads.push_back(wl(n, 14, 96, 576, 128, 3, 3, 2, false));
    d.bench_workloads.push_back(wl(n, 7, 128, 512, 128, 0, 5, 1, true));
  }
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("uir_block", cpu, uir_block_cpu);

}  // namespace

fk_status uir_block_composed_cpu(const void* args, void* stream) { return composed<DeviceType::cpu>(args, stream); }
fk_status uir_block_composed_cuda(const void* args, void* stream) { return composed<DeviceType::cuda>(args, stream); }

}  // namespace fk::ops
