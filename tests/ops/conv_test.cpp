// conv2d beyond the generic oracle test (which runs its test workloads against the f64
// reference): hand-computed values (zero padding, stride, dilation, depthwise, bias, SiLU),
// agreement with an independent NCHW/OIHW convolution written here the way PyTorch defines
// it (so the layout contract and conv_weight_from_oihw are checked together), channel-slice
// views (C2f reading one slice of a buffer and writing another), fold_batch_norm against
// Conv then BatchNorm applied separately, fuse_parallel_convs (RepVGGDW's 7x7 + 3x3) against
// the two convs added, and clear errors for bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_weights.h"
#include "ops/conv_test_util.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::Conv2dArgs;
using ops::ConvActivation;
using test::expect_invalid;
using test::channel_slice;
using test::expect_ok;
constexpr auto filled = test::filled4;

Conv2dArgs conv_args(const TensorView& out, const TensorView& in, const TensorView& w, int stride, int pad, int dil = 1,
                     int groups = 1) {
  Conv2dArgs a;
  a.out = out;
  a.input = in;
  a.weight = w;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.dilation_h = a.dilation_w = dil;
  a.groups = groups;
  return a;
}

double silu(double x) { return x / (1 + std::exp(-x)); }

TEST(Conv2d, BoxFilterWithZeroPadding) {
  // 1 image, 3x3 pixels valued 1..9, one channel; a 3x3 filter of ones, padding 1: each
  // output is the sum of the pixel's in-image neighbourhood.
  const Tensor in = filled({1, 3, 3, 1}, DType::f32, [](auto, auto h, auto w, auto) { return 1.0 + 3 * h + w; });
  const Tensor w = filled({1, 3, 3, 1}, DType::f32, [](auto...) { return 1.0; });
  Tensor out = Tensor::empty({1, 3, 3, 1}, DType::f32);
  expect_ok(DeviceType::cpu, conv_args(out, in, w, 1, 1));
  const double want[3][3] = {{12, 21, 16}, {27, 45, 33}, {24, 39, 28}};
  for (int h = 0; h < 3; ++h)
    for (int x = 0; x < 3; ++x) EXPECT_EQ(get(out.view(), 0, h, x, 0), want[h][x]) << h << "," << x;
  // Stride 2: the corners of the same sums.
  Tensor out2 = Tensor::empty({1, 2, 2, 1}, DType::f32);
  expect_ok(DeviceType::cpu, conv_args(out2, in, w, 2, 1));
  EXPECT_EQ(get(out2.view(), 0, 0, 0, 0), 12);
  EXPECT_EQ(get(out2.view(), 0, 0, 1, 0), 16);
  EXPECT_EQ(get(out2.view(), 0, 1, 0, 0), 24);
  EXPECT_EQ(get(out2.view(), 0, 1, 1, 0), 28);
}

TEST(Conv2d, DilationReachesFartherTaps) {
  // 5x5 pixels, a 3x3 filter picking only its corner taps, dilation 2, no padding: the one
  // output is in[0,0] + in[0,4] + in[4,0] + in[4,4].
  const Tensor in = filled({1, 5, 5, 1}, DType::f32, [](auto, auto h, auto w, auto) { return 1.0 + 5 * h + w; });
  const Tensor w = filled({1, 3, 3, 1}, DType::f32, [](auto, auto r, auto s, auto) {
    return (r == 0 || r == 2) && (s == 0 || s == 2) ? 1.0 : 0.0;
  });
  Tensor out = Tensor::empty({1, 1, 1, 1}, DType::f32);
  expect_ok(DeviceType::cpu, conv_args(out, in, w, 1, 0, 2));
  EXPECT_EQ(get(out.view(), 0, 0, 0, 0), 1 + 5 + 21 + 25);
}

