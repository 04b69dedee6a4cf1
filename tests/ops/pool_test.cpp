// max_pool2d, upsample_nearest2d and concat_channels beyond the generic oracle test:
// hand-computed values (padding never wins a max, NaN propagates, SPPF's chained 5x5 pools
// equal the 9x9 and 13x13 pools of the original SPP), nearest upsampling's pixel map, the
// concatenation's channel order and channel-slice views, and clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/conv_test_util.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::ConcatChannelsArgs;
using ops::MaxPool2dArgs;
using ops::UpsampleNearest2dArgs;
using test::expect_invalid;
using test::expect_ok;

constexpr auto filled = test::filled4;

MaxPool2dArgs pool_args(const TensorView& out, const TensorView& in, int k, int s, int p) {
  MaxPool2dArgs a;
  a.out = out;
  a.input = in;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  return a;
}

TEST(MaxPool2d, PaddingNeverWins) {
  // All values negative: a zero-padded max would return 0 at the borders; torch's (and this
  // op's) padding is -inf. in[h, w] = -(1 + 4h + w): the max of a window is its top-left tap.
  const Tensor in = filled({1, 4, 4, 1}, DType::f32, [](auto, auto h, auto w, auto) { return -(1.0 + 4 * h + w); });
  Tensor out = Tensor::empty({1, 4, 4, 1}, DType::f32);
  expect_ok(DeviceType::cpu, pool_args(out, in, 5, 1, 2));
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 4; ++w) {
      const int h0 = std::max(0, h - 2), w0 = std::max(0, w - 2);
      EXPECT_EQ(get(out.view(), 0, h, w, 0), -(1.0 + 4 * h0 + w0)) << h << "," << w;
    }
}

TEST(MaxPool2d, StrideAndChannelsKeptApart) {
  // 2x2 stride 2 on two channels whose maxima sit in different corners.
  const Tensor in = filled({1, 4, 4, 2}, DType::f32, [](auto, auto h, auto w, auto c) {
    return c == 0 ? 10.0 * h + w : -(10.0 * h + w);
  });
  Tensor out = Tensor::empty({1, 2, 2, 2}, DType::f32);
  expect_ok(DeviceType::cpu, pool_args(out, in, 2, 2, 0));
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 2; ++q) {
      EXPECT_EQ(get(out.view(), 0, p, q, 0), 10.0 * (2 * p + 1) + (2 * q + 1));
      EXPECT_EQ(get(out.view(), 0, p, q, 1), -(10.0 * (2 * p) + 2 * q));
    }
}

TEST(MaxPool2d, NanPropagatesToEveryWindowHoldingIt) {
  Tensor in = filled({1, 5, 5, 1}, DType::f32, [](auto, auto h, auto w, auto) { return h + w; });
  set(in.view(), std::numeric_limits<double>::quiet_NaN(), 0, 0, 0, 0);
  Tensor out = Tensor::empty({1, 5, 5, 1}, DType::f32);
  expect_ok(DeviceType::cpu, pool_args(out, in, 3, 1, 1));
  for (int h = 0; h < 5; ++h)
    for (int w = 0; w < 5; ++w)
      EXPECT_EQ(std::isnan(get(out.view(), 0, h, w, 0)), h <= 1 && w <= 1) << h << "," << w;
}

TEST(MaxPool2d, SppfChainEqualsWiderPools) {
  // SPPF's rewrite of SPP: pool5(x) = pool5, pool5(pool5(x)) = pool9, and three = pool13,
  // all stride 1 with "same" padding. Torch's padding rule caps pad at kernel / 2, which
  // these satisfy.
  const uint64_t seed = test::seed_for("max_pool2d_sppf");
  const Tensor x = ops::random_tensor({2, 9, 8, 6}, DType::bf16, seed, 1, -4.f, 4.f);
  Tensor y1 = Tensor::empty({2, 9, 8, 6}, DType::bf16), y2 = y1.clone(), y3 = y1.clone();
  expect_ok(DeviceType::cpu, pool_args(y1, x, 5, 1, 2));
  expect_ok(DeviceType::cpu, pool_args(y2, y1, 5, 1, 2));
  expect_ok(DeviceType::cpu, pool_args(y3, y2, 5, 1, 2));
  Tensor p9 = y1.clone(), p13 = y1.clone();
  expect_ok(DeviceType::cpu, pool_args(p9, x, 9, 1, 4));
  expect_ok(DeviceType::cpu, pool_args(p13, x, 13, 1, 6));
  test::expect_tensors_near(y2, p9, {0, 0}, "pool5 twice = pool9");
  test::expect_tensors_near(y3, p13, {0, 0}, "pool5 three times = pool13");
}

