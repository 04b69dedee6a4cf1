// global_avg_pool beyond the generic oracle test (which runs every test workload against the
// f64 oracle): a hand-computed case, random shapes in every dtype against a double sum
// computed here, a channel-slice input view (free pixel strides), a strided out, the
// definition's workloads, and errors that name the wrong field.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::GlobalAvgPoolArgs;
using test::expect_invalid;
using test::expect_ok;

// The mean of each (image, channel) over a host view's pixels, in double.
Tensor mean_by_hand(const TensorView& in) {
  Tensor out = Tensor::empty({in.shape[0], in.shape[3]}, DType::f64);
  for (int64_t n = 0; n < in.shape[0]; ++n)
    for (int64_t c = 0; c < in.shape[3]; ++c) {
      double s = 0;
      for (int64_t h = 0; h < in.shape[1]; ++h)
        for (int64_t w = 0; w < in.shape[2]; ++w) s += get(in, n, h, w, c);
      set(out.view(), s / static_cast<double>(in.shape[1] * in.shape[2]), n, c);
    }
  return out;
}

TEST(GlobalAvgPool, HandComputedSmallCase) {
  // input[0, h, w, c] = 10 h + w + 100 c over 2 x 3 pixels: mean 10 * 0.5 + 1 + 100 c.
  Tensor in = Tensor::empty({1, 2, 3, 2}, DType::f32);
  for (int h = 0; h < 2; ++h)
    for (int w = 0; w < 3; ++w)
      for (int c = 0; c < 2; ++c) set(in.view(), 10.0 * h + w + 100.0 * c, 0, h, w, c);
  Tensor out = Tensor::empty({1, 2}, DType::f32);
  expect_ok(DeviceType::cpu, GlobalAvgPoolArgs{out, in});
  EXPECT_EQ(out.data_as<float>()[0], 6.f);
  EXPECT_EQ(out.data_as<float>()[1], 106.f);
}

TEST(GlobalAvgPool, RandomShapesEveryDtypeMatchDoubleMean) {
  std::mt19937 rng(static_cast<uint32_t>(test::seed_for("global_avg_pool_random")));
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int trial = 0; trial < 6; ++trial) {
      const int64_t N = 1 + rng() % 3, H = 1 + rng() % 9, W = 1 + rng() % 9, C = 1 + rng() % 70;
      const Tensor in = ops::random_tensor({N, H, W, C}, dt, rng(), 1, -3.f, 3.f);
      Tensor out = Tensor::empty({N, C}, dt);
      expect_ok(DeviceType::cpu, GlobalAvgPoolArgs{out, in});
      const Tensor want = mean_by_hand(in.view());
      // One rounding of the exact mean to the dtype.
      const Tolerance tol = default_tolerance(dt);
      test::expect_views_near(out.view(), want.view(), tol,
                              std::string(dtype_name(dt)) + " " + std::to_string(N) + "x" + std::to_string(H) + "x" +
                                  std::to_string(W) + "x" + std::to_string(C));
    }
}

TEST(GlobalAvgPool, ReadsAChannelSliceAndWritesAStridedOut) {
  // Channels 3..8 of a 12-channel buffer, and out rows 16 apart.
  const Tensor wide = ops::random_tensor({2, 4, 5, 12}, DType::bf16, test::seed_for("gap_slice"), 1, -1.f, 1.f);
  TensorView in = wide.view();
  in.data = in.element_ptr(3);
  in.shape[3] = 5;
  Tensor out_buf = Tensor::empty({2, 16}, DType::bf16);
  TensorView out = out_buf.view();
  out.shape[1] = 5;
  expect_ok(DeviceType::cpu, GlobalAvgPoolArgs{out, in});
  test::expect_views_near(out, mean_by_hand(in).view(), default_tolerance(DType::bf16), "slice");
}

TEST(GlobalAvgPool, DefinitionWorkloadsAndCost) {
  const OpDef& def = OpRegistry::global().def(GlobalAvgPoolArgs::kName);
  EXPECT_EQ(def.family, "conv");
  EXPECT_EQ(def.level, "L1");
  // MobileNetV4-conv-small's head: 7x7x960 at batch 1 and 256.
  int head = 0;
  for (const Json& w : def.bench_workloads)
    head += ops::wl_int(w, "height") == 7 && ops::wl_int(w, "width") == 7 && ops::wl_int(w, "channels") == 960;
  EXPECT_EQ(head, 2);
  const Json w = {{"batch", 2}, {"height", 3}, {"width", 5}, {"channels", 7}, {"dtype", "f16"}};
  const OpCase c = def.make_case(w, test::seed_for("gap_def"));
  const auto& a = c.as<GlobalAvgPoolArgs>();
  EXPECT_EQ(a.out.shape[0], 2);
  EXPECT_EQ(a.out.shape[1], 7);
  EXPECT_EQ(def.cost(c).bytes, 2.0 * (2 * 3 * 5 * 7 + 2 * 7));
  EXPECT_EQ(def.workload_from_call(c.args_ptr()), w);
  try {
    def.make_case(Json{{"height", 3}, {"width", 5}}, 1);
    ADD_FAILURE() << "a workload without channels was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
  }
}

TEST(GlobalAvgPool, NamedErrors) {
  const Tensor in = Tensor::empty({2, 3, 3, 4}, DType::f16);
  Tensor out = Tensor::empty({2, 4}, DType::f16);
  const Tensor rank3 = Tensor::empty({2, 3, 4}, DType::f16);
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{out, rank3}, "input must have rank 4");
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{rank3, in}, "out must have rank 2");
  const Tensor wrong_c = Tensor::empty({2, 5}, DType::f16), wrong_n = Tensor::empty({1, 4}, DType::f16);
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{wrong_c, in}, "out must be [2, 4]");
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{wrong_n, in}, "out must be [2, 4]");
  const Tensor bf = Tensor::empty({2, 4}, DType::bf16);
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{bf, in}, "out must be f16");
  const Tensor ints = Tensor::empty({2, 3, 3, 4}, DType::i32);
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{out, ints}, "input must be one of");
  const Tensor no_pixels = Tensor::empty({2, 0, 3, 4}, DType::f16);
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{out, no_pixels}, "at least one pixel");
  TensorView on_gpu = in.view();
  on_gpu.device = Device::cuda();
  expect_invalid(DeviceType::cpu, GlobalAvgPoolArgs{out, on_gpu}, "input must be on cpu");
}

}  // namespace
}  // namespace fk
