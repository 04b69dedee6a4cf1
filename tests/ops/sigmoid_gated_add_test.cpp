// sigmoid_gated_add beyond the generic oracle test: known values (the sigmoid's middle and
// both saturated ends, NaN), the update is in place and leaves input and gate alone,
// row-strided views (a gate taken from a column of a wider matrix), and clear errors for bad
// arguments (CPU implementation; the CUDA one where its validation runs first).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fk/ops/moe.h"
#include "ops/norm_act_support.h"

namespace fk {
namespace {

using ops::SigmoidGatedAddArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32_matrix(int64_t rows, int64_t cols, std::initializer_list<float> values) {
  Tensor t = Tensor::empty({rows, cols}, DType::f32);
  size_t i = 0;
  for (float v : values) t.data_as<float>()[i++] = v;
  return t;
}

double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }

TEST(SigmoidGatedAdd, AddsTheGatedRowInPlace) {
  Tensor out = f32_matrix(4, 3, {1.f, 2.f, 3.f, /**/ 1.f, -1.f, 0.f, /**/ 5.f, 6.f, 7.f, /**/ -2.f, 0.f, 2.f});
  const Tensor input = f32_matrix(4, 3, {2.f, 4.f, -6.f, /**/ 1.f, 1.f, 1.f, /**/ 3.f, 3.f, 3.f, /**/ 8.f, 8.f, 8.f});
  const Tensor gate = f32_matrix(4, 1, {0.f, 2.f, -200.f, 200.f});
  const Tensor input_before = input.clone(), gate_before = gate.clone();
  expect_ok(DeviceType::cpu, SigmoidGatedAddArgs{out, input, gate});
  const float* o = out.data_as<float>();
  // Row 0: sigmoid(0) = 1/2.
  EXPECT_FLOAT_EQ(o[0], 2.f);
  EXPECT_FLOAT_EQ(o[1], 4.f);
  EXPECT_FLOAT_EQ(o[2], 0.f);
  // Row 1: the input's row scaled by sigmoid(2) (not its sign-flipped twin, sigmoid(-2)).
  EXPECT_NEAR(o[3], 1 + sigmoid(2), 1e-6);
  EXPECT_NEAR(o[4], -1 + sigmoid(2), 1e-6);
  EXPECT_NEAR(o[5], sigmoid(2), 1e-6);
  // Row 2: the gate saturated shut (exp overflows; no NaN), row 3 wide open.
  EXPECT_FLOAT_EQ(o[6], 5.f);
  EXPECT_FLOAT_EQ(o[8], 7.f);
  EXPECT_FLOAT_EQ(o[9], 6.f);
  EXPECT_FLOAT_EQ(o[11], 10.f);
  test::expect_views_near(input.view(), input_before.view(), {0, 0}, "input is read only");
  test::expect_views_near(gate.view(), gate_before.view(), {0, 0}, "gate is read only");
}

TEST(SigmoidGatedAdd, NanGatePropagates) {
  Tensor out = f32_matrix(2, 2, {1.f, 1.f, 1.f, 1.f});
  const Tensor input = f32_matrix(2, 2, {1.f, 1.f, 1.f, 1.f});
  const Tensor gate = f32_matrix(2, 1, {std::numeric_limits<float>::quiet_NaN(), 0.f});
  expect_ok(DeviceType::cpu, SigmoidGatedAddArgs{out, input, gate});
  EXPECT_TRUE(std::isnan(out.data_as<float>()[0]));
  EXPECT_TRUE(std::isnan(out.data_as<float>()[1]));
  EXPECT_FLOAT_EQ(out.data_as<float>()[2], 1.5f);
}

TEST(SigmoidGatedAdd, RoundsOnceToTheDtype) {
  // bf16 spaces 258 and 260 two apart. 258 + sigmoid(7) * 1 = 258.9991 rounds to 258; had
  // the product been rounded to bf16 first (0.9991 -> 1.0), the sum would be the tie 259,
  // which goes to the even 260.
  Tensor out = Tensor::empty({1, 1}, DType::bf16), input = Tensor::empty({1, 1}, DType::bf16),
         gate = Tensor::empty({1, 1}, DType::bf16);
  set(out.view(), 258.0, 0, 0);
  set(input.view(), 1.0, 0, 0);
  set(gate.view(), 7.0, 0, 0);
  expect_ok(DeviceType::cpu, SigmoidGatedAddArgs{out, input, gate});
  EXPECT_EQ(get(out.view(), 0, 0), 258.0);
}

TEST(SigmoidGatedAdd, RowStridedViewsMatchContiguous) {
  const int64_t T = 5, H = 24;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    auto out = test::make_strided(T, H, H + 5, 1, dt, 9, 1, -2.f, 2.f);
    auto in = test::make_strided(T, H, H + 8, 0, dt, 9, 2, -2.f, 2.f);
    // The gate as the last column of a [T, 7] matrix: row stride 7.
    auto gate_cols = test::make_strided(T, 7, 7, 0, dt, 9, 3, -4.f, 4.f);
    TensorView gate = gate_cols.view;
    gate.data = gate.element_ptr(6);
    gate.shape[1] = 1;
    Tensor out_c = test::contiguous_copy(out.view), in_c = test::contiguous_copy(in.view),
           gate_c = test::contiguous_copy(gate);
    expect_ok(DeviceType::cpu, SigmoidGatedAddArgs{out.view, in.view, gate});
    expect_ok(DeviceType::cpu, SigmoidGatedAddArgs{out_c, in_c, gate_c});
    test::expect_views_near(out.view, out_c.view(), {0, 0}, std::string("strided ") + std::string(dtype_name(dt)));
  }
}