TEST(MaxPool2dErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  const Tensor in = Tensor::zeros({1, 6, 6, 4}, DType::f16), out = Tensor::zeros({1, 6, 6, 4}, DType::f16);
  expect_ok(cpu, pool_args(out, in, 5, 1, 2));
  expect_invalid(cpu, pool_args(out, in, 5, 1, 3), "padding must be in [0, kernel / 2]");
  expect_invalid(cpu, pool_args(out, in, 0, 1, 0), "kernel must be >= 1");
  expect_invalid(cpu, pool_args(out, in, 5, 0, 2), "stride must be >= 1");
  expect_invalid(cpu, pool_args(out, in, 5, 2, 2), "out must be [1, 3, 3, 4]");
  expect_invalid(cpu, pool_args(Tensor::zeros({1, 6, 6, 4}, DType::bf16), in, 5, 1, 2), "out must be f16");
  expect_invalid(cpu, pool_args(Tensor::zeros({1, 1, 1, 4}, DType::f16), Tensor::zeros({1, 3, 3, 4}, DType::f16), 5,
                                1, 0),
                 "window does not fit input");
  expect_invalid(cpu, pool_args(in, in, 5, 1, 2), "out must not overlap input");
}

// ---- upsample_nearest2d ---------------------------------------------------------------------

TEST(UpsampleNearest2d, EachPixelBecomesABlock) {
  const Tensor in = filled({2, 2, 3, 2}, DType::f32, [](auto n, auto h, auto w, auto c) {
    return 1000.0 * n + 100.0 * h + 10.0 * w + c;
  });
  Tensor out = Tensor::empty({2, 4, 6, 2}, DType::f32);
  expect_ok(DeviceType::cpu, UpsampleNearest2dArgs{out, in, 2, 2});
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 6; ++x)
        for (int c = 0; c < 2; ++c)
          EXPECT_EQ(get(out.view(), n, y, x, c), 1000.0 * n + 100.0 * (y / 2) + 10.0 * (x / 2) + c);
  // Different factors per axis.
  Tensor wide = Tensor::empty({2, 2, 9, 2}, DType::f32);
  expect_ok(DeviceType::cpu, UpsampleNearest2dArgs{wide, in, 1, 3});
  EXPECT_EQ(get(wide.view(), 1, 1, 8, 1), 1000.0 + 100.0 + 20.0 + 1);
}

TEST(UpsampleNearest2dErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  const Tensor in = Tensor::zeros({1, 3, 3, 4}, DType::f16);
  expect_ok(cpu, UpsampleNearest2dArgs{Tensor::zeros({1, 6, 6, 4}, DType::f16), in, 2, 2});
  expect_invalid(cpu, UpsampleNearest2dArgs{Tensor::zeros({1, 6, 6, 4}, DType::f16), in, 0, 2}, "scale must be >= 1");
  expect_invalid(cpu, UpsampleNearest2dArgs{Tensor::zeros({1, 6, 5, 4}, DType::f16), in, 2, 2},
                 "out must be [1, 6, 6, 4]");
  expect_invalid(cpu, UpsampleNearest2dArgs{Tensor::zeros({1, 6, 6, 4}, DType::f32), in, 2, 2}, "out must be f16");
  expect_invalid(cpu, UpsampleNearest2dArgs{in, in, 1, 1}, "out must not overlap input");
}

// ---- concat_channels --------------------------------------------------------------------------

