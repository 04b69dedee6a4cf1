// conv2d: definition (workloads from YOLOv10n's layers, inputs, cost, tolerance) and the
// CPU reference, which is also the CPU implementation: every tap summed in double, bias and
// the activation (SiLU or ReLU) applied in double, one rounding to the output dtype.
//
// Workload fields: batch (1), height, width, in_channels, out_channels, kernel (3), stride
// (1), dilation (1), padding (dilation * (kernel - 1) / 2, "same" for odd kernels as YOLO's
// autopad), each for both axes unless kernel_w / stride_w / dilation_w / padding_w give the
// width's; groups (1), bias (true), activation ("silu", "relu" or "none"; "silu"), residual
// (false), dtype (f16).
#include <cmath>
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

using A = Conv2dArgs;

// Root mean square of a rank-4 host view's elements (0 when empty).
double rms4(const TensorView& v) {
  double sum = 0;
  for (int64_t i = 0; i < v.shape[0]; ++i)
    for (int64_t j = 0; j < v.shape[1]; ++j)
      for (int64_t k = 0; k < v.shape[2]; ++k)
        for (int64_t l = 0; l < v.shape[3]; ++l) {
          const double x = get(v, i, j, k, l);
          sum += x * x;
        }
  const int64_t n = v.numel();
  return n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
}

double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
// max(x, 0) with NaN propagating (torch.relu), and -0 to +0.
double relu_ref(double x) { return std::isnan(x) || x > 0.0 ? x : 0.0; }

void conv2d_reference(const A& a) {
  const TensorView &in = a.input, &wt = a.weight, &out = a.out;
  const int64_t N = in.shape[0], H = in.shape[1], W = in.shape[2], C = in.shape[3];
  const int64_t K = wt.shape[0], R = wt.shape[1], S = wt.shape[2];
  const int64_t Cg = C / a.groups, Kg = K / a.groups;
  const int64_t P = out.shape[1], Q = out.shape[2];
  const bool residual = arg_present(a.residual);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t k = 0; k < K; ++k) {
          const int64_t c0 = (k / Kg) * Cg;
          double acc = arg_present(a.bias) ? get(a.bias, k) : 0.0;
          for (int64_t r = 0; r < R; ++r) {
            const int64_t h = p * a.stride_h - a.pad_h + r * a.dilation_h;
            if (h < 0 || h >= H) continue;
            for (int64_t s = 0; s < S; ++s) {
              const int64_t w = q * a.stride_w - a.pad_w + s * a.dilation_w;
              if (w < 0 || w >= W) continue;
              for (int64_t c = 0; c < Cg; ++c) acc += get(in, n, h, w, c0 + c) * get(wt, k, r, s, c);
            }
          }
          const double y = a.activation == ConvActivation::silu   ? silu_ref(acc)
                           : a.activation == ConvActivation::relu ? relu_ref(acc)
                                                                  : acc;
          set(out, residual ? y + get(a.residual, n, p, q, k) : y, n, p, q, k);
        }
}

fk_status conv2d_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_conv2d(a, DeviceType::cpu);
    conv2d_reference(a);
  });
}

struct ConvShape {
  int64_t batch, height, width, in_channels, out_channels, groups;
  int64_t kernel, stride, padding, dilation;          // height axis
  int64_t kernel_w, stride_w, padding_w, dilation_w;  // width axis
  bool bias, residual;
  ConvActivation activation;
  DType dtype;
};

