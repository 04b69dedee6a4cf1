// rms_norm_gated and l2_norm beyond the generic oracle test: known values (the gate's
// activations, eps added to the sum of squares for l2_norm and to the mean for the RMS
// norm), zero rows, transformers' order of rounding (Qwen3NextRMSNormGated rounds the
// normalised row and its product with the weight to the dtype) staying within the op's
// tolerance of the exact value, and clear errors for bad arguments (CPU implementations;
// the CUDA ones where their validation runs first).
#include <gtest/gtest.h>

#include <cmath>

#include "fk/dtype_convert.h"
#include "fk/element.h"
#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::L2NormArgs;
using ops::NormGateActivation;
using ops::RmsNormGatedArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32s(const Shape& shape, std::initializer_list<float> v) {
  Tensor t = Tensor::empty(shape, DType::f32);
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }

TEST(RmsNormGated, KnownValues) {
  // Row [3, 4]: mean square 12.5. Gates: 0 shuts a SiLU gate, not a sigmoid one (1/2).
  const Tensor input = f32s({2, 2}, {3, 4, 0, 0});
  const Tensor gate = f32s({2, 2}, {0, 2, 1, -1});
  const Tensor weight = f32s({2}, {2, 0.5f});
  for (NormGateActivation act : {NormGateActivation::silu, NormGateActivation::sigmoid}) {
    Tensor out = Tensor::empty({2, 2}, DType::f32);
    expect_ok(DeviceType::cpu, RmsNormGatedArgs{out, input, gate, weight, 1e-6f, act});
    const double inv = 1.0 / std::sqrt(12.5 + 1e-6);
    const bool silu = act == NormGateActivation::silu;
    EXPECT_NEAR(out.data_as<float>()[0], 3 * inv * 2 * (silu ? 0.0 : 0.5), 1e-6);
    EXPECT_NEAR(out.data_as<float>()[1], 4 * inv * 0.5 * (silu ? 2 * sigmoid(2) : sigmoid(2)), 1e-6);
    // A zero row stays zero (eps keeps the scale finite).
    EXPECT_EQ(out.data_as<float>()[2], 0.f);
    EXPECT_EQ(out.data_as<float>()[3], 0.f);
  }
}

