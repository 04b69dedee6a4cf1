// Norm ops beyond the generic oracle test: in-place semantics of the fused residual add,
// the rounding the oracle mirrors, Gemma's 1 + w, layer_norm without bias, row-strided
// views, and clear errors for bad arguments (CPU implementations; the CUDA ones where
// their validation runs before any device work).
#include <gtest/gtest.h>

#include <cmath>

#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"

namespace fk {
namespace {

using ops::FusedAddRmsNormArgs;
using ops::GemmaFusedAddRmsNormArgs;
using ops::GemmaRmsNormArgs;
using ops::LayerNormArgs;
using ops::RmsNormArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32_tensor(const Shape& shape, std::initializer_list<float> values) {
  Tensor t = Tensor::empty(shape, DType::f32);
  size_t i = 0;
  for (float v : values) t.data_as<float>()[i++] = v;
  return t;
}

TEST(FusedAddRmsNorm, UpdatesInputAndResidualInPlace) {
  Tensor input = f32_tensor({2, 4}, {1, 2, 3, 4, 0.5f, 0.5f, 0.5f, 0.5f});
  Tensor residual = f32_tensor({2, 4}, {1, 0, -1, 0, -0.5f, 1.5f, 0.5f, 2.5f});
  Tensor weight = f32_tensor({4}, {1, 2, 0.5f, 1});
  FusedAddRmsNormArgs a{input, residual, weight, 1e-6f};
  expect_ok(DeviceType::cpu, a);
  // residual = input + residual; input = residual / rms(residual) * weight.
  const float r0[4] = {2, 2, 2, 4}, r1[4] = {0, 2, 1, 3}, w[4] = {1, 2, 0.5f, 1};
  const float inv0 = 1.f / std::sqrt((4 + 4 + 4 + 16) / 4.f + 1e-6f), inv1 = 1.f / std::sqrt((0 + 4 + 1 + 9) / 4.f + 1e-6f);
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(residual.data_as<float>()[h], r0[h]);
    EXPECT_EQ(residual.data_as<float>()[4 + h], r1[h]);
    EXPECT_NEAR(input.data_as<float>()[h], r0[h] * inv0 * w[h], 1e-6);
    EXPECT_NEAR(input.data_as<float>()[4 + h], r1[h] * inv1 * w[h], 1e-6);
  }
}

// The oracle gets f64 copies of input and residual but must still round the residual sum
// to the model dtype (the weight's) before normalising, as every implementation does.
TEST(FusedAddRmsNorm, OracleNormalisesTheResidualRoundedToTheModelDtype) {
  const double tiny = std::ldexp(1.0, -9);  // 1 + 2^-9 is not a bf16: rounds to 1
  Tensor input = Tensor::empty({1, 2}, DType::f64), residual = Tensor::empty({1, 2}, DType::f64);
  input.data_as<double>()[0] = 1.0, input.data_as<double>()[1] = -3.0;
  residual.data_as<double>()[0] = tiny, residual.data_as<double>()[1] = 0.0;
  Tensor weight = Tensor::empty({2}, DType::bf16);
  set(weight.view(), 1.0, 0), set(weight.view(), 1.0, 1);
  FusedAddRmsNormArgs a{input, residual, weight, 1e-6f};
  expect_ok(DeviceType::cpu, a);
  EXPECT_EQ(residual.data_as<double>()[0], 1.0) << "the residual sum must be rounded to bf16";
  EXPECT_EQ(residual.data_as<double>()[1], -3.0);
  const double inv = 1.0 / std::sqrt((1.0 + 9.0) / 2.0 + static_cast<double>(1e-6f));
  EXPECT_DOUBLE_EQ(input.data_as<double>()[0], 1.0 * inv);
  EXPECT_DOUBLE_EQ(input.data_as<double>()[1], -3.0 * inv);
}

TEST(FusedAddRmsNorm, Bf16ResidualIsStoredRounded) {
  const float tiny = std::ldexp(1.f, -9);
  Tensor input = Tensor::empty({1, 1}, DType::bf16), residual = Tensor::empty({1, 1}, DType::bf16);
  Tensor weight = Tensor::empty({1}, DType::bf16);
  set(input.view(), 1.0, 0, 0), set(residual.view(), tiny, 0, 0), set(weight.view(), 1.0, 0);
  FusedAddRmsNormArgs a{input, residual, weight, 1e-6f};
  expect_ok(DeviceType::cpu, a);
  EXPECT_EQ(get(residual.view(), 0, 0), 1.0);
  EXPECT_NEAR(get(input.view(), 0, 0), 1.0, 1e-2);
}

template <class Gemma, class Plain>
void expect_gemma_is_one_plus_weight(bool fused) {
  const int64_t T = 3, H = 40;
  Tensor x = ops::random_tensor({T, H}, DType::f32, 11, 1, -2.f, 2.f);
  Tensor r = ops::random_tensor({T, H}, DType::f32, 11, 2, -2.f, 2.f);
  Tensor w = ops::random_tensor({H}, DType::f32, 11, 3, -0.5f, 0.5f);
  Tensor w1 = w.clone();
  for (int64_t h = 0; h < H; ++h) w1.data_as<float>()[h] += 1.f;  // exact: |w| < 1/2
  Tensor x1 = x.clone(), r1 = r.clone(), out = Tensor::empty({T, H}, DType::f32), out1 = out.clone();
  if (fused) {
    expect_ok(DeviceType::cpu, Gemma{x, r, w, 1e-6f});
    expect_ok(DeviceType::cpu, Plain{x1, r1, w1, 1e-6f});
    test::expect_views_near(x.view(), x1.view(), {1e-6, 1e-6}, "gemma vs 1+w (input)");
    test::expect_views_near(r.view(), r1.view(), {0, 0}, "gemma vs 1+w (residual)");
  } else {
    expect_ok(DeviceType::cpu, Gemma{out, x, w, 1e-6f});
    expect_ok(DeviceType::cpu, Plain{out1, x, w1, 1e-6f});
    test::expect_views_near(out.view(), out1.view(), {1e-6, 1e-6}, "gemma vs 1+w");
  }
}

TEST(GemmaRmsNorm, ScalesByOnePlusWeight) { expect_gemma_is_one_plus_weight<GemmaRmsNormArgs, RmsNormArgs>(false); }
TEST(GemmaFusedAddRmsNorm, ScalesByOnePlusWeight) {
  expect_gemma_is_one_plus_weight<GemmaFusedAddRmsNormArgs, FusedAddRmsNormArgs>(true);
}

TEST(LayerNorm, NullBiasMeansNoBias) {
  const int64_t T = 4, H = 33;
  Tensor x = ops::random_tensor({T, H}, DType::f32, 5, 1, -1.f, 3.f);
  Tensor w = Tensor::empty({H}, DType::f32), zero_bias = Tensor::zeros({H}, DType::f32);
  for (int64_t h = 0; h < H; ++h) w.data_as<float>()[h] = 1.f;
  Tensor out = Tensor::empty({T, H}, DType::f32), out_zero = out.clone();
  LayerNormArgs no_bias{out, x, w, TensorView{}, 1e-5f};
  ASSERT_EQ(no_bias.bias.data, nullptr);
  expect_ok(DeviceType::cpu, no_bias);
  expect_ok(DeviceType::cpu, LayerNormArgs{out_zero, x, w, zero_bias, 1e-5f});
  test::expect_views_near(out.view(), out_zero.view(), {0, 0}, "no bias vs zero bias");
  // With unit weight and no bias each row has mean 0 and variance ~1.
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0, sum_sq = 0;
    for (int64_t h = 0; h < H; ++h) sum += get(out.view(), t, h), sum_sq += get(out.view(), t, h) * get(out.view(), t, h);
    EXPECT_NEAR(sum / H, 0.0, 1e-5);
    EXPECT_NEAR(sum_sq / H, 1.0, 1e-3);
  }
}

