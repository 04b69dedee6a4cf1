// The DiT ops (silu, adaln_modulate, gated_residual_add, flow_match_euler_step, ddim_step) beyond the generic oracle test:
// hand-computed values, the per-sample vectors reaching only their own tokens, row-strided
// modulation vectors (slices of one [B, 6H] linear output, as FLUX passes them), in-place
// update that leaves the inputs alone, and named errors for bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/ops/dit.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AdaLnModulateArgs;
using ops::DdimStepArgs;
using ops::FlowMatchEulerStepArgs;
using ops::GatedResidualAddArgs;
using ops::SiluArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32_matrix(int64_t rows, int64_t cols, std::initializer_list<float> values) {
  Tensor t = Tensor::empty({rows, cols}, DType::f32);
  size_t i = 0;
  for (float v : values) t.data_as<float>()[i++] = v;
  return t;
}

TEST(DitSilu, KnownValues) {
  const Tensor in = f32_matrix(1, 5, {0.f, 1.f, -1.f, 20.f, -800.f});
  Tensor out = Tensor::empty({1, 5}, DType::f32);
  expect_ok(DeviceType::cpu, SiluArgs{out, in});
  const float* o = out.data_as<float>();
  EXPECT_FLOAT_EQ(o[0], 0.f);
  EXPECT_NEAR(o[1], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(o[2], -1.0 / (1.0 + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(o[3], 20.0, 1e-5);
  EXPECT_EQ(o[4], 0.f);  // exp overflows: the limit, not NaN
}

TEST(DitAdaLnModulate, NormalisesThenModulatesPerSample) {
  // Two samples of two tokens; each row's mean and variance are easy: [1, 3] has mean 2,
  // variance 1, normalised [-1, 1] (eps negligible).
  const Tensor in = f32_matrix(4, 2, {1.f, 3.f, /**/ 5.f, 1.f, /**/ 0.f, 2.f, /**/ -4.f, 4.f});
  const Tensor shift = f32_matrix(2, 2, {10.f, 20.f, /**/ -1.f, -2.f});
  const Tensor scale = f32_matrix(2, 2, {1.f, 0.f, /**/ -1.f, 2.f});
  Tensor out = Tensor::empty({4, 2}, DType::f32);
  expect_ok(DeviceType::cpu, AdaLnModulateArgs{out, in, shift, scale, 1e-12f});
  const float* o = out.data_as<float>();
  // Sample 0: n * (1 + [1, 0]) + [10, 20].
  EXPECT_NEAR(o[0], -2 + 10, 1e-5);
  EXPECT_NEAR(o[1], 1 + 20, 1e-5);
  EXPECT_NEAR(o[2], 2 + 10, 1e-5);
  EXPECT_NEAR(o[3], -1 + 20, 1e-5);
  // Sample 1: n * (1 + [-1, 2]) + [-1, -2].
  EXPECT_NEAR(o[4], 0 - 1, 1e-5);
  EXPECT_NEAR(o[5], 3 - 2, 1e-5);
  EXPECT_NEAR(o[6], 0 - 1, 1e-5);
  EXPECT_NEAR(o[7], 3 - 2, 1e-5);
}

TEST(DitAdaLnModulate, EpsAndStridedVectors) {
  // A constant row has variance 0: n = 0 whatever eps, out = shift. The vectors are column
  // slices of one [1, 6] matrix (shift | scale | gate as diffusers' chunk gives them).
  const Tensor in = f32_matrix(2, 2, {7.f, 7.f, /**/ 0.f, 2.f});
  const Tensor emb = f32_matrix(1, 6, {0.5f, -0.5f, /**/ 1.f, 1.f, /**/ 9.f, 9.f});
  TensorView shift = emb.view(), scale = emb.view();
  shift.shape[1] = 2;
  scale.shape[1] = 2;
  scale.data = scale.element_ptr(2);
  Tensor out = Tensor::empty({2, 2}, DType::f32);
  const float eps = 3.f;  // row 1: var 1, rstd = 1 / sqrt(1 + 3) = 1/2
  expect_ok(DeviceType::cpu, AdaLnModulateArgs{out, in, shift, scale, eps});
  const float* o = out.data_as<float>();
  EXPECT_FLOAT_EQ(o[0], 0.5f);
  EXPECT_FLOAT_EQ(o[1], -0.5f);
  EXPECT_NEAR(o[2], -0.5 * 2 + 0.5, 1e-6);
  EXPECT_NEAR(o[3], 0.5 * 2 - 0.5, 1e-6);
}

TEST(DitGatedResidualAdd, AddsGatedRowsInPlacePerSample) {
  Tensor out = f32_matrix(4, 2, {1.f, 1.f, /**/ 2.f, 2.f, /**/ 3.f, 3.f, /**/ 4.f, 4.f});
  const Tensor in = f32_matrix(4, 2, {1.f, 2.f, /**/ 3.f, 4.f, /**/ 5.f, 6.f, /**/ 7.f, 8.f});
  const Tensor gate = f32_matrix(2, 2, {0.f, 1.f, /**/ -1.f, 0.5f});
  const Tensor in_before = in.clone(), gate_before = gate.clone();
  expect_ok(DeviceType::cpu, GatedResidualAddArgs{out, in, gate});
  const float* o = out.data_as<float>();
  const float want[8] = {1.f, 3.f, 2.f, 6.f, -2.f, 6.f, -3.f, 8.f};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(o[i], want[i]) << i;
  test::expect_views_near(in.view(), in_before.view(), {0, 0}, "input is read only");
  test::expect_views_near(gate.view(), gate_before.view(), {0, 0}, "gate is read only");
}

TEST(DitGatedResidualAdd, RoundsOnceToTheDtype) {
  // bf16 spaces 258 and 260 two apart. 258 + 0.99609375 * 1 = 258.996 rounds to 258 when
  // the sum is rounded once; a kernel that rounded the sum's two halves differently (or
  // added in bf16 after rounding the product up to 1) would land on the tie 259 -> 260.
  Tensor out = Tensor::empty({1, 1}, DType::bf16), in = Tensor::empty({1, 1}, DType::bf16),
         gate = Tensor::empty({1, 1}, DType::bf16);
  set(out.view(), 258.0, 0, 0);
  set(in.view(), 1.0, 0, 0);
  set(gate.view(), 0.99609375, 0, 0);
  expect_ok(DeviceType::cpu, GatedResidualAddArgs{out, in, gate});
  EXPECT_EQ(get(out.view(), 0, 0), 258.0);
}

TEST(DitFlowMatchEulerStep, StepsInPlaceInFloat) {
  Tensor sample = f32_matrix(2, 2, {1.f, -1.f, 0.5f, 2.f});
  const Tensor velocity = f32_matrix(2, 2, {2.f, 4.f, -1.f, 0.f});
  expect_ok(DeviceType::cpu, FlowMatchEulerStepArgs{sample, velocity, -0.25f});
  const float* s = sample.data_as<float>();
  EXPECT_FLOAT_EQ(s[0], 0.5f);
  EXPECT_FLOAT_EQ(s[1], -2.f);
  EXPECT_FLOAT_EQ(s[2], 0.75f);
  EXPECT_FLOAT_EQ(s[3], 2.f);
  // bf16: dt is used as given, not rounded to the dtype. 1 + 0.00392 * 1 lies just above
  // the midpoint 1.00390625 of bf16's 1 and 1.0078125 and rounds up; dt rounded to bf16
  // first (0.00390625) would land on the midpoint and round to even, 1.
  Tensor x = Tensor::empty({1, 1}, DType::bf16), v = Tensor::empty({1, 1}, DType::bf16);
  set(x.view(), 1.0, 0, 0);
  set(v.view(), 1.0, 0, 0);
  expect_ok(DeviceType::cpu, FlowMatchEulerStepArgs{x, v, 0.00392f});
  EXPECT_EQ(get(x.view(), 0, 0), 1.0078125);
}

TEST(DitDdimStep, CombinesSampleAndOutputInPlace) {
  Tensor sample = f32_matrix(1, 3, {1.f, -2.f, 4.f});
  const Tensor output = f32_matrix(1, 3, {2.f, 1.f, -0.5f});
  expect_ok(DeviceType::cpu, DdimStepArgs{sample, output, 0.5f, -0.25f});
  const float* s = sample.data_as<float>();
  EXPECT_FLOAT_EQ(s[0], 0.f);
  EXPECT_FLOAT_EQ(s[1], -1.25f);
  EXPECT_FLOAT_EQ(s[2], 2.125f);
  EXPECT_FLOAT_EQ(output.data_as<float>()[0], 2.f);
  // bf16: one rounding of the whole sum. 1 * 1 + 0.00392 * 1 rounds up to 1.0078125; the
  // product rounded to bf16 first (0.00390625) would land on the midpoint and round to 1.
  Tensor x = Tensor::empty({1, 1}, DType::bf16), v = Tensor::empty({1, 1}, DType::bf16);
  set(x.view(), 1.0, 0, 0);
  set(v.view(), 1.0, 0, 0);
  expect_ok(DeviceType::cpu, DdimStepArgs{x, v, 1.f, 0.00392f});
  EXPECT_EQ(get(x.view(), 0, 0), 1.0078125);
}

TEST(DitOps, NamedErrors) {
  const Tensor x = f32_matrix(4, 2, {0, 0, 0, 0, 0, 0, 0, 0});
  Tensor out = Tensor::empty({4, 2}, DType::f32);
  const Tensor three = Tensor::empty({3, 2}, DType::f32), wide = Tensor::empty({1, 3}, DType::f32),
               half = Tensor::empty({1, 2}, DType::f16), one = Tensor::empty({1, 2}, DType::f32);
  expect_invalid(DeviceType::cpu, AdaLnModulateArgs{out, x, three, three, 1e-6f}, "shift [B, H] needs B >= 1 dividing");
  expect_invalid(DeviceType::cpu, AdaLnModulateArgs{out, x, wide, one, 1e-6f}, "shift must have the 2 columns");
  expect_invalid(DeviceType::cpu, AdaLnModulateArgs{out, x, one, half, 1e-6f}, "scale");
  expect_invalid(DeviceType::cpu, AdaLnModulateArgs{out, x, one, one, 0.f}, "eps must be positive");
  expect_invalid(DeviceType::cpu, AdaLnModulateArgs{x, x, one, one, 1e-6f}, "overlap");
  expect_invalid(DeviceType::cpu, GatedResidualAddArgs{out, x, three}, "gate [B, H] needs B >= 1 dividing");
  expect_invalid(DeviceType::cpu, GatedResidualAddArgs{out, out, one}, "overlap");
  expect_invalid(DeviceType::cpu, GatedResidualAddArgs{out, three, one}, "out");
  expect_invalid(DeviceType::cpu, SiluArgs{three, x}, "out");
  expect_invalid(DeviceType::cpu, FlowMatchEulerStepArgs{out, x, std::numeric_limits<float>::infinity()},
                 "dt must be finite");
  expect_invalid(DeviceType::cpu, FlowMatchEulerStepArgs{out, out, -0.1f}, "overlap");
  expect_invalid(DeviceType::cpu, DdimStepArgs{out, x, std::nanf(""), 1.f}, "c_sample and c_output must be finite");
  expect_invalid(DeviceType::cpu, DdimStepArgs{out, out, 1.f, 0.5f}, "overlap");
  expect_invalid(DeviceType::cpu, DdimStepArgs{out, three, 1.f, 0.5f}, "sample");
}

// flux_single_block (L3): the oracle test holds its baseline to the double-precision
// reference; here, that hidden is updated in place and the weights are not, and named errors.
TEST(DitFluxSingleBlock, UpdatesHiddenInPlaceAndNamesBadArguments) {
  const OpDef& def = OpRegistry::global().def(ops::FluxSingleBlockArgs::kName);
  OpCase c = def.make_case({{"hidden", 64}, {"heads", 2}, {"mlp", 128}, {"seq", 6}, {"batch", 2}},
                           test::seed_for("flux_single_block"));
  const Tensor hidden_before = c.tensors[0].clone(), weight_before = c.tensors[4].clone();
  expect_ok(DeviceType::cpu, c.as<ops::FluxSingleBlockArgs>());
  double moved = 0;
  for (int64_t i = 0; i < c.tensors[0].numel(); ++i)
    moved = std::max(moved, std::fabs(get(c.tensors[0].view(), i / 64, i % 64) - get(hidden_before.view(), i / 64, i % 64)));
  EXPECT_GT(moved, 0.01);
  test::expect_views_near(c.tensors[4].view(), weight_before.view(), {0, 0}, "qkv_weight is read only");
  ops::FluxSingleBlockArgs bad = c.as<ops::FluxSingleBlockArgs>();
  TensorView cond = bad.cond;
  cond.shape[0] = 5;  // 12 tokens are not 5 samples
  bad.cond = cond;
  expect_invalid(DeviceType::cpu, bad, "with B dividing the 12 tokens");
  bad = c.as<ops::FluxSingleBlockArgs>();
  bad.num_heads = 3;
  expect_invalid(DeviceType::cpu, bad, "num_heads 3 must divide the hidden size 64");
  bad = c.as<ops::FluxSingleBlockArgs>();
  bad.positions = c.tensors[0].view();
  expect_invalid(DeviceType::cpu, bad, "positions must be [12]");
}

// oasis_block (L3): likewise, and that its two halves read their own tables and offsets.
TEST(DitOasisBlock, UpdatesHiddenInPlaceAndNamesBadArguments) {
  const OpDef& def = OpRegistry::global().def(ops::OasisBlockArgs::kName);
  OpCase c = def.make_case({{"hidden", 64}, {"heads", 2}, {"mlp", 128}, {"frames", 3}, {"seq", 4}, {"clips", 2}},
                           test::seed_for("oasis_block"));
  const Tensor hidden_before = c.tensors[0].clone(), weight_before = c.tensors[4].clone();
  expect_ok(DeviceType::cpu, c.as<ops::OasisBlockArgs>());
  double moved = 0;
  for (int64_t i = 0; i < c.tensors[0].numel(); ++i)
    moved = std::max(moved, std::fabs(get(c.tensors[0].view(), i / 64, i % 64) - get(hidden_before.view(), i / 64, i % 64)));
  EXPECT_GT(moved, 0.01);
  test::expect_views_near(c.tensors[4].view(), weight_before.view(), {0, 0}, "spatial.qkv_weight is read only");
  const ops::OasisBlockArgs good = c.as<ops::OasisBlockArgs>();
  ops::OasisBlockArgs bad = good;
  bad.frames = 4;  // 6 frames of cond are not clips of 4
  expect_invalid(DeviceType::cpu, bad, "frames 4 must be positive and divide the 6 frames");
  bad = good;
  bad.num_heads = 3;
  expect_invalid(DeviceType::cpu, bad, "num_heads 3 must divide the hidden size 64");
  bad = good;
  bad.temporal_cu_seqlens = good.spatial_cu_seqlens;  // 7 offsets where 2 clips x 4 positions need 9
  expect_invalid(DeviceType::cpu, bad, "temporal_cu_seqlens must be [9]");
  bad = good;
  bad.temporal.fc2_weight = good.temporal.fc1_weight;
  expect_invalid(DeviceType::cpu, bad, "temporal.fc2_weight");
}

}  // namespace
}  // namespace fk