TEST(Conv2d, DepthwiseKeepsChannelsApartWithBiasAndSilu) {
  // Two channels, 1x1 spatial weights 2 and -3 at the centre tap of a 3x3 depthwise filter:
  // out[c] = silu(w_c * in[c] + b_c), channels never mix.
  const Tensor in = filled({1, 2, 2, 2}, DType::f32, [](auto, auto h, auto w, auto c) { return c == 0 ? h + w : -1.0; });
  const Tensor w = filled({2, 3, 3, 1}, DType::f32, [](auto k, auto r, auto s, auto) {
    return r == 1 && s == 1 ? (k == 0 ? 2.0 : -3.0) : 0.0;
  });
  Tensor bias = Tensor::empty({2}, DType::f32);
  set(bias.view(), 0.5, 0);
  set(bias.view(), -1.0, 1);
  Tensor out = Tensor::empty({1, 2, 2, 2}, DType::f32);
  Conv2dArgs a = conv_args(out, in, w, 1, 1, 1, 2);
  a.bias = bias;
  a.activation = ConvActivation::silu;
  expect_ok(DeviceType::cpu, a);
  for (int h = 0; h < 2; ++h)
    for (int x = 0; x < 2; ++x) {
      EXPECT_NEAR(get(out.view(), 0, h, x, 0), silu(2.0 * (h + x) + 0.5), 1e-6);
      EXPECT_NEAR(get(out.view(), 0, h, x, 1), silu(3.0 - 1.0), 1e-6);
    }
}

TEST(Conv2d, ResidualIsAddedAfterTheActivation) {
  // 1x1 conv with weight 1 and bias 0.5: out = silu(x + 0.5) + residual (not silu(x + 0.5 + residual)).
  const Tensor in = filled({1, 1, 3, 1}, DType::f32, [](auto, auto, auto w, auto) { return w - 1.0; });
  const Tensor res = filled({1, 1, 3, 1}, DType::f32, [](auto, auto, auto w, auto) { return 10.0 * w - 3.0; });
  const Tensor w = filled({1, 1, 1, 1}, DType::f32, [](auto...) { return 1.0; });
  Tensor bias = Tensor::empty({1}, DType::f32);
  set(bias.view(), 0.5, 0);
  Tensor out = Tensor::empty({1, 1, 3, 1}, DType::f32);
  Conv2dArgs a = conv_args(out, in, w, 1, 0);
  a.bias = bias;
  a.residual = res;
  a.activation = ConvActivation::silu;
  expect_ok(DeviceType::cpu, a);
  for (int x = 0; x < 3; ++x) EXPECT_NEAR(get(out.view(), 0, 0, x, 0), silu(x - 0.5) + 10.0 * x - 3.0, 1e-6) << x;
}

// PyTorch's definition on NCHW input and OIHW weight, written independently of the op.
double torch_conv_at(const Tensor& nchw, const Tensor& oihw, const Tensor& bias, int64_t n, int64_t k, int64_t p,
                     int64_t q, int stride, int pad, int dil, int groups) {
  const int64_t Cg = oihw.size(1), Kg = oihw.size(0) / groups;
  double acc = get(bias.view(), k);
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t r = 0; r < oihw.size(2); ++r)
      for (int64_t s = 0; s < oihw.size(3); ++s) {
        const int64_t h = p * stride - pad + r * dil, w = q * stride - pad + s * dil;
        if (h < 0 || w < 0 || h >= nchw.size(2) || w >= nchw.size(3)) continue;
        acc += get(nchw.view(), n, (k / Kg) * Cg + c, h, w) * get(oihw.view(), k, c, r, s);
      }
  return acc;
}

