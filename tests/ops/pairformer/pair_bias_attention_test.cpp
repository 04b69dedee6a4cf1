// pair_bias_attention beyond the generic oracle test: a hand-computed tiny example (two
// keys, so the softmax is a sigmoid of the logit difference), the bias's row groups (row r
// uses group r / (R / G)), a fully masked query row writing zeros, masked keys that carry
// no weight however large their bias, and named errors (CPU implementation).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fk/element.h"
#include "fk/ops/pairformer.h"
#include "fk/op_registry.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::PairBiasAttentionArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor filled(const Shape& shape, std::initializer_list<double> values) {
  Tensor t = Tensor::empty(shape, DType::f32);
  int64_t i = 0;
  for (double v : values) store_element(t.view().element_ptr(i++), DType::f32, v);
  EXPECT_EQ(i, t.numel());
  return t;
}

TEST(PairBiasAttention, HandComputedTwoKeys) {
  // One row of S = 2, one head of D = 2; q0 = (1, 0), q1 = (0, 2); k0 = (1, 1), k1 = (-1, 0);
  // v0 = (1, 2), v1 = (3, -1); bias [[0.5, -0.5], [0, 1]], scale 0.5.
  // query 0: logits 0.5 * 1 + 0.5 = 1, 0.5 * -1 - 0.5 = -1 -> p0 = 1 / (1 + e^-2)
  // query 1: logits 0.5 * 2 + 0 = 1, 0 + 1 = 1 -> p0 = 1/2
  Tensor q = filled({1, 2, 1, 2}, {1, 0, 0, 2}), k = filled({1, 2, 1, 2}, {1, 1, -1, 0});
  Tensor v = filled({1, 2, 1, 2}, {1, 2, 3, -1}), bias = filled({1, 1, 2, 2}, {0.5, -0.5, 0, 1});
  Tensor out = Tensor::empty({1, 2, 1, 2}, DType::f32);
  expect_ok(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, TensorView{}, 0.5f});
  const double p0 = 1 / (1 + std::exp(-2.0));
  const float* o = out.data_as<float>();
  EXPECT_NEAR(o[0], p0 * 1 + (1 - p0) * 3, 1e-6);
  EXPECT_NEAR(o[1], p0 * 2 + (1 - p0) * -1, 1e-6);
  EXPECT_NEAR(o[2], 2.0, 1e-6);
  EXPECT_NEAR(o[3], 0.5, 1e-6);

  // Masking key 1 of the row leaves all weight on key 0 for both queries.
  Tensor mask = filled({1, 2}, {1, 0});
  expect_ok(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, mask, 0.5f});
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(o[2 * i], 1.0, 1e-6);
    EXPECT_NEAR(o[2 * i + 1], 2.0, 1e-6);
  }
}

TEST(PairBiasAttention, RowGroupsPickTheirBias) {
  // R = 4 rows, G = 2: rows 0, 1 use bias group 0 and rows 2, 3 group 1. Equal q, k, v in
  // every row, so a row's output depends on its group only.
  const uint64_t seed = test::seed_for("pair_bias_attention_groups");
  const int64_t R = 4, S = 5, H = 2, D = 8;
  Tensor row_q = Tensor::empty({1, S, H, D}, DType::f32), row_k = Tensor::empty({1, S, H, D}, DType::f32);
  Tensor row_v = Tensor::empty({1, S, H, D}, DType::f32);
  fill_uniform(row_q.view(), seed, 1ull << 40, -2.f, 2.f);
  fill_uniform(row_k.view(), seed, 2ull << 40, -2.f, 2.f);
  fill_uniform(row_v.view(), seed, 3ull << 40, -1.f, 1.f);
  Tensor q = Tensor::empty({R, S, H, D}, DType::f32), k = q.clone(), v = q.clone();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < S * H * D; ++i) {
      q.data_as<float>()[r * S * H * D + i] = row_q.data_as<float>()[i];
      k.data_as<float>()[r * S * H * D + i] = row_k.data_as<float>()[i];
      v.data_as<float>()[r * S * H * D + i] = row_v.data_as<float>()[i];
    }
  Tensor bias = Tensor::empty({2, H, S, S}, DType::f32);
  fill_uniform(bias.view(), seed, 4ull << 40, -3.f, 3.f);
  Tensor out = Tensor::empty({R, S, H, D}, DType::f32);
  expect_ok(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, TensorView{}, 0.3f});
  // Each group alone, as a one-row call with G = 1.
  for (int64_t g = 0; g < 2; ++g) {
    Tensor one = Tensor::empty({1, S, H, D}, DType::f32);
    const TensorView bias_g = make_view(bias.data_as<float>() + g * H * S * S, {1, H, S, S}, DType::f32, Device::cpu());
    expect_ok(DeviceType::cpu, PairBiasAttentionArgs{one, row_q, row_k, row_v, bias_g, TensorView{}, 0.3f});
    for (int64_t r = 2 * g; r < 2 * g + 2; ++r)
      for (int64_t i = 0; i < S * H * D; ++i)
        EXPECT_EQ(out.data_as<float>()[r * S * H * D + i], one.data_as<float>()[i]) << "row " << r << " element " << i;
  }
  // The two groups' biases differ, so the rows of different groups differ.
  double diff = 0;
  for (int64_t i = 0; i < S * H * D; ++i)
    diff += std::abs(out.data_as<float>()[i] - out.data_as<float>()[2 * S * H * D + i]);
  EXPECT_GT(diff, 1e-3);
}

