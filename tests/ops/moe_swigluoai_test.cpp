// fused_experts_swigluoai beyond the generic oracle test: the op against transformers'
// GptOssExperts computed here token by token in its own layout (gate_up_proj [E, H, 2I]
// with gate and up in alternating columns, down_proj [E, I, H]), de-interleaved into the
// op's w13 [E, 2I, H] as the gpt-oss loader does; the clamps on both sides of the limit;
// slots routed nowhere; named errors (CPU implementation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/ops/moe_swigluoai.h"
#include "fk/random.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::FusedExpertsSwigluOaiArgs;
using test::expect_invalid;
using test::expect_ok;

struct Experts {
  int64_t T, k, E, H, I;
  Tensor hidden, gate_up_hf, gate_up_bias_hf, down_hf, down_bias, w13, w13_bias, w2, weights, ids;
};

// Random experts in transformers' layout (f32 values rounded to `dt`) and the op's layout.
Experts make_experts(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I, DType dt, uint64_t seed, float scale) {
  Experts x{T, k, E, H, I};
  auto uniform = [&](const Shape& s, uint64_t stream, float lo, float hi) {
    Tensor t = Tensor::empty(s, dt);
    fill_uniform(t.view(), seed, stream << 40, lo, hi);
    return t;
  };
  x.hidden = uniform({T, H}, 1, -2.f, 2.f);
  x.gate_up_hf = uniform({E, H, 2 * I}, 2, -scale, scale);
  x.gate_up_bias_hf = uniform({E, 2 * I}, 3, -0.5f, 0.5f);
  x.down_hf = uniform({E, I, H}, 4, -scale, scale);
  x.down_bias = uniform({E, H}, 5, -0.5f, 0.5f);
  x.weights = Tensor::empty({T, k}, DType::f32);
  fill_uniform(x.weights.view(), seed, 6ull << 40, 0.f, 1.f);
  x.ids = Tensor::empty({T, k}, DType::i32);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) x.ids.data_as<int32_t>()[t * k + j] = static_cast<int32_t>((t * 3 + j * 5) % E);
  // The loader's conversion: w13[e, i, h] = gate column 2i, w13[e, I + i, h] = up column 2i + 1.
  x.w13 = Tensor::empty({E, 2 * I, H}, dt);
  x.w13_bias = Tensor::empty({E, 2 * I}, dt);
  x.w2 = Tensor::empty({E, H, I}, dt);
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t i = 0; i < I; ++i)
      for (int part = 0; part < 2; ++part) {
        const int64_t row = part * I + i, col = 2 * i + part;
        set(x.w13_bias.view(), get(x.gate_up_bias_hf.view(), e, col), e, row);
        for (int64_t h = 0; h < H; ++h) set(x.w13.view(), get(x.gate_up_hf.view(), e, h, col), e, row, h);
      }
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < I; ++i) set(x.w2.view(), get(x.down_hf.view(), e, i, h), e, h, i);
  }
  return x;
}

// GptOssExperts.forward for one token, in double, over transformers' tensors.
std::vector<double> hf_expert_sum(const Experts& x, int64_t t, double alpha, double limit) {
  std::vector<double> out(static_cast<size_t>(x.H), 0.0);
  for (int64_t j = 0; j < x.k; ++j) {
    const int64_t e = x.ids.data_as<int32_t>()[t * x.k + j];
    if (e < 0 || e >= x.E) continue;
    std::vector<double> gate_up(static_cast<size_t>(2 * x.I));
    for (int64_t c = 0; c < 2 * x.I; ++c) {
      double s = get(x.gate_up_bias_hf.view(), e, c);
      for (int64_t h = 0; h < x.H; ++h) s += get(x.hidden.view(), t, h) * get(x.gate_up_hf.view(), e, h, c);
      gate_up[static_cast<size_t>(c)] = s;
    }
    std::vector<double> glu(static_cast<size_t>(x.I));
    for (int64_t i = 0; i < x.I; ++i) {
      const double gate = std::min(gate_up[static_cast<size_t>(2 * i)], limit);
      const double up = std::clamp(gate_up[static_cast<size_t>(2 * i + 1)], -limit, limit);
      glu[static_cast<size_t>(i)] = (up + 1.0) * gate * (1.0 / (1.0 + std::exp(-gate * alpha)));
    }
    const double w = x.weights.data_as<float>()[t * x.k + j];
    for (int64_t h = 0; h < x.H; ++h) {
      double y = get(x.down_bias.view(), e, h);
      for (int64_t i = 0; i < x.I; ++i) y += glu[static_cast<size_t>(i)] * get(x.down_hf.view(), e, i, h);
      out[static_cast<size_t>(h)] += w * y;
    }
  }
  return out;
}