TEST(Conv2d, MatchesPyTorchSemanticsThroughTheOihwTransform) {
  struct Geometry {
    int64_t N, C, H, W, K, R;
    int stride, pad, dil, groups;
  };
  const Geometry geometries[] = {{2, 6, 7, 5, 4, 3, 1, 1, 1, 1}, {1, 8, 9, 9, 8, 3, 2, 1, 1, 8},
                                 {1, 6, 8, 7, 9, 3, 1, 2, 2, 3}, {2, 5, 4, 6, 3, 1, 1, 0, 1, 1},
                                 {1, 4, 9, 9, 4, 7, 1, 3, 1, 4}, {1, 3, 8, 8, 5, 3, 2, 1, 1, 1}};
  const uint64_t seed = test::seed_for("conv2d_torch_semantics");
  uint64_t stream = 0;
  for (const Geometry& g : geometries) {
    SCOPED_TRACE(testing::Message() << "N" << g.N << " C" << g.C << " " << g.H << "x" << g.W << " K" << g.K << " R"
                                    << g.R << " s" << g.stride << " p" << g.pad << " d" << g.dil << " g" << g.groups);
    const Tensor nchw = ops::random_tensor({g.N, g.C, g.H, g.W}, DType::f64, seed, ++stream);
    const Tensor oihw = ops::random_tensor({g.K, g.C / g.groups, g.R, g.R}, DType::f64, seed, ++stream);
    const Tensor bias = ops::random_tensor({g.K}, DType::f64, seed, ++stream);
    // The model loader's two steps: NCHW activations become NHWC, OIHW weights OHWI.
    const Tensor nhwc = filled({g.N, g.H, g.W, g.C}, DType::f32,
                               [&](auto n, auto h, auto w, auto c) { return get(nchw.view(), n, c, h, w); });
    Tensor ohwi = Tensor::empty({g.K, g.R, g.R, g.C / g.groups}, DType::f32);
    ops::conv_weight_from_oihw(oihw, ohwi);
    Tensor bias32 = Tensor::empty({g.K}, DType::f32);
    for (int64_t k = 0; k < g.K; ++k) set(bias32.view(), get(bias.view(), k), k);
    const int64_t P = (g.H + 2 * g.pad - g.dil * (g.R - 1) - 1) / g.stride + 1;
    const int64_t Q = (g.W + 2 * g.pad - g.dil * (g.R - 1) - 1) / g.stride + 1;
    Tensor out = Tensor::empty({g.N, P, Q, g.K}, DType::f64);
    Conv2dArgs a = conv_args(out, nhwc, ohwi, g.stride, g.pad, g.dil, g.groups);
    a.bias = bias32;
    expect_ok(DeviceType::cpu, a);
    // The f32 copies of input, weight and bias are the exact values the reference used: round
    // them the same way here.
    const auto r32 = [](const Tensor& t) {
      Tensor c = t.clone();
      for (int64_t i = 0; i < c.numel(); ++i) c.data_as<double>()[i] = static_cast<float>(c.data_as<double>()[i]);
      return c;
    };
    const Tensor nchw32 = r32(nchw), oihw32 = r32(oihw), b32 = r32(bias);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t k = 0; k < g.K; ++k)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q)
            ASSERT_NEAR(get(out.view(), n, p, q, k),
                        torch_conv_at(nchw32, oihw32, b32, n, k, p, q, g.stride, g.pad, g.dil, g.groups), 1e-12)
                << n << " " << k << " " << p << " " << q;
  }
}

TEST(Conv2d, RoundsOnceToTheDtype) {
  // f16 spaces 2048 and 2050 two apart. 2048 * 1 + 0.75 + 0.75 = 2049.5 rounds to 2050; had
  // the product been rounded first (2048 + 0.75 = 2048.75 -> 2048, then + 0.75 -> 2048), the
  // result would be 2048.
  const Tensor in = filled({1, 1, 1, 3}, DType::f16, [](auto, auto, auto, auto c) { return c == 0 ? 2048.0 : 0.75; });
  const Tensor w = filled({1, 1, 1, 3}, DType::f16, [](auto...) { return 1.0; });
  Tensor out = Tensor::empty({1, 1, 1, 1}, DType::f16);
  expect_ok(DeviceType::cpu, conv_args(out, in, w, 1, 0));
  EXPECT_EQ(get(out.view(), 0, 0, 0, 0), 2050.0);
}

TEST(Conv2d, ChannelSlicesOfOneBufferMatchContiguousTensors) {
  // A C2f bottleneck's conv: reads channels [8, 16) of a [2, 6, 5, 40] buffer and writes
  // channels [16, 28) of the same buffer. Everything outside the written slice is unchanged.
  const uint64_t seed = test::seed_for("conv2d_channel_slices");
  for (DType dt : {DType::f16, DType::bf16, DType::f32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor buffer = ops::random_tensor({2, 6, 5, 40}, dt, seed, 1);
    const Tensor before = buffer.clone();
    const Tensor w = ops::random_tensor({12, 3, 3, 8}, dt, seed, 2, -0.3f, 0.3f);
    const Tensor b = ops::random_tensor({12}, dt, seed, 3);
    Tensor in_contig = filled({2, 6, 5, 8}, dt, [&](auto n, auto h, auto x, auto c) {
      return get(before.view(), n, h, x, 8 + c);
    });
    Tensor out_contig = Tensor::empty({2, 6, 5, 12}, dt);
    Conv2dArgs ref = conv_args(out_contig, in_contig, w, 1, 1);
    ref.bias = b;
    ref.activation = ConvActivation::silu;
    expect_ok(DeviceType::cpu, ref);
    Conv2dArgs sliced = ref;
    sliced.input = channel_slice(buffer, 8, 8);
    sliced.out = channel_slice(buffer, 16, 12);
    expect_ok(DeviceType::cpu, sliced);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 6; ++h)
        for (int64_t x = 0; x < 5; ++x)
          for (int64_t c = 0; c < 40; ++c) {
            const double want = c >= 16 && c < 28 ? get(out_contig.view(), n, h, x, c - 16)
                                                  : get(before.view(), n, h, x, c);
            ASSERT_EQ(get(buffer.view(), n, h, x, c), want) << n << " " << h << " " << x << " " << c;
          }
  }
}