TEST(SigmoidGatedAddErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  Tensor out = Tensor::zeros({3, 8}, DType::bf16), in = Tensor::zeros({3, 8}, DType::bf16),
         gate = Tensor::zeros({3, 1}, DType::bf16);
  expect_ok(cpu, SigmoidGatedAddArgs{out, in, gate});
  expect_ok(cpu, SigmoidGatedAddArgs{Tensor::zeros({0, 8}, DType::bf16), Tensor::zeros({0, 8}, DType::bf16),
                                     Tensor::zeros({0, 1}, DType::bf16)});
  expect_invalid(cpu, SigmoidGatedAddArgs{out, in, Tensor::zeros({3, 2}, DType::bf16)}, "gate must be [3, 1]");
  expect_invalid(cpu, SigmoidGatedAddArgs{out, in, Tensor::zeros({2, 1}, DType::bf16)}, "gate must be [3, 1]");
  expect_invalid(cpu, SigmoidGatedAddArgs{out, in, Tensor::zeros({3}, DType::bf16)}, "gate must have rank 2");
  expect_invalid(cpu, SigmoidGatedAddArgs{out, in, Tensor::zeros({3, 1}, DType::f32)}, "gate must be bf16");
  expect_invalid(cpu, SigmoidGatedAddArgs{Tensor::zeros({3, 9}, DType::bf16), in, gate},
                 "out must have the shape of input");
  expect_invalid(cpu, SigmoidGatedAddArgs{Tensor::zeros({3, 8}, DType::f16), in, gate}, "out must be bf16");
  expect_invalid(cpu, SigmoidGatedAddArgs{out, Tensor::zeros({3, 8}, DType::i32), gate},
                 "input must be one of f32/f16/bf16");
  expect_invalid(cpu, SigmoidGatedAddArgs{out, out, gate}, "out must not overlap input");
  TensorView first_column = out.view();
  first_column.shape[1] = 1;
  expect_invalid(cpu, SigmoidGatedAddArgs{out, in, first_column}, "out must not overlap gate");
  TensorView cols_strided = in.view();
  cols_strided.shape[1] = 4, cols_strided.strides[1] = 2;
  expect_invalid(cpu, SigmoidGatedAddArgs{Tensor::zeros({3, 4}, DType::bf16), cols_strided, gate},
                 "contiguous last dimension");
}

TEST(SigmoidGatedAddErrors, CudaImplementationRejectsHostTensors) {
  if (!OpRegistry::global().baseline(SigmoidGatedAddArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor out = Tensor::zeros({3, 8}, DType::bf16), in = Tensor::zeros({3, 8}, DType::bf16),
         gate = Tensor::zeros({3, 1}, DType::bf16);
  expect_invalid(DeviceType::cuda, SigmoidGatedAddArgs{out, in, gate}, "input must be on cuda");
}

}  // namespace
}  // namespace fk