TEST(PairBiasAttention, FullyMaskedRowWritesZerosAndMaskedKeysCarryNoWeight) {
  const uint64_t seed = test::seed_for("pair_bias_attention_mask");
  const int64_t R = 2, S = 6, H = 1, D = 16;
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor q = Tensor::empty({R, S, H, D}, dt), k = q.clone(), v = q.clone();
    fill_uniform(q.view(), seed, 1ull << 40, -2.f, 2.f);
    fill_uniform(k.view(), seed, 2ull << 40, -2.f, 2.f);
    fill_uniform(v.view(), seed, 3ull << 40, -1.f, 1.f);
    Tensor bias = Tensor::empty({1, H, S, S}, dt);
    fill_uniform(bias.view(), seed, 4ull << 40, -1.f, 1.f);
    // Row 0 keeps keys 0..2 only, the bias of key 5 huge; row 1 keeps none.
    for (int64_t i = 0; i < S; ++i) set(bias.view(), 1e4, 0, 0, i, 5);
    Tensor mask = Tensor::zeros({R, S}, dt);
    for (int64_t j = 0; j < 3; ++j) set(mask.view(), 1.0, 0, j);
    Tensor out = Tensor::empty({R, S, H, D}, dt);
    expect_ok(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, mask, 0.25f});
    for (int64_t i = 0; i < S; ++i)
      for (int64_t c = 0; c < D; ++c) {
        EXPECT_EQ(get(out.view(), 1, i, 0, c), 0.0) << "masked row, query " << i;
        // Row 0: a convex combination of v's first three keys (within a rounding).
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t j = 0; j < 3; ++j) lo = std::min(lo, get(v.view(), 0, j, 0, c)), hi = std::max(hi, get(v.view(), 0, j, 0, c));
        EXPECT_GE(get(out.view(), 0, i, 0, c), lo - 1e-2);
        EXPECT_LE(get(out.view(), 0, i, 0, c), hi + 1e-2);
      }
  }
}

TEST(PairBiasAttention, OracleCheckPassesOnEveryTestWorkload) {
  const OpDef& def = OpRegistry::global().def(PairBiasAttentionArgs::kName);
  for (const Json& w : def.test_workloads) {
    const auto r = bench::check_op(def, w, test::seed_for("pair_bias_attention_oracle" + w.dump()), DeviceType::cpu);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

TEST(PairBiasAttention, NamedErrors) {
  const int64_t R = 4, S = 3, H = 2, D = 8;
  Tensor q = Tensor::zeros({R, S, H, D}, DType::bf16), k = q.clone(), v = q.clone(), out = q.clone();
  Tensor bias = Tensor::zeros({2, H, S, S}, DType::bf16), mask = Tensor::zeros({R, S}, DType::bf16);
  expect_ok(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, mask, 0.5f});
  Tensor bias3 = Tensor::zeros({3, H, S, S}, DType::bf16);
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias3, mask, 0.5f}, "groups must divide");
  Tensor bias_wrong = Tensor::zeros({2, H, S, S + 1}, DType::bf16);
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias_wrong, mask, 0.5f}, "bias must be [G, 2, 3, 3]");
  Tensor k_short = Tensor::zeros({R, S - 1, H, D}, DType::bf16);
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, q, k_short, v, bias, mask, 0.5f}, "k must have the shape of q");
  Tensor v16 = Tensor::zeros({R, S, H, D}, DType::f16);
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v16, bias, mask, 0.5f}, "v must be bf16");
  Tensor mask_wrong = Tensor::zeros({R, S + 1}, DType::bf16);
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, mask_wrong, 0.5f}, "mask must be [4, 3]");
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, q, k, v, bias, mask, 0.f}, "scale must be finite and positive");
  expect_invalid(DeviceType::cpu,
                 PairBiasAttentionArgs{out, q, k, v, bias, mask, std::numeric_limits<float>::quiet_NaN()}, "scale");
  Tensor qi = Tensor::zeros({R, S, H, D}, DType::i32);
  expect_invalid(DeviceType::cpu, PairBiasAttentionArgs{out, qi, k, v, bias, mask, 0.5f}, "q must be one of");
}

}  // namespace
}  // namespace fk