TEST(Conv2dErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  const DType f16 = DType::f16;
  const Tensor in = Tensor::zeros({1, 6, 6, 8}, f16), w = Tensor::zeros({4, 3, 3, 8}, f16);
  const Tensor out = Tensor::zeros({1, 6, 6, 4}, f16);
  expect_ok(cpu, conv_args(out, in, w, 1, 1));
  expect_ok(cpu, conv_args(Tensor::zeros({0, 6, 6, 4}, f16), Tensor::zeros({0, 6, 6, 8}, f16), w, 1, 1));
  expect_invalid(cpu, conv_args(Tensor::zeros({1, 6, 6, 5}, f16), in, w, 1, 1), "out must be [1, 6, 6, 4]");
  expect_invalid(cpu, conv_args(Tensor::zeros({1, 3, 3, 4}, f16), in, w, 1, 1), "out must be [1, 6, 6, 4]");
  expect_invalid(cpu, conv_args(Tensor::zeros({1, 6, 6, 4}, DType::bf16), in, w, 1, 1), "out must be f16");
  expect_invalid(cpu, conv_args(out, in, Tensor::zeros({4, 3, 3, 8}, DType::f32), 1, 1), "weight must be f16");
  expect_invalid(cpu, conv_args(out, in, Tensor::zeros({4, 3, 3, 7}, f16), 1, 1), "weight must be [K, R, S, C / groups]");
  expect_invalid(cpu, conv_args(out, in, Tensor::zeros({4, 3, 3}, f16), 1, 1), "weight must have rank 4");
  expect_invalid(cpu, conv_args(out, in, w, 0, 1), "stride must be >= 1");
  expect_invalid(cpu, conv_args(out, in, w, 1, -1), "padding must be >= 0");
  expect_invalid(cpu, conv_args(out, in, w, 1, 1, 0), "dilation must be >= 1");
  expect_invalid(cpu, conv_args(out, in, w, 1, 1, 1, 3), "groups (3) must be >= 1 and divide the 8 input channels");
  expect_invalid(cpu, conv_args(out, in, Tensor::zeros({6, 3, 3, 2}, f16), 1, 1, 1, 4),
                 "with K a multiple of groups 4");
  expect_invalid(cpu, conv_args(out, Tensor::zeros({1, 6, 6, 8}, DType::i32), w, 1, 1),
                 "input must be one of f16/bf16/f32");
  expect_invalid(cpu, conv_args(out, Tensor::zeros({6, 6, 8}, f16), w, 1, 1), "input must have rank 4");
  expect_invalid(cpu, conv_args(Tensor::zeros({1, 1, 1, 4}, f16), Tensor::zeros({1, 2, 2, 8}, f16), w, 1, 0),
                 "filter (dilation 1x1) does not fit input");
  Conv2dArgs bad_act = conv_args(out, in, w, 1, 1);
  bad_act.activation = static_cast<ConvActivation>(7);
  expect_invalid(cpu, bad_act, "activation must be none (0), silu (1) or relu (2), got 7");
  Conv2dArgs bad_bias = conv_args(out, in, w, 1, 1);
  const Tensor bias5 = Tensor::zeros({5}, f16);
  bad_bias.bias = bias5;
  expect_invalid(cpu, bad_bias, "bias dimension 0 must be 4");
  // Channels not contiguous (an NCHW tensor's strides): named as a layout error.
  TensorView nchw_like = in.view();
  nchw_like.strides[3] = 36, nchw_like.strides[2] = 1, nchw_like.strides[1] = 6, nchw_like.strides[0] = 288;
  expect_invalid(cpu, conv_args(out, nchw_like, w, 1, 1), "input must have contiguous channels (NHWC");
  // An output whose pixels overlap each other, and an output over its input.
  TensorView squeezed = out.view();
  squeezed.strides[2] = 2;
  expect_invalid(cpu, conv_args(squeezed, in, w, 1, 1), "elements would overlap");
  const Tensor square = Tensor::zeros({1, 6, 6, 8}, f16), w88 = Tensor::zeros({8, 3, 3, 8}, f16);
  expect_invalid(cpu, conv_args(square, square, w88, 1, 1), "out must not overlap input");
  // The residual: out's shape and dtype, not overlapping out; a slice of the input's buffer is fine.
  Conv2dArgs with_res = conv_args(out, in, w, 1, 1);
  const Tensor res5 = Tensor::zeros({1, 6, 6, 5}, f16), res_bf16 = Tensor::zeros({1, 6, 6, 4}, DType::bf16);
  with_res.residual = res5;
  expect_invalid(cpu, with_res, "residual must have out's shape [1, 6, 6, 4]");
  with_res.residual = res_bf16;
  expect_invalid(cpu, with_res, "residual must be f16");
  with_res.residual = out;
  expect_invalid(cpu, with_res, "out must not overlap residual");
  // Two overlapping channel slices of one buffer are refused; disjoint ones are fine.
  const Tensor buffer = Tensor::zeros({1, 6, 6, 16}, f16);
  expect_invalid(cpu, conv_args(channel_slice(buffer, 4, 8), channel_slice(buffer, 0, 8), w88, 1, 1),
                 "out must not overlap input");
  expect_ok(cpu, conv_args(channel_slice(buffer, 8, 8), channel_slice(buffer, 0, 8), w88, 1, 1));
  Conv2dArgs bottleneck = conv_args(channel_slice(buffer, 8, 8), channel_slice(buffer, 0, 8), w88, 1, 1);
  bottleneck.residual = channel_slice(buffer, 0, 8);
  expect_ok(cpu, bottleneck);
}