TEST(LayerNorm, BiasIsAdded) {
  const int64_t T = 2, H = 16;
  Tensor x = ops::random_tensor({T, H}, DType::f32, 6, 1, -1.f, 1.f);
  Tensor w = ops::random_tensor({H}, DType::f32, 6, 2, 0.5f, 1.5f);
  Tensor b = ops::random_tensor({H}, DType::f32, 6, 3, -1.f, 1.f);
  Tensor out = Tensor::empty({T, H}, DType::f32), out_nb = out.clone();
  expect_ok(DeviceType::cpu, LayerNormArgs{out, x, w, b, 1e-5f});
  expect_ok(DeviceType::cpu, LayerNormArgs{out_nb, x, w, TensorView{}, 1e-5f});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      EXPECT_NEAR(get(out.view(), t, h) - get(out_nb.view(), t, h), get(b.view(), h), 1e-6);
}

// Row-strided (and offset) views give exactly what contiguous tensors of the same values give.
TEST(NormRowStrides, StridedViewsMatchContiguous) {
  const int64_t T = 5, H = 24;
  for (DType dt : {DType::bf16, DType::f32}) {
    auto in = test::make_strided(T, H, H + 5, 3, dt, 9, 1, -2.f, 2.f);
    auto res = test::make_strided(T, H, H + 16, 1, dt, 9, 2, -2.f, 2.f);
    auto out = test::make_strided(T, H, 2 * H, 0, dt, 9, 3, 0.f, 1.f);
    Tensor w = ops::random_tensor({H}, dt, 9, 4, 0.5f, 1.5f);
    Tensor in_c = test::contiguous_copy(in.view), res_c = test::contiguous_copy(res.view);
    Tensor out_c = Tensor::empty({T, H}, dt);

    expect_ok(DeviceType::cpu, RmsNormArgs{out.view, in.view, w, 1e-6f});
    expect_ok(DeviceType::cpu, RmsNormArgs{out_c, in_c, w, 1e-6f});
    test::expect_views_near(out.view, out_c.view(), {0, 0}, "rms_norm strided");

    expect_ok(DeviceType::cpu, LayerNormArgs{out.view, in.view, w, w, 1e-5f});
    expect_ok(DeviceType::cpu, LayerNormArgs{out_c, in_c, w, w, 1e-5f});
    test::expect_views_near(out.view, out_c.view(), {0, 0}, "layer_norm strided");

    expect_ok(DeviceType::cpu, FusedAddRmsNormArgs{in.view, res.view, w, 1e-6f});
    expect_ok(DeviceType::cpu, FusedAddRmsNormArgs{in_c, res_c, w, 1e-6f});
    test::expect_views_near(in.view, in_c.view(), {0, 0}, "fused_add_rms_norm strided input");
    test::expect_views_near(res.view, res_c.view(), {0, 0}, "fused_add_rms_norm strided residual");
  }
}