ConcatChannelsArgs concat_args(const TensorView& out, std::initializer_list<TensorView> inputs) {
  ConcatChannelsArgs a;
  a.out = out;
  for (const TensorView& v : inputs) a.inputs[a.num_inputs++] = v;
  return a;
}

TEST(ConcatChannels, InputsInOrderAlongChannels) {
  const Tensor a = filled({2, 2, 3, 2}, DType::bf16, [](auto n, auto h, auto w, auto c) { return 100 * n + 10 * h + w + 0.25 * c; });
  const Tensor b = filled({2, 2, 3, 3}, DType::bf16, [](auto, auto, auto, auto c) { return -1.0 - c; });
  const Tensor c = filled({2, 2, 3, 1}, DType::bf16, [](auto...) { return 7.0; });
  Tensor out = Tensor::empty({2, 2, 3, 6}, DType::bf16);
  expect_ok(DeviceType::cpu, concat_args(out, {a, b, c}));
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w) {
        EXPECT_EQ(get(out.view(), n, h, w, 0), get(a.view(), n, h, w, 0));
        EXPECT_EQ(get(out.view(), n, h, w, 1), get(a.view(), n, h, w, 1));
        for (int k = 0; k < 3; ++k) EXPECT_EQ(get(out.view(), n, h, w, 2 + k), -1.0 - k);
        EXPECT_EQ(get(out.view(), n, h, w, 5), 7.0);
      }
}

TEST(ConcatChannels, ChannelSliceInputsAndOutput) {
  // The inputs are channel slices of one buffer and the output a slice of another: only the
  // output's slice changes.
  const uint64_t seed = test::seed_for("concat_channels_slices");
  const Tensor src = ops::random_tensor({1, 3, 4, 20}, DType::f16, seed, 1);
  Tensor dst = ops::random_tensor({1, 3, 4, 16}, DType::f16, seed, 2);
  const Tensor dst_before = dst.clone();
  TensorView in0 = src.view(), in1 = src.view(), out = dst.view();
  in0.data = src.view().element_ptr(12), in0.shape[3] = 8;  // channels [12, 20)
  in1.data = src.view().element_ptr(0), in1.shape[3] = 3;   // channels [0, 3)
  out.data = dst.view().element_ptr(4), out.shape[3] = 11;  // channels [4, 15)
  expect_ok(DeviceType::cpu, concat_args(out, {in0, in1}));
  for (int h = 0; h < 3; ++h)
    for (int w = 0; w < 4; ++w)
      for (int c = 0; c < 16; ++c) {
        const double want = c < 4 || c >= 15 ? get(dst_before.view(), 0, h, w, c)
                            : c < 12         ? get(src.view(), 0, h, w, 12 + (c - 4))
                                             : get(src.view(), 0, h, w, c - 12);
        ASSERT_EQ(get(dst.view(), 0, h, w, c), want) << h << " " << w << " " << c;
      }
}

TEST(ConcatChannelsErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  const Tensor a = Tensor::zeros({1, 3, 3, 4}, DType::f16), b = Tensor::zeros({1, 3, 3, 2}, DType::f16);
  const Tensor out = Tensor::zeros({1, 3, 3, 6}, DType::f16);
  expect_ok(cpu, concat_args(out, {a, b}));
  expect_invalid(cpu, concat_args(out, {}), "num_inputs must be in [1, 4], got 0");
  expect_invalid(cpu, concat_args(Tensor::zeros({1, 3, 3, 5}, DType::f16), {a, b}), "out must be [1, 3, 3, 6]");
  expect_invalid(cpu, concat_args(out, {a, Tensor::zeros({1, 3, 3, 2}, DType::bf16)}), "inputs[1] must be f16");
  expect_invalid(cpu, concat_args(out, {a, Tensor::zeros({1, 3, 2, 2}, DType::f16)}),
                 "inputs[1] must have the images and pixels of inputs[0]");
  TensorView overlapping = out.view();
  overlapping.shape[3] = 2;
  expect_invalid(cpu, concat_args(out, {a, overlapping}), "out must not overlap inputs[1]");
}

}  // namespace
}  // namespace fk