TEST(Conv2dErrors, CudaImplementationRejectsHostTensors) {
  if (!OpRegistry::global().baseline(Conv2dArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  const Tensor in = Tensor::zeros({1, 6, 6, 8}, DType::f16), w = Tensor::zeros({4, 3, 3, 8}, DType::f16);
  expect_invalid(DeviceType::cuda, conv_args(Tensor::zeros({1, 6, 6, 4}, DType::f16), in, w, 1, 1),
                 "input must be on cuda");
}

// ---- load-time weight transforms -------------------------------------------------------------

TEST(ConvWeights, OihwToOhwiPermutes) {
  const Tensor oihw = filled({2, 3, 2, 4}, DType::f32,
                             [](auto k, auto c, auto r, auto s) { return 1000.0 * k + 100.0 * c + 10.0 * r + s; });
  Tensor ohwi = Tensor::empty({2, 2, 4, 3}, DType::f16);
  ops::conv_weight_from_oihw(oihw, ohwi);
  for (int k = 0; k < 2; ++k)
    for (int r = 0; r < 2; ++r)
      for (int s = 0; s < 4; ++s)
        for (int c = 0; c < 3; ++c)
          EXPECT_EQ(get(ohwi.view(), k, r, s, c), 1000.0 * k + 100.0 * c + 10.0 * r + s);
  Tensor wrong = Tensor::empty({2, 3, 2, 4}, DType::f32);
  try {
    ops::conv_weight_from_oihw(oihw, wrong);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv_weight_from_oihw: out must be [2, 2, 4, 3]"), std::string::npos)
        << e.what();
  }
}

struct BatchNorm {
  Tensor gamma, beta, mean, var;
};

BatchNorm random_batch_norm(int64_t K, uint64_t seed) {
  return {ops::random_tensor({K}, DType::f32, seed, 11, 0.5f, 1.5f), ops::random_tensor({K}, DType::f32, seed, 12),
          ops::random_tensor({K}, DType::f32, seed, 13), ops::random_tensor({K}, DType::f32, seed, 14, 0.f, 2.f)};
}

TEST(ConvWeights, FoldedBatchNormEqualsConvThenBatchNorm) {
  const uint64_t seed = test::seed_for("conv2d_fold_batch_norm");
  const int64_t K = 6, C = 4;
  const double eps = 1e-3;  // YOLO's BatchNorm eps
  const Tensor in = ops::random_tensor({2, 5, 5, C}, DType::f32, seed, 1);
  const Tensor w = ops::random_tensor({K, 3, 3, C}, DType::f32, seed, 2);
  BatchNorm bn = random_batch_norm(K, seed);
  set(bn.var.view(), 0.0, 0);  // a dead channel: only eps keeps it finite
  for (bool with_bias : {false, true}) {
    SCOPED_TRACE(with_bias ? "conv bias" : "no conv bias");
    const Tensor b = with_bias ? ops::random_tensor({K}, DType::f32, seed, 3) : Tensor();
    // Conv (f64 output), then BatchNorm on it in double.
    Tensor conv_out = Tensor::empty({2, 5, 5, K}, DType::f64);
    Conv2dArgs plain = conv_args(conv_out, in, w, 1, 1);
    plain.bias = b;
    expect_ok(DeviceType::cpu, plain);
    // Folded weights in f64 (no rounding), one conv with a bias.
    Tensor wf = Tensor::empty({K, 3, 3, C}, DType::f64), bf = Tensor::empty({K}, DType::f64);
    ops::fold_batch_norm(w, b, bn.gamma, bn.beta, bn.mean, bn.var, eps, wf, bf);
    // conv2d wants one dtype: run the folded conv on f64-valued copies through the reference
    // arithmetic, comparing element by element.
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t p = 0; p < 5; ++p)
        for (int64_t q = 0; q < 5; ++q)
          for (int64_t k = 0; k < K; ++k) {
            const double t = get(bn.gamma.view(), k) / std::sqrt(get(bn.var.view(), k) + eps);
            const double want = (get(conv_out.view(), n, p, q, k) - get(bn.mean.view(), k)) * t + get(bn.beta.view(), k);
            double got = get(bf.view(), k);
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t s = 0; s < 3; ++s) {
                const int64_t h = p - 1 + r, x = q - 1 + s;
                if (h < 0 || x < 0 || h >= 5 || x >= 5) continue;
                for (int64_t c = 0; c < C; ++c) got += get(in.view(), n, h, x, c) * get(wf.view(), k, r, s, c);
              }
            ASSERT_NEAR(got, want, 1e-9 * (1 + std::fabs(want))) << n << " " << p << " " << q << " " << k;
          }
  }
}