TEST(NormErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  Tensor x = Tensor::zeros({4, 8}, DType::bf16), out = Tensor::zeros({4, 8}, DType::bf16);
  Tensor w = Tensor::zeros({8}, DType::bf16);
  expect_ok(cpu, RmsNormArgs{out, x, w, 1e-6f});

  expect_invalid(cpu, RmsNormArgs{Tensor::zeros({4, 8}, DType::f16), x, w, 1e-6f}, "out must be bf16");
  expect_invalid(cpu, RmsNormArgs{out, x, Tensor::zeros({7}, DType::bf16), 1e-6f}, "weight dimension 0 must be 8");
  expect_invalid(cpu, RmsNormArgs{out, x, Tensor::zeros({8}, DType::f32), 1e-6f}, "weight must be bf16");
  expect_invalid(cpu, RmsNormArgs{out, Tensor::zeros({2, 2, 8}, DType::bf16), w, 1e-6f}, "input must have rank 2");
  expect_invalid(cpu, RmsNormArgs{Tensor::zeros({4, 8}, DType::i32), Tensor::zeros({4, 8}, DType::i32),
                                  Tensor::zeros({8}, DType::i32), 1e-6f},
                 "input must be one of f32/f16/bf16");
  expect_invalid(cpu, RmsNormArgs{out, x, w, 0.f}, "eps must be positive");
  expect_invalid(cpu, RmsNormArgs{Tensor::zeros({3, 8}, DType::bf16), x, w, 1e-6f}, "out must have the shape of input");
  expect_invalid(cpu, GemmaRmsNormArgs{out, x, x, 1e-6f}, "weight must have rank 1");

  TensorView strided_cols = x.view();
  strided_cols.shape[1] = 4, strided_cols.strides[1] = 2;
  expect_invalid(cpu, RmsNormArgs{out, strided_cols, w, 1e-6f}, "contiguous last dimension");
  TensorView overlapping_rows = x.view();
  overlapping_rows.strides[0] = 4;
  expect_invalid(cpu, RmsNormArgs{out, overlapping_rows, w, 1e-6f}, "rows must not overlap");
  expect_invalid(cpu, RmsNormArgs{x, x, w, 1e-6f}, "out must not overlap input");
  TensorView on_gpu = x.view();
  on_gpu.device = Device::cuda();
  expect_invalid(cpu, RmsNormArgs{out, on_gpu, w, 1e-6f}, "input must be on cpu");

  Tensor r = Tensor::zeros({4, 8}, DType::bf16);
  expect_ok(cpu, FusedAddRmsNormArgs{x, r, w, 1e-6f});
  expect_invalid(cpu, FusedAddRmsNormArgs{x, x, w, 1e-6f}, "input must not overlap residual");
  expect_invalid(cpu, FusedAddRmsNormArgs{x, Tensor::zeros({4, 9}, DType::bf16), w, 1e-6f},
                 "residual must have the shape of input");
  expect_invalid(cpu, GemmaFusedAddRmsNormArgs{x, Tensor::zeros({4, 8}, DType::f16), w, 1e-6f},
                 "residual must be bf16");
  expect_invalid(cpu, FusedAddRmsNormArgs{x, r, Tensor::zeros({8}, DType::f64), 1e-6f}, "weight must be one of");

  expect_ok(cpu, LayerNormArgs{out, x, w, TensorView{}, 1e-5f});
  expect_invalid(cpu, LayerNormArgs{out, x, w, Tensor::zeros({8}, DType::f32), 1e-5f}, "bias must be bf16");
  expect_invalid(cpu, LayerNormArgs{out, x, w, Tensor::zeros({9}, DType::bf16), 1e-5f}, "bias dimension 0 must be 8");
  expect_invalid(cpu, LayerNormArgs{out, x, w, TensorView{}, -1.f}, "eps must be positive");
}