// Qwen3NextRMSNormGated in transformers: the normalised row (fp32) is rounded to the input
// dtype, multiplied by the weight in that dtype (rounded again), then by silu(gate) in
// fp32, and rounded once more. fla and vLLM round once. Both must pass the op's tolerance
// against the exact value, so either implementation can stand in for the other.
TEST(RmsNormGated, TransformersRoundingIsWithinTolerance) {
  const uint64_t seed = test::seed_for("rms_norm_gated_transformers_order");
  const int64_t R = 256, H = 128;
  const DType dt = DType::bf16;
  const Tensor input = ops::random_tensor({R, H}, dt, seed, 1, -2.f, 2.f);
  const Tensor gate = ops::random_tensor({R, H}, dt, seed, 2, -6.f, 6.f);
  const Tensor weight = ops::random_tensor({H}, dt, seed, 3, 0.5f, 1.5f);
  Tensor exact = Tensor::empty({R, H}, DType::f64);
  expect_ok(DeviceType::cpu, RmsNormGatedArgs{exact, input, gate, weight, 1e-6f, NormGateActivation::silu});
  auto round_bf16 = [](double v) { return static_cast<double>(bf16_to_float(float_to_bf16(static_cast<float>(v)))); };
  const Tolerance tol = default_tolerance(dt);
  int64_t bad = 0;
  for (int64_t r = 0; r < R; ++r) {
    float sum_sq = 0;
    for (int64_t h = 0; h < H; ++h) sum_sq += static_cast<float>(get(input.view(), r, h) * get(input.view(), r, h));
    const float inv = 1.f / std::sqrt(sum_sq / static_cast<float>(H) + 1e-6f);
    for (int64_t h = 0; h < H; ++h) {
      const double normed = round_bf16(static_cast<float>(get(input.view(), r, h)) * inv);
      const double scaled = round_bf16(get(weight.view(), h) * normed);
      const float g = static_cast<float>(get(gate.view(), r, h));
      const double y = round_bf16(static_cast<float>(scaled) * (g / (1.f + std::exp(-g))));
      const double e = get(exact.view(), r, h);
      if (std::fabs(y - e) > tol.atol + tol.rtol * std::fabs(e) && bad++ < 5)
        ADD_FAILURE() << "[" << r << ", " << h << "] transformers' order gives " << y << ", exact " << e;
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(L2Norm, KnownValues) {
  // eps joins the sum of squares (25), not the mean: [3, 4] -> [0.6, 0.8] up to eps / 50.
  const Tensor input = f32s({3, 2}, {3, 4, 0, 0, -1e-4f, 0});
  Tensor out = Tensor::empty({3, 2}, DType::f32);
  expect_ok(DeviceType::cpu, L2NormArgs{out, input, 1e-6f});
  EXPECT_NEAR(out.data_as<float>()[0], 3 / std::sqrt(25 + 1e-6), 1e-7);
  EXPECT_NEAR(out.data_as<float>()[1], 4 / std::sqrt(25 + 1e-6), 1e-7);
  EXPECT_EQ(out.data_as<float>()[2], 0.f);
  EXPECT_EQ(out.data_as<float>()[3], 0.f);
  // A tiny row is not blown up to unit length: eps dominates 1e-8.
  EXPECT_NEAR(out.data_as<float>()[4], -1e-4 / std::sqrt(1e-8 + 1e-6), 1e-6);
}

TEST(RmsNormGatedErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  Tensor out = Tensor::zeros({3, 8}, DType::bf16), in = Tensor::zeros({3, 8}, DType::bf16),
         gate = Tensor::zeros({3, 8}, DType::bf16), w = Tensor::zeros({8}, DType::bf16);
  const auto silu = NormGateActivation::silu;
  expect_ok(cpu, RmsNormGatedArgs{out, in, gate, w, 1e-6f, silu});
  expect_invalid(cpu, RmsNormGatedArgs{out, in, Tensor::zeros({3, 9}, DType::bf16), w, 1e-6f, silu},
                 "gate must have the shape of input");
  expect_invalid(cpu, RmsNormGatedArgs{out, in, Tensor::zeros({3, 8}, DType::f16), w, 1e-6f, silu}, "gate must be bf16");
  expect_invalid(cpu, RmsNormGatedArgs{out, in, gate, Tensor::zeros({9}, DType::bf16), 1e-6f, silu},
                 "weight dimension 0 must be 8");
  expect_invalid(cpu, RmsNormGatedArgs{Tensor::zeros({3, 8}, DType::f32), in, gate, w, 1e-6f, silu}, "out must be bf16");
  expect_invalid(cpu, RmsNormGatedArgs{out, in, gate, w, 0.f, silu}, "eps must be positive");
  expect_invalid(cpu, RmsNormGatedArgs{out, in, gate, w, 1e-6f, static_cast<NormGateActivation>(7)},
                 "activation must be silu (0) or sigmoid (1)");
  expect_invalid(cpu, RmsNormGatedArgs{gate, in, gate, w, 1e-6f, silu}, "out must not overlap gate");
  expect_invalid(cpu, RmsNormGatedArgs{out, Tensor::zeros({3, 8}, DType::i32), gate, w, 1e-6f, silu},
                 "input must be one of f32/f16/bf16");
}

TEST(L2NormErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  Tensor out = Tensor::zeros({3, 8}, DType::bf16), in = Tensor::zeros({3, 8}, DType::bf16);
  expect_ok(cpu, L2NormArgs{out, in, 1e-6f});
  expect_ok(cpu, L2NormArgs{Tensor::zeros({0, 8}, DType::bf16), Tensor::zeros({0, 8}, DType::bf16), 1e-6f});
  expect_invalid(cpu, L2NormArgs{Tensor::zeros({3, 7}, DType::bf16), in, 1e-6f}, "out must have the shape of input");
  expect_invalid(cpu, L2NormArgs{Tensor::zeros({3, 8}, DType::f16), in, 1e-6f}, "out must be bf16");
  expect_invalid(cpu, L2NormArgs{out, in, -1.f}, "eps must be positive");
  expect_invalid(cpu, L2NormArgs{in, in, 1e-6f}, "out must not overlap input");
  expect_invalid(cpu, L2NormArgs{out, Tensor::zeros({24}, DType::bf16), 1e-6f}, "input must have rank 2");
}

TEST(NormGatedErrors, CudaImplementationsRejectHostTensors) {
  if (!OpRegistry::global().baseline(L2NormArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor out = Tensor::zeros({3, 8}, DType::bf16), in = Tensor::zeros({3, 8}, DType::bf16),
         gate = Tensor::zeros({3, 8}, DType::bf16), w = Tensor::zeros({8}, DType::bf16);
  expect_invalid(DeviceType::cuda, L2NormArgs{out, in, 1e-6f}, "input must be on cuda");
  expect_invalid(DeviceType::cuda, RmsNormGatedArgs{out, in, gate, w, 1e-6f, NormGateActivation::silu},
                 "input must be on cuda");
}

}  // namespace
}  // namespace fk
