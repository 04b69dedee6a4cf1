// Activation ops beyond the generic oracle test: known values, which half of the gated
// input is which, in-place soft-capping, row-strided views, and clear errors for bad
// arguments (CPU implementations; the CUDA ones where their validation runs first).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fk/ops/activation.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"

namespace fk {
namespace {

using ops::GeluAndMulArgs;
using ops::GeluApprox;
using ops::GeluArgs;
using ops::LogitSoftcapArgs;
using ops::Relu2Args;
using ops::SiluAndMulArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32_row(std::initializer_list<float> values) {
  Tensor t = Tensor::empty({1, static_cast<int64_t>(values.size())}, DType::f32);
  size_t i = 0;
  for (float v : values) t.data_as<float>()[i++] = v;
  return t;
}
float at(const Tensor& t, int64_t j) { return t.data_as<float>()[j]; }

TEST(SiluAndMul, GateIsTheFirstHalfUpTheSecond) {
  Tensor in = f32_row({0.f, 1.f, -2.f, 3.f, /* up: */ 5.f, 2.f, -1.f, 0.f});
  Tensor out = Tensor::empty({1, 4}, DType::f32);
  expect_ok(DeviceType::cpu, SiluAndMulArgs{out, in});
  auto silu = [](double x) { return x / (1 + std::exp(-x)); };
  EXPECT_EQ(at(out, 0), 0.f);
  EXPECT_NEAR(at(out, 1), silu(1) * 2, 1e-6);
  EXPECT_NEAR(at(out, 2), silu(-2) * -1, 1e-6);
  EXPECT_EQ(at(out, 3), 0.f);
}

TEST(GeluAndMul, BothApproximations) {
  Tensor in = f32_row({1.f, -0.5f, 3.f, 2.f});
  Tensor out = Tensor::empty({1, 2}, DType::f32);
  expect_ok(DeviceType::cpu, GeluAndMulArgs{out, in, GeluApprox::none});
  EXPECT_NEAR(at(out, 0), 0.8413447460685429 * 3, 1e-6);   // gelu(1) = Phi(1)
  EXPECT_NEAR(at(out, 1), -0.15426876936299344 * 2, 1e-6);  // gelu(-0.5)
  expect_ok(DeviceType::cpu, GeluAndMulArgs{out, in, GeluApprox::tanh});
  EXPECT_NEAR(at(out, 0), 0.8411919906082768 * 3, 1e-6);
  EXPECT_NEAR(at(out, 1), -0.15428599017780425 * 2, 1e-6);
}

TEST(Gelu, KnownValues) {
  Tensor in = f32_row({0.f, 1.f, -10.f, 10.f});
  Tensor out = Tensor::empty({1, 4}, DType::f32);
  for (GeluApprox g : {GeluApprox::none, GeluApprox::tanh}) {
    expect_ok(DeviceType::cpu, GeluArgs{out, in, g});
    EXPECT_EQ(at(out, 0), 0.f);
    EXPECT_NEAR(at(out, 1), 0.8413, 1e-3);
    EXPECT_NEAR(at(out, 2), 0.f, 1e-6);
    EXPECT_NEAR(at(out, 3), 10.f, 1e-6);
  }
}

TEST(Relu2, SquaresThePositivePartAndKeepsNaN) {
  Tensor in = f32_row({-1.f, 0.f, 3.f, -0.f, std::numeric_limits<float>::quiet_NaN()});
  Tensor out = Tensor::empty({1, 5}, DType::f32);
  expect_ok(DeviceType::cpu, Relu2Args{out, in});
  EXPECT_EQ(at(out, 0), 0.f);
  EXPECT_EQ(at(out, 1), 0.f);
  EXPECT_EQ(at(out, 2), 9.f);
  EXPECT_EQ(at(out, 3), 0.f);
  EXPECT_TRUE(std::isnan(at(out, 4)));
}

TEST(LogitSoftcap, InPlaceAndSaturatesAtTheCap) {
  Tensor logits = f32_row({0.f, 1000.f, -1000.f, 30.f, 1.f});
  expect_ok(DeviceType::cpu, LogitSoftcapArgs{logits, 30.f});
  EXPECT_EQ(at(logits, 0), 0.f);
  EXPECT_FLOAT_EQ(at(logits, 1), 30.f);
  EXPECT_FLOAT_EQ(at(logits, 2), -30.f);
  EXPECT_NEAR(at(logits, 3), 30 * std::tanh(1.0), 1e-5);
  EXPECT_NEAR(at(logits, 4), 30 * std::tanh(1.0 / 30), 1e-6);
}

TEST(ActivationRowStrides, StridedViewsMatchContiguous) {
  const int64_t T = 4, d = 20;
  for (DType dt : {DType::bf16, DType::f16}) {
    auto in = test::make_strided(T, 2 * d, 2 * d + 7, 1, dt, 4, 1, -4.f, 4.f);
    auto out = test::make_strided(T, d, d + 3, 2, dt, 4, 2, 0.f, 1.f);
    Tensor in_c = test::contiguous_copy(in.view), out_c = Tensor::empty({T, d}, dt);
    expect_ok(DeviceType::cpu, SiluAndMulArgs{out.view, in.view});
    expect_ok(DeviceType::cpu, SiluAndMulArgs{out_c, in_c});
    test::expect_views_near(out.view, out_c.view(), {0, 0}, "silu_and_mul strided");
    expect_ok(DeviceType::cpu, GeluAndMulArgs{out.view, in.view, GeluApprox::tanh});
    expect_ok(DeviceType::cpu, GeluAndMulArgs{out_c, in_c, GeluApprox::tanh});
    test::expect_views_near(out.view, out_c.view(), {0, 0}, "gelu_and_mul strided");

    auto x = test::make_strided(T, d, d + 1, 0, dt, 4, 3, -4.f, 4.f);
    Tensor x_c = test::contiguous_copy(x.view);
    expect_ok(DeviceType::cpu, Relu2Args{out.view, x.view});
    expect_ok(DeviceType::cpu, Relu2Args{out_c, x_c});
    test::expect_views_near(out.view, out_c.view(), {0, 0}, "relu2 strided");
    expect_ok(DeviceType::cpu, LogitSoftcapArgs{x.view, 3.f});
    expect_ok(DeviceType::cpu, LogitSoftcapArgs{x_c, 3.f});
    test::expect_views_near(x.view, x_c.view(), {0, 0}, "logit_softcap strided");
  }
}

TEST(ActivationErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  Tensor in = Tensor::zeros({3, 16}, DType::bf16), out = Tensor::zeros({3, 8}, DType::bf16);
  expect_ok(cpu, SiluAndMulArgs{out, in});
  expect_invalid(cpu, SiluAndMulArgs{out, Tensor::zeros({3, 15}, DType::bf16)}, "last dimension is odd");
  expect_invalid(cpu, SiluAndMulArgs{Tensor::zeros({3, 16}, DType::bf16), in}, "out must be [3, 8]");
  expect_invalid(cpu, SiluAndMulArgs{Tensor::zeros({2, 8}, DType::bf16), in}, "out must be [3, 8]");
  expect_invalid(cpu, SiluAndMulArgs{Tensor::zeros({3, 8}, DType::f32), in}, "out must be bf16");
  expect_invalid(cpu, SiluAndMulArgs{out, Tensor::zeros({3, 16}, DType::i8)}, "input must be one of f32/f16/bf16");
  expect_invalid(cpu, SiluAndMulArgs{out, Tensor::zeros({16}, DType::bf16)}, "input must have rank 2");
  TensorView aliased = in.view();
  aliased.shape[1] = 8;
  expect_invalid(cpu, SiluAndMulArgs{aliased, in}, "out must not overlap input");
  expect_invalid(cpu, GeluAndMulArgs{out, in, static_cast<GeluApprox>(7)}, "approximate must be none (0) or tanh (1)");

  Tensor x = Tensor::zeros({3, 8}, DType::f16), y = Tensor::zeros({3, 8}, DType::f16);
  expect_ok(cpu, GeluArgs{y, x, GeluApprox::none});
  expect_invalid(cpu, GeluArgs{y, x, static_cast<GeluApprox>(-1)}, "approximate must be");
  expect_invalid(cpu, GeluArgs{x, x, GeluApprox::none}, "out must not overlap input");
  expect_invalid(cpu, Relu2Args{Tensor::zeros({3, 9}, DType::f16), x}, "out must have the shape of input");
  TensorView cols_strided = x.view();
  cols_strided.shape[1] = 4, cols_strided.strides[1] = 2;
  expect_invalid(cpu, Relu2Args{Tensor::zeros({3, 4}, DType::f16), cols_strided}, "contiguous last dimension");

  expect_ok(cpu, LogitSoftcapArgs{x, 30.f});
  expect_invalid(cpu, LogitSoftcapArgs{x, 0.f}, "cap must be positive");
  expect_invalid(cpu, LogitSoftcapArgs{x, std::numeric_limits<float>::infinity()}, "cap must be positive and finite");
  expect_invalid(cpu, LogitSoftcapArgs{Tensor::zeros({3, 8}, DType::i32), 30.f}, "logits must be one of");
}

TEST(ActivationErrors, CudaImplementationRejectsHostTensors) {
  if (!OpRegistry::global().baseline(SiluAndMulArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor in = Tensor::zeros({3, 16}, DType::bf16), out = Tensor::zeros({3, 8}, DType::bf16);
  expect_invalid(DeviceType::cuda, SiluAndMulArgs{out, in}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, GeluAndMulArgs{out, in, GeluApprox::tanh}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, GeluArgs{out, Tensor::zeros({3, 8}, DType::bf16), GeluApprox::none},
                 "input must be on cuda");
  expect_invalid(DeviceType::cuda, Relu2Args{out, Tensor::zeros({3, 8}, DType::bf16)}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, LogitSoftcapArgs{out, 30.f}, "logits must be on cuda");
  TensorView logits = out.view();
  logits.device = Device::cuda();
  logits.dtype = DType::f64;
  expect_invalid(DeviceType::cuda, LogitSoftcapArgs{logits, 30.f}, "logits must be one of f32/f16/bf16");
}

}  // namespace
}  // namespace fk