ConvShape conv_shape(const Json& w) {
  ConvShape s{};
  s.batch = wl_int(w, "batch", 1);
  s.height = wl_int(w, "height");
  s.width = wl_int(w, "width");
  s.in_channels = wl_int(w, "in_channels");
  s.out_channels = wl_int(w, "out_channels");
  s.kernel = wl_int(w, "kernel", 3);
  s.stride = wl_int(w, "stride", 1);
  s.dilation = wl_int(w, "dilation", 1);
  s.padding = wl_int(w, "padding", s.dilation * (s.kernel - 1) / 2);
  s.kernel_w = wl_int(w, "kernel_w", s.kernel);
  s.stride_w = wl_int(w, "stride_w", s.stride);
  s.dilation_w = wl_int(w, "dilation_w", s.dilation);
  // An explicit padding holds for both axes; the default is each axis' own "same" padding.
  s.padding_w = wl_int(w, "padding_w", w.contains("padding") ? s.padding : s.dilation_w * (s.kernel_w - 1) / 2);
  s.groups = wl_int(w, "groups", 1);
  s.bias = wl_bool(w, "bias", true);
  s.residual = wl_bool(w, "residual", false);
  const std::string act = wl_string(w, "activation", "silu");
  FK_CHECK(act == "silu" || act == "relu" || act == "none", A::kName,
           " workload: activation must be \"silu\", \"relu\" or \"none\", got ", w.dump());
  s.activation = act == "silu" ? ConvActivation::silu : act == "relu" ? ConvActivation::relu : ConvActivation::none;
  s.dtype = wl_dtype(w, "dtype", DType::f16);
  FK_CHECK(s.batch >= 0 && s.height >= 1 && s.width >= 1 && s.in_channels >= 1 && s.out_channels >= 1 &&
               s.kernel >= 1 && s.stride >= 1 && s.dilation >= 1 && s.padding >= 0 && s.kernel_w >= 1 &&
               s.stride_w >= 1 && s.dilation_w >= 1 && s.padding_w >= 0 && s.groups >= 1 &&
               s.in_channels % s.groups == 0 && s.out_channels % s.groups == 0,
           A::kName, " workload needs positive sizes and groups dividing both channel counts, got ", w.dump());
  return s;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json w{{"batch", a.input.shape[0]},
              {"height", a.input.shape[1]},
              {"width", a.input.shape[2]},
              {"in_channels", a.input.shape[3]},
              {"out_channels", a.weight.shape[0]},
              {"kernel", a.weight.shape[1]},
              {"stride", a.stride_h},
              {"padding", a.pad_h},
              {"dilation", a.dilation_h},
              {"groups", a.groups},
              {"bias", arg_present(a.bias)},
              {"residual", arg_present(a.residual)},
              {"activation", a.activation == ConvActivation::silu   ? "silu"
                             : a.activation == ConvActivation::relu ? "relu"
                                                                    : "none"},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
  // The width axis, where it differs (all four, so none falls back to a default).
  if (a.weight.shape[2] != a.weight.shape[1] || a.stride_w != a.stride_h || a.pad_w != a.pad_h ||
      a.dilation_w != a.dilation_h) {
    w["kernel_w"] = a.weight.shape[2];
    w["stride_w"] = a.stride_w;
    w["padding_w"] = a.pad_w;
    w["dilation_w"] = a.dilation_w;
  }
  return w;
}

// Distinct layer shapes of YOLOv10n at 640x640 (tasks/captures/yolov10n has every call of a
// forward): {height = width, C, K, kernel, stride, groups, SiLU, layers, residual}.
struct YoloLayer {
  int64_t hw, c, k, kernel, stride, groups;
  bool silu;
  const char* layers;
  bool residual = false;  // the layer adds a shortcut
};
constexpr YoloLayer kYoloLayers[] = {
    {640, 3, 16, 3, 2, 1, true, "model.0 (stem)"},
    {320, 16, 32, 3, 2, 1, true, "model.1"},
    {160, 32, 32, 1, 1, 1, true, "model.2.cv1"},
    {160, 16, 16, 3, 1, 1, true, "model.2.m.0 (bottleneck)"},
    {160, 48, 32, 1, 1, 1, true, "model.2.cv2"},
    {160, 32, 64, 3, 2, 1, true, "model.3"},
    {80, 32, 32, 3, 1, 1, true, "model.4 / model.16 bottlenecks"},
    {80, 32, 32, 3, 1, 1, true, "model.4.m.*.cv2 (bottleneck with its shortcut)", true},
    {80, 64, 64, 3, 1, 1, true, "one2one_cv2.0 (P3 box head)"},
    {80, 192, 64, 1, 1, 1, true, "model.16.cv1"},
    {80, 128, 128, 3, 2, 128, false, "model.5.cv2 (SCDown depthwise)"},
    {80, 64, 64, 3, 1, 64, true, "one2one_cv3.0.0.0 (P3 class head depthwise)"},
    {40, 64, 64, 3, 1, 1, true, "model.6 / 13 / 19 bottlenecks"},
    {40, 192, 128, 1, 1, 1, true, "model.19.cv1 / cv2"},
    {20, 128, 128, 3, 1, 1, true, "model.8 bottleneck"},
    {20, 512, 256, 1, 1, 1, true, "model.9.cv2 (SPPF)"},
    {20, 256, 256, 7, 1, 256, true, "model.22.m.0.cv1.2 (RepVGGDW 7x7)"},
    {20, 128, 128, 3, 1, 128, true, "model.22.m.0.cv1.4 (CIB depthwise with its shortcut)", true},
    {20, 128, 256, 1, 1, 1, false, "model.10.attn.qkv (PSA)"},
};

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "conv";
  d.level = "L1";
  d.summary = "NHWC 2-D convolution, OHWI weights, groups (dense to depthwise), stride, padding, dilation, "
              "optional bias, SiLU or ReLU and residual, f32 accumulation";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"input", ArgRole::in, offsetof(A, input)},
                   {"weight", ArgRole::in, offsetof(A, weight)},
                   {"bias", ArgRole::in, offsetof(A, bias)},
                   {"residual", ArgRole::in, offsetof(A, residual)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const ConvShape s = conv_shape(w);
    const int64_t P = conv_out_size(s.height, s.kernel, s.stride, s.padding, s.dilation);
    const int64_t Q = conv_out_size(s.width, s.kernel_w, s.stride_w, s.padding_w, s.dilation_w);
    FK_CHECK(P >= 1 && Q >= 1, A::kName, " workload: the filter does not fit the padded image, got ", w.dump());
    const int64_t Cg = s.in_channels / s.groups;
    OpCase c = begin_case<A>(w, 5);
    c.tensors[0] = Tensor::empty({s.batch, P, Q, s.out_channels}, s.dtype);
    c.tensors[1] = random_tensor({s.batch, s.height, s.width, s.in_channels}, s.dtype, seed, 1, -1.f, 1.f);
    // Weights scaled as a trained network's (unit-variance outputs for unit-variance inputs),
    // so outputs stay in the dtype's range at any reduction length.
    const float wmax = std::sqrt(3.f / static_cast<float>(s.kernel * s.kernel_w * Cg));
    c.tensors[2] = random_tensor({s.out_channels, s.kernel, s.kernel_w, Cg}, s.dtype, seed, 2, -wmax, wmax);
    c.tensors[3] = s.bias ? random_tensor({s.out_channels}, s.dtype, seed, 3, -0.5f, 0.5f) : absent_tensor(s.dtype);
    c.tensors[4] = s.residual ? random_tensor({s.batch, P, Q, s.out_channels}, s.dtype, seed, 4, -1.f, 1.f)
                              : absent_tensor(s.dtype);
    A& a = c.as<A>();
    a.stride_h = static_cast<int32_t>(s.stride), a.stride_w = static_cast<int32_t>(s.stride_w);
    a.pad_h = static_cast<int32_t>(s.padding), a.pad_w = static_cast<int32_t>(s.padding_w);
    a.dilation_h = static_cast<int32_t>(s.dilation), a.dilation_w = static_cast<int32_t>(s.dilation_w);
    a.groups = static_cast<int32_t>(s.groups);
    a.activation = s.activation;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double macs = static_cast<double>(a.out.numel()) * a.weight.shape[1] * a.weight.shape[2] * a.weight.shape[3];
    const double bytes = static_cast<double>(a.input.nbytes() + a.weight.nbytes() + a.out.nbytes()) +
                         (arg_present(a.bias) ? static_cast<double>(a.bias.nbytes()) : 0.0) +
                         (arg_present(a.residual) ? static_cast<double>(a.residual.nbytes()) : 0.0);
    // Depthwise and narrow-group convolutions do not map onto tensor-core tiles: their
    // ceiling is the fp32 pipe's.
    const bool mma = a.groups == 1 || a.weight.shape[3] >= 16;
    return OpCost{bytes, 2.0 * macs, mma ? a.input.dtype : DType::f32};
  };
  // Each output is a dot product of R*S*C/groups terms accumulated in fp32, so linear's rule
  // (ops/linear/linear_tolerance.h) on the im2col view: besides the dtype's rounding, an
  // absolute term for accumulation rounding on outputs that cancel to near zero,
  // 4 * 2^-24 * sqrt(taps) * typical, typical = sqrt(taps) * rms(input) * rms(weight).
  d.tolerance = [](const OpCase& c, const TensorArg&, DType out_dtype) {
    const auto& a = c.as<A>();
    Tolerance tol = default_tolerance(out_dtype);
    const double taps = static_cast<double>(a.weight.shape[1] * a.weight.shape[2] * a.weight.shape[3]);
    const double typical = std::sqrt(taps) * rms4(a.input) * rms4(a.weight);
    tol.atol += 4 * std::ldexp(1.0, -24) * std::sqrt(taps) * typical;
    return tol;
  };
  d.test_workloads = {
      // Dense 3x3, stride 1 and 2, odd sizes; the stem's 3 input channels.
      {{"batch", 2}, {"height", 9}, {"width", 7}, {"in_channels", 12}, {"out_channels", 20}},
      {{"batch", 2}, {"height", 9}, {"width", 8}, {"in_channels", 3}, {"out_channels", 16}, {"stride", 2}},
      {{"batch", 1}, {"height", 11}, {"width", 6}, {"in_channels", 40}, {"out_channels", 72}, {"stride", 2},
       {"dtype", "bf16"}},
      // 1x1 (pure GEMM), no bias, no activation; many output channels over several tiles.
      {{"batch", 3}, {"height", 5}, {"width", 6}, {"in_channels", 48}, {"out_channels", 130}, {"kernel", 1},
       {"bias", false}, {"activation", "none"}},
      // A bottleneck's second conv with its shortcut (residual), dense and depthwise (CIB).
      {{"batch", 2}, {"height", 6}, {"width", 7}, {"in_channels", 16}, {"out_channels", 16}, {"residual", true}},
      {{"batch", 1}, {"height", 5}, {"width", 5}, {"in_channels", 24}, {"out_channels", 24}, {"groups", 24},
       {"residual", true}, {"dtype", "bf16"}},
      // Depthwise 3x3 stride 2 without activation (SCDown), 7x7 (RepVGGDW), 3x3 with SiLU.
      {{"batch", 2}, {"height", 10}, {"width", 9}, {"in_channels", 24}, {"out_channels", 24}, {"groups", 24},
       {"stride", 2}, {"activation", "none"}},
      {{"batch", 1}, {"height", 8}, {"width", 8}, {"in_channels", 16}, {"out_channels", 16}, {"groups", 16},
       {"kernel", 7}},
      {{"batch", 1}, {"height", 6}, {"width", 5}, {"in_channels", 13}, {"out_channels", 13}, {"groups", 13},
       {"dtype", "bf16"}},
      // Grouped (neither dense nor depthwise), channel multiplier 2 depthwise, dilation.
      {{"batch", 1}, {"height", 7}, {"width", 7}, {"in_channels", 16}, {"out_channels", 24}, {"groups", 4}},
      {{"batch", 1}, {"height", 6}, {"width", 6}, {"in_channels", 8}, {"out_channels", 16}, {"groups", 8}},
      {{"batch", 1}, {"height", 9}, {"width", 10}, {"in_channels", 8}, {"out_channels", 12}, {"dilation", 2}},
      // Valid padding, a filter as large as the image (one output pixel), f32, no images.
      {{"batch", 2}, {"height", 6}, {"width", 5}, {"in_channels", 4}, {"out_channels", 6}, {"padding", 0}},
      {{"batch", 1}, {"height", 3}, {"width", 3}, {"in_channels", 5}, {"out_channels", 7}, {"padding", 0},
       {"dtype", "f32"}},
      {{"batch", 2}, {"height", 7}, {"width", 5}, {"in_channels", 6}, {"out_channels", 10}, {"stride", 3},
       {"dtype", "f32"}},
      {{"batch", 0}, {"height", 4}, {"width", 4}, {"in_channels", 8}, {"out_channels", 8}},
      // Different axes: a 1x5 filter, strides 2 and 1, dilation 1 and 2 (the width's given).
      {{"batch", 2}, {"height", 7}, {"width", 11}, {"in_channels", 6}, {"out_channels", 9}, {"kernel", 1},
       {"kernel_w", 5}, {"stride", 2}, {"stride_w", 1}, {"dilation_w", 2}},
      // ReLU (MobileNetV4): dense 3x3 stride 2, 1x1 with a residual, depthwise 5x5 (f32).
      {{"batch", 2}, {"height", 9}, {"width", 9}, {"in_channels", 3}, {"out_channels", 16}, {"stride", 2},
       {"activation", "relu"}},
      {{"batch", 2}, {"height", 5}, {"width", 6}, {"in_channels", 40}, {"out_channels", 24}, {"kernel", 1},
       {"activation", "relu"}, {"residual", true}, {"dtype", "bf16"}},
      {{"batch", 1}, {"height", 7}, {"width", 7}, {"in_channels", 12}, {"out_channels", 12}, {"groups", 12},
       {"kernel", 5}, {"activation", "relu"}, {"dtype", "f32"}},
      // A deep reduction (9 x 256 taps), as model.8's bottlenecks.
      {{"batch", 1}, {"height", 4}, {"width", 4}, {"in_channels", 256}, {"out_channels", 32}},
      // The vector kernels' tiles: three pixel tiles and two channel tiles, both with tails
      // (the pipelined implicit GEMM, 16-byte stores with a residual); two groups of 16
      // channels; a stem over several blocks (the direct kernel).
      {{"batch", 2}, {"height", 13}, {"width", 11}, {"in_channels", 32}, {"out_channels", 80}, {"residual", true}},
      {{"batch", 1}, {"height", 9}, {"width", 9}, {"in_channels", 32}, {"out_channels", 48}, {"groups", 2},
       {"stride", 2}, {"dtype", "bf16"}},
      {{"batch", 1}, {"height", 33}, {"width", 31}, {"in_channels", 3}, {"out_channels", 24}, {"stride", 2},
       {"activation", "relu"}},
  };
  for (int64_t batch : {1, 32})
    for (const YoloLayer& l : kYoloLayers) {
      Json w = {{"batch", batch}, {"height", l.hw},     {"width", l.hw},   {"in_channels", l.c},
                {"out_channels", l.k}, {"kernel", l.kernel}, {"stride", l.stride}};
      if (l.groups != 1) w["groups"] = l.groups;
      if (!l.silu) w["activation"] = "none";
      if (l.residual) w["residual"] = true;
      d.bench_workloads.push_back(w);
    }
  d.workload_from_call = workload_from_call;
  d.architectures = {"yolov10n", "mobilenetv4-conv-medium", "mobilenetv4-conv-small"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("conv2d", cpu, conv2d_cpu);
FK_REGISTER_VARIANT("conv2d", "simt",
                    "f16/bf16 dense and grouped convolutions on the fp32 pipe instead of the tensor cores");
FK_REGISTER_VARIANT("conv2d", "scalar_loads",
                    "element-wise gathers (the unpipelined tensor-core kernel, one channel per depthwise thread) "
                    "instead of the 16-byte-vector kernels");

}  // namespace
}  // namespace fk::ops
