// gdn_gating and sigmoid_mul (Qwen3-Next's gates) beyond the generic oracle test: known
// values (softplus on both sides of its threshold of 20, the sigmoid's middle and ends),
// beta in f32 or the input dtype, row-strided inputs (columns of a wider projection), and
// clear errors for bad arguments (CPU implementation).
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/ops/ssm_gating.h"
#include "ops/norm_act_support.h"

namespace fk {
namespace {

using ops::GdnGatingArgs;
using ops::SigmoidMulArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32(const Shape& shape, std::initializer_list<float> values) {
  Tensor t = Tensor::empty(shape, DType::f32);
  size_t i = 0;
  for (float v : values) t.data_as<float>()[i++] = v;
  return t;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return std::log1p(std::exp(x)); }

TEST(GdnGating, KnownValues) {
  // One projection row per token [b0 b1 | a0 a1]: b and a are column slices of it.
  const Tensor proj = f32({3, 4}, {0.f, 3.f, -1.f, 0.5f, /**/ -40.f, 40.f, 19.f, 30.f, /**/ 1.f, -2.f, -30.f, 0.f});
  const Tensor a_log = f32({2}, {0.f, std::log(4.f)}), dt_bias = f32({2}, {1.f, -0.5f});
  Tensor g = Tensor::empty({3, 2}, DType::f32), beta = Tensor::empty({3, 2}, DType::f32);
  TensorView b_view = proj.view(), a_view = proj.view();
  b_view.shape[1] = 2;
  a_view.shape[1] = 2;
  a_view.data = static_cast<float*>(a_view.data) + 2;
  expect_ok(DeviceType::cpu, GdnGatingArgs{g, beta, a_view, b_view, a_log, dt_bias});
  const float* G = g.data_as<float>();
  const float* B = beta.data_as<float>();
  EXPECT_FLOAT_EQ(G[0], static_cast<float>(-1.0 * softplus(-1.0 + 1.0)));
  EXPECT_FLOAT_EQ(G[1], static_cast<float>(-4.0 * softplus(0.5 - 0.5)));
  EXPECT_FLOAT_EQ(G[2], static_cast<float>(-1.0 * softplus(20.0)));  // at the threshold: still log1p(exp)
  EXPECT_FLOAT_EQ(G[3], static_cast<float>(-4.0 * 29.5));           // above it: the identity
  EXPECT_FLOAT_EQ(G[4], static_cast<float>(-1.0 * softplus(-29.0)));
  EXPECT_FLOAT_EQ(B[0], 0.5f);
  EXPECT_FLOAT_EQ(B[1], static_cast<float>(sigmoid(3.0)));
  EXPECT_FLOAT_EQ(B[2], static_cast<float>(sigmoid(-40.0)));
  EXPECT_FLOAT_EQ(B[3], 1.f);
  EXPECT_FLOAT_EQ(B[5], static_cast<float>(sigmoid(-2.0)));
  for (int i = 0; i < 6; ++i) EXPECT_LE(G[i], 0.f) << i;

  // beta in the input's dtype (transformers' b.sigmoid() in bf16).
  Tensor ab = Tensor::empty({3, 4}, DType::bf16);
  for (int64_t i = 0; i < 12; ++i)
    store_element(static_cast<char*>(ab.data()) + 2 * i, DType::bf16, proj.data_as<float>()[i]);
  TensorView bb = ab.view(), aa = ab.view();
  bb.shape[1] = aa.shape[1] = 2;
  aa.data = static_cast<char*>(aa.data) + 2 * 2;
  Tensor beta16 = Tensor::empty({3, 2}, DType::bf16);
  expect_ok(DeviceType::cpu, GdnGatingArgs{g, beta16, aa, bb, a_log, dt_bias});
  EXPECT_NEAR(load_element(static_cast<const char*>(beta16.data()) + 2, DType::bf16), sigmoid(3.0), 4e-3);
}

TEST(GdnGating, Errors) {
  const Tensor a = Tensor::zeros({3, 2}, DType::bf16), b = Tensor::zeros({3, 2}, DType::bf16);
  const Tensor a_log = Tensor::zeros({2}, DType::f32), dt = Tensor::zeros({2}, DType::f32);
  Tensor g = Tensor::empty({3, 2}, DType::f32), beta = Tensor::empty({3, 2}, DType::f32);
  expect_invalid(DeviceType::cpu, GdnGatingArgs{g, beta, a, b, Tensor::zeros({3}, DType::f32), dt},
                 "a_log must be [2]");
  expect_invalid(DeviceType::cpu, GdnGatingArgs{g, beta, a, b, a_log, Tensor::zeros({2}, DType::bf16)}, "dt_bias");
  expect_invalid(DeviceType::cpu, GdnGatingArgs{Tensor::empty({3, 2}, DType::bf16), beta, a, b, a_log, dt}, "g");
  expect_invalid(DeviceType::cpu, GdnGatingArgs{g, Tensor::empty({3, 2}, DType::f16), a, b, a_log, dt},
                 "beta must be f32 or bf16");
  expect_invalid(DeviceType::cpu, GdnGatingArgs{g, beta, a, Tensor::zeros({3, 2}, DType::f16), a_log, dt}, "b");
  expect_invalid(DeviceType::cpu, GdnGatingArgs{g, beta, a, Tensor::zeros({2, 2}, DType::bf16), a_log, dt}, "b");
}

TEST(SigmoidMul, KnownValuesAndRowStrides) {
  // input and gate: the two halves of each row of one [T, 2N] matrix.
  const Tensor m = f32({2, 6}, {1.f, -2.f, 4.f, /**/ 0.f, 2.f, -200.f, /**/ 3.f, 3.f, 3.f, /**/ 200.f, -1.f, 1.f});
  TensorView input = m.view(), gate = m.view();
  input.shape[1] = gate.shape[1] = 3;
  gate.data = static_cast<float*>(gate.data) + 3;
  Tensor out = Tensor::empty({2, 3}, DType::f32);
  expect_ok(DeviceType::cpu, SigmoidMulArgs{out, input, gate});
  const float* o = out.data_as<float>();
  EXPECT_FLOAT_EQ(o[0], 0.5f);
  EXPECT_FLOAT_EQ(o[1], static_cast<float>(-2.0 * sigmoid(2.0)));
  EXPECT_FLOAT_EQ(o[2], 0.f);
  EXPECT_FLOAT_EQ(o[3], 3.f);
  EXPECT_FLOAT_EQ(o[4], static_cast<float>(3.0 * sigmoid(-1.0)));
  EXPECT_FLOAT_EQ(o[5], static_cast<float>(3.0 * sigmoid(1.0)));
}

TEST(SigmoidMul, Errors) {
  const Tensor x = Tensor::zeros({2, 4}, DType::bf16);
  Tensor out = Tensor::empty({2, 4}, DType::bf16);
  expect_invalid(DeviceType::cpu, SigmoidMulArgs{out, x, Tensor::zeros({2, 3}, DType::bf16)}, "gate");
  expect_invalid(DeviceType::cpu, SigmoidMulArgs{out, x, Tensor::zeros({2, 4}, DType::f16)}, "gate");
  expect_invalid(DeviceType::cpu, SigmoidMulArgs{Tensor::empty({2, 4}, DType::f16), x, x}, "out");
  expect_invalid(DeviceType::cpu, SigmoidMulArgs{x, x, Tensor::zeros({2, 4}, DType::bf16)}, "overlap");
}

}  // namespace
}  // namespace fk