void expect_matches_hf(Experts& x, float alpha, float limit) {
  Tensor out = Tensor::empty({x.T, x.H}, DType::f32 == x.hidden.dtype() ? DType::f32 : x.hidden.dtype());
  expect_ok(DeviceType::cpu, FusedExpertsSwigluOaiArgs{out, x.hidden, x.w13, x.w13_bias, x.w2, x.down_bias, x.weights,
                                                       x.ids, Tensor::empty({16}, DType::u8), alpha, limit});
  for (int64_t t = 0; t < x.T; ++t) {
    const std::vector<double> want = hf_expert_sum(x, t, alpha, limit);
    for (int64_t h = 0; h < x.H; ++h) {
      const double w = want[static_cast<size_t>(h)];
      // One bf16 rounding of the output.
      EXPECT_NEAR(get(out.view(), t, h), w, 1e-6 + 4e-3 * std::abs(w)) << t << " " << h;
    }
  }
}

TEST(FusedExpertsSwigluOai, MatchesTransformersLayoutAndFormula) {
  Experts x = make_experts(6, 2, 4, 24, 10, DType::bf16, test::seed_for("swigluoai_hf"), 0.3f);
  expect_matches_hf(x, ops::kSwigluOaiAlpha, ops::kSwigluOaiLimit);
}

TEST(FusedExpertsSwigluOai, ClampsGateAboveAndUpOnBothSides) {
  // Large weights push gate and up far past a small limit in both directions.
  Experts x = make_experts(5, 3, 3, 16, 8, DType::bf16, test::seed_for("swigluoai_clamp"), 2.0f);
  int clamped_up_low = 0, clamped_up_high = 0, clamped_gate = 0;
  for (int64_t t = 0; t < x.T; ++t)
    for (int64_t c = 0; c < 2 * x.I; ++c) {
      const int64_t e = x.ids.data_as<int32_t>()[t * x.k];
      double s = get(x.gate_up_bias_hf.view(), e, c);
      for (int64_t h = 0; h < x.H; ++h) s += get(x.hidden.view(), t, h) * get(x.gate_up_hf.view(), e, h, c);
      if (c % 2 == 0) clamped_gate += s > 1.0;
      else clamped_up_low += s < -1.0, clamped_up_high += s > 1.0;
    }
  ASSERT_GT(clamped_gate, 0);
  ASSERT_GT(clamped_up_low, 0);
  ASSERT_GT(clamped_up_high, 0);
  expect_matches_hf(x, 1.0f, 1.0f);
}

TEST(FusedExpertsSwigluOai, SlotsRoutedNowhereAddNothing) {
  Experts x = make_experts(4, 2, 3, 16, 8, DType::bf16, test::seed_for("swigluoai_dropped"), 0.3f);
  x.ids.data_as<int32_t>()[1] = -1;  // token 0's second slot
  x.ids.data_as<int32_t>()[4] = 3;   // token 2's first slot: past the experts
  x.ids.data_as<int32_t>()[5] = -1;  // token 2: nothing at all
  expect_matches_hf(x, ops::kSwigluOaiAlpha, ops::kSwigluOaiLimit);
  Tensor out = Tensor::empty({x.T, x.H}, DType::bf16);
  expect_ok(DeviceType::cpu, FusedExpertsSwigluOaiArgs{out, x.hidden, x.w13, x.w13_bias, x.w2, x.down_bias, x.weights,
                                                       x.ids, Tensor::empty({16}, DType::u8), 1.702f, 7.f});
  for (int64_t h = 0; h < x.H; ++h) EXPECT_EQ(get(out.view(), 2, h), 0.0);
}

TEST(FusedExpertsSwigluOai, NamedErrors) {
  Experts x = make_experts(2, 2, 3, 16, 8, DType::bf16, 1, 0.3f);
  const Tensor out = Tensor::empty({2, 16}, DType::bf16), ws = Tensor::empty({16}, DType::u8);
  auto args = [&] {
    return FusedExpertsSwigluOaiArgs{out, x.hidden, x.w13, x.w13_bias, x.w2, x.down_bias, x.weights, x.ids, ws,
                                     1.702f, 7.f};
  };
  auto a = args();
  a.w13_bias = Tensor::empty({3, 8}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "w13_bias must be [3, 16]");
  a = args();
  a.w2_bias = Tensor::empty({2, 16}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "w2_bias must be [3, 16]");
  a = args();
  a.w2 = Tensor::empty({3, 8, 16}, DType::bf16);  // transformers' [E, I, H], not transposed
  expect_invalid(DeviceType::cpu, a, "w2 must be [3, 16, 8]");
  a = args();
  a.w13_bias = Tensor::empty({3, 16}, DType::f32);
  expect_invalid(DeviceType::cpu, a, "w13_bias must be bf16");
  a = args();
  a.limit = 0.f;
  expect_invalid(DeviceType::cpu, a, "limit finite and > 0");
  a = args();
  a.topk_ids = Tensor::empty({3, 2}, DType::i32);
  a.topk_weights = Tensor::empty({3, 2}, DType::f32);
  expect_invalid(DeviceType::cpu, a, "topk_ids must be [2");
}

}  // namespace
}  // namespace fk