TEST(ConvWeights, FoldIntoModelDtypeFeedsConv2d) {
  // The loader's path: fold into f16 weights and bias in place, then one conv2d call with
  // SiLU; against Conv -> BatchNorm -> SiLU in double from the same f16 inputs.
  const uint64_t seed = test::seed_for("conv2d_fold_batch_norm_f16");
  const int64_t K = 5, C = 3;
  const double eps = 1e-5;
  const Tensor in = ops::random_tensor({1, 4, 4, C}, DType::f16, seed, 1);
  Tensor w = ops::random_tensor({K, 3, 3, C}, DType::f16, seed, 2);
  const Tensor w_before = w.clone();
  const BatchNorm bn = random_batch_norm(K, seed);
  Tensor bias = Tensor::empty({K}, DType::f16);
  ops::fold_batch_norm(w, Tensor(), bn.gamma, bn.beta, bn.mean, bn.var, eps, w, bias);
  Tensor out = Tensor::empty({1, 4, 4, K}, DType::f64);
  Conv2dArgs a = conv_args(out, in, w, 1, 1);
  a.bias = bias;
  a.activation = ConvActivation::silu;
  expect_ok(DeviceType::cpu, a);
  Tensor raw = Tensor::empty({1, 4, 4, K}, DType::f64);
  expect_ok(DeviceType::cpu, conv_args(raw, in, w_before, 1, 1));
  for (int64_t p = 0; p < 4; ++p)
    for (int64_t q = 0; q < 4; ++q)
      for (int64_t k = 0; k < K; ++k) {
        const double t = get(bn.gamma.view(), k) / std::sqrt(get(bn.var.view(), k) + eps);
        const double want = silu((get(raw.view(), 0, p, q, k) - get(bn.mean.view(), k)) * t + get(bn.beta.view(), k));
        // The folded weights and bias are rounded to f16: a few f16 ulps of the terms.
        EXPECT_NEAR(get(out.view(), 0, p, q, k), want, 2e-2 * (1 + std::fabs(want))) << p << " " << q << " " << k;
      }
}