// The CUDA implementations validate on the host before touching the device, so these run
// (in CUDA builds) without a GPU.
TEST(NormErrors, CudaImplementationRejectsHostTensorsAndF64) {
  if (!OpRegistry::global().baseline(RmsNormArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor x = Tensor::zeros({4, 8}, DType::bf16), out = Tensor::zeros({4, 8}, DType::bf16);
  Tensor w = Tensor::zeros({8}, DType::bf16);
  expect_invalid(DeviceType::cuda, RmsNormArgs{out, x, w, 1e-6f}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, FusedAddRmsNormArgs{x, out, w, 1e-6f}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, GemmaRmsNormArgs{out, x, w, 1e-6f}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, GemmaFusedAddRmsNormArgs{x, out, w, 1e-6f}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, LayerNormArgs{out, x, w, TensorView{}, 1e-5f}, "input must be on cuda");
  TensorView xd = x.view(), od = out.view(), wd = w.view();
  xd.device = od.device = wd.device = Device::cuda();
  TensorView od64 = od;
  od64.dtype = DType::f64;
  expect_invalid(DeviceType::cuda, RmsNormArgs{od64, xd, wd, 1e-6f}, "out must be bf16");
}

// The helpers the GPU tests rely on, exercised with the CPU implementation so that their
// own logic (row sampling, oracle on a subset, views with padding) is tested everywhere.
TEST(NormTestSupport, SampledRowCheckAndStridedCompareWorkOnCpu) {
  for (const char* op : {"rms_norm", "fused_add_rms_norm", "layer_norm"}) {
    const OpDef& def = OpRegistry::global().def(op);
    OpCase c = def.make_case({{"tokens", 300}, {"hidden", 64}, {"bias", false}}, 17);
    std::vector<bool> row_tensor;
    for (const TensorArg& a : def.tensor_args) row_tensor.push_back(a.name != "weight" && a.name != "bias");
    const auto rows = test::sample_rows(300);
    ASSERT_GE(rows.size(), 20u);
    EXPECT_EQ(rows.front(), 0);
    EXPECT_EQ(rows.back(), 299);
    test::check_sampled_rows(def, c, row_tensor, rows, DeviceType::cpu);
  }
  auto a = test::make_strided(3, 5, 8, 2, DType::bf16, 1, 1, -1.f, 1.f);
  auto b = test::strided_to(a, Device::cpu());
  Tensor w = Tensor::empty({5}, DType::bf16);
  for (int h = 0; h < 5; ++h) set(w.view(), 1.0, h);
  auto in = test::make_strided(3, 5, 5, 0, DType::bf16, 1, 2, -1.f, 1.f);
  expect_ok(DeviceType::cpu, RmsNormArgs{a.view, in.view, w, 1e-6f});
  expect_ok(DeviceType::cpu, RmsNormArgs{b.view, in.view, w, 1e-6f});
  test::expect_strided_near(b, a, {0, 0}, "identical runs");
}

}  // namespace
}  // namespace fk