TEST(ConvWeights, FusedParallelDepthwiseConvsEqualTheirSum) {
  // RepVGGDW: a 7x7 and a 3x3 depthwise conv with biases, "same" padding, outputs added.
  const uint64_t seed = test::seed_for("conv2d_fuse_parallel");
  const int64_t C = 5;
  const Tensor in = ops::random_tensor({2, 9, 8, C}, DType::f32, seed, 1);
  const Tensor w7 = ops::random_tensor({C, 7, 7, 1}, DType::f32, seed, 2), b7 = ops::random_tensor({C}, DType::f32, seed, 3);
  const Tensor w3 = ops::random_tensor({C, 3, 3, 1}, DType::f32, seed, 4), b3 = ops::random_tensor({C}, DType::f32, seed, 5);
  const auto depthwise = [&](const Tensor& w, const Tensor& b, int pad) {
    Tensor out = Tensor::empty({2, 9, 8, C}, DType::f64);
    Conv2dArgs a = conv_args(out, in, w, 1, pad, 1, static_cast<int>(C));
    a.bias = b;
    expect_ok(DeviceType::cpu, a);
    return out;
  };
  const Tensor y7 = depthwise(w7, b7, 3), y3 = depthwise(w3, b3, 1);
  // Fused into f32 (the sums rounded once): the one conv agrees with the two to f32 rounding.
  Tensor wf = Tensor::empty({C, 7, 7, 1}, DType::f32), bf = Tensor::empty({C}, DType::f32);
  ops::fuse_parallel_convs(w7, b7, w3, b3, wf, bf);
  Tensor fused = Tensor::empty({2, 9, 8, C}, DType::f64);
  Conv2dArgs a = conv_args(fused, in, wf, 1, 3, 1, static_cast<int>(C));
  a.bias = bf;
  expect_ok(DeviceType::cpu, a);
  for (int64_t i = 0; i < fused.numel(); ++i)
    ASSERT_NEAR(fused.data_as<double>()[i], y7.data_as<double>()[i] + y3.data_as<double>()[i], 1e-5) << i;
  // The centre 3x3 of the fused filter holds both; the ring only the 7x7's.
  EXPECT_EQ(get(wf.view(), 0, 3, 3, 0), static_cast<float>(get(w7.view(), 0, 3, 3, 0) + get(w3.view(), 0, 1, 1, 0)));
  EXPECT_EQ(get(wf.view(), 0, 0, 6, 0), get(w7.view(), 0, 0, 6, 0));
  // Errors: an even filter, a small filter larger than the large one, a channel mismatch.
  const auto error_of = [&](const TensorView& large, const TensorView& small) -> std::string {
    try {
      Tensor o = Tensor::empty(Shape(large.shape, large.shape + 4), DType::f64);
      ops::fuse_parallel_convs(large, TensorView{}, small, TensorView{}, o, bf);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(Tensor::zeros({C, 4, 4, 1}, DType::f32), w3).find("odd sizes"), std::string::npos);
  EXPECT_NE(error_of(w3, w7).find("small must fit inside large"), std::string::npos);
  EXPECT_NE(error_of(w7, Tensor::zeros({C + 1, 3, 3, 1}, DType::f32)).find("fuse_parallel_convs: small must be [5"),
            std::string::npos);
}

TEST(ConvWeights, FoldBatchNormErrors) {
  const Tensor w = Tensor::zeros({3, 1, 1, 2}, DType::f32), b = Tensor::zeros({3}, DType::f32);
  const Tensor ones = Tensor::empty({3}, DType::f32);
  for (int i = 0; i < 3; ++i) ones.data_as<float>()[i] = 1.f;
  Tensor wo = Tensor::empty({3, 1, 1, 2}, DType::f32), bo = Tensor::empty({3}, DType::f32);
  const auto error_of = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of([&] { ops::fold_batch_norm(w, b, ones, ones, ones, ones, 1e-5, wo, bo); }), "");
  EXPECT_NE(error_of([&] { ops::fold_batch_norm(w, b, ones, ones, ones, Tensor::zeros({3}, DType::f32), 0.0, wo, bo); })
                .find("var[0] + eps must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::fold_batch_norm(w, b, Tensor::zeros({4}, DType::f32), ones, ones, ones, 1e-5, wo, bo); })
                .find("fold_batch_norm: gamma dimension 0 must be 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::fold_batch_norm(w, b, ones, ones, ones, ones, -1.0, wo, bo); })
                .find("eps must be finite and >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ops::fold_batch_norm(w, b, ones, ones, ones, ones, 1e-5, Tensor::empty({3, 2}, DType::f32), bo);
            }).find("weight_out must have the shape of weight"),
            std::string::npos);
}

}  // namespace
}  // namespace fk
