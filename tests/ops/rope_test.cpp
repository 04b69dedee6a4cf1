// The rope ops on the CPU: the cache builder against the HF formulas (expected values
// computed here, independently, in double), neox vs gptj on a hand-made example, partial
// rotary, strided views of a fused qkv buffer, qk_norm_rope against rms_norm + rope, and
// errors. The generic oracle tests of every test workload live in op_oracle_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/norm.h"
#include "fk/ops/rope.h"
#include "fk/rope_cache.h"
#include "ops/rope_test_util.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::RopeStyle;
using test::at;
using test::host_tensor;

constexpr double kPi = 3.14159265358979323846;

// ---- cache builder ------------------------------------------------------------------

Tensor cache_f64(const RopeConfig& c, int64_t max_pos, int64_t rot_dim) {
  Tensor t = Tensor::empty({max_pos, rot_dim}, DType::f64);
  ops::RopeCosSinCacheArgs a{};
  a.cos_sin_cache = t.view();
  a.config = c;
  call_op(a, DeviceType::cpu, nullptr);
  return t;
}

// theta^(-2i/rot), written differently from the implementation on purpose.
double base_inv(double theta, int rot, int i) { return std::exp(-(2.0 * i / rot) * std::log(theta)); }

// Every pair of the given rows against cos/sin(p * inv[i]) * attn, and rope_inv_freq too.
void expect_cache(const RopeConfig& c, int rot, const std::vector<double>& inv, double attn,
                  std::initializer_list<int64_t> rows, int64_t max_pos) {
  const Tensor cache = cache_f64(c, max_pos, rot);
  const int half = rot / 2;
  for (int i = 0; i < half; ++i) EXPECT_NEAR(rope_inv_freq(c, rot, i), inv[i], 1e-13 * inv[i]) << "pair " << i;
  EXPECT_NEAR(rope_attention_factor(c), attn, 1e-15);
  for (int64_t p : rows) {
    for (int i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inv[i];
      EXPECT_NEAR(get(cache.view(), p, i), std::cos(angle) * attn, 1e-9) << "pos " << p << " pair " << i;
      EXPECT_NEAR(get(cache.view(), p, half + i), std::sin(angle) * attn, 1e-9) << "pos " << p << " pair " << i;
    }
  }
}

TEST(RopeCache, DefaultFrequencies) {
  RopeConfig c;  // theta 10000, no scaling
  EXPECT_DOUBLE_EQ(rope_inv_freq(c, 128, 0), 1.0);
  EXPECT_NEAR(rope_inv_freq(c, 128, 32), 0.01, 1e-17);  // 10000^(-64/128)
  std::vector<double> inv(64);
  for (int i = 0; i < 64; ++i) inv[i] = base_inv(10000.0, 128, i);
  expect_cache(c, 128, inv, 1.0, {0, 1, 7, 1000, 32767}, 32768);
  // Row 0 is the identity rotation.
  const Tensor cache = cache_f64(c, 2, 8);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(get(cache.view(), 0, i), 1.0);
    EXPECT_EQ(get(cache.view(), 0, 4 + i), 0.0);
  }
}

TEST(RopeCache, LinearDividesFrequenciesByFactor) {
  RopeConfig c;
  c.theta = 1000000.0;
  c.scaling = RopeScalingType::linear;
  c.factor = 2.5;
  std::vector<double> inv(32);
  for (int i = 0; i < 32; ++i) inv[i] = base_inv(1e6, 64, i) / 2.5;
  expect_cache(c, 64, inv, 1.0, {0, 3, 250, 4095}, 4096);
}

TEST(RopeCache, Llama3KeepsHighScalesLowSmoothsBetween) {
  // Llama-3.1: theta 500000, factor 8, low/high_freq_factor 1/4, old context 8192. Pair
  // wavelengths 2*pi/inv: pair 28 = 1956.5 < 2048 = 8192/4 (kept), pair 29 = 2401.7 and
  // pair 34 = 6695.1 lie in [2048, 8192] (smoothed), pair 35 = 8218.7 > 8192 (divided by 8).
  RopeConfig c;
  c.theta = 500000.0;
  c.scaling = RopeScalingType::llama3;
  c.factor = 8.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.original_max_position_embeddings = 8192;
  std::vector<double> inv(64);
  for (int i = 0; i < 64; ++i) {
    const double b = base_inv(500000.0, 128, i);
    const double wavelen = 2 * kPi / b;
    if (i <= 28) {
      EXPECT_LT(wavelen, 2048.0);
      inv[i] = b;
    } else if (i >= 35) {
      EXPECT_GT(wavelen, 8192.0);
      inv[i] = b / 8.0;
    } else {
      const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
      EXPECT_GT(smooth, 0.0);
      EXPECT_LT(smooth, 1.0);
      inv[i] = (1 - smooth) * b / 8.0 + smooth * b;
    }
  }
  EXPECT_NEAR(2 * kPi / base_inv(500000.0, 128, 29), 2401.738, 1e-3);
  expect_cache(c, 128, inv, 1.0, {0, 1, 8191, 8192, 32767}, 32768);
}

TEST(RopeCache, YarnQwen3RampAndMscale) {
  // Qwen3 with YaRN x4: theta 1e6, rot 128, original context 32768, beta 32 / 1.
  // Correction dims: 128 ln(32768 / (32 * 2pi)) / (2 ln 1e6) = 23.596 -> floor 23,
  //                  128 ln(32768 / (1 * 2pi))  / (2 ln 1e6) = 39.651 -> ceil 40.
  RopeConfig c;
  c.theta = 1000000.0;
  c.scaling = RopeScalingType::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  double low = 0, high = 0;
  rope_yarn_correction_range(c, 128, &low, &high);
  EXPECT_EQ(low, 23.0);
  EXPECT_EQ(high, 40.0);
  std::vector<double> inv(64);
  for (int i = 0; i < 64; ++i) {
    const double b = base_inv(1e6, 128, i);
    const double ramp = i <= 23 ? 0.0 : i >= 40 ? 1.0 : (i - 23.0) / 17.0;
    inv[i] = b * (1 - ramp) + (b / 4.0) * ramp;  // ramp 0: extrapolate (keep), 1: interpolate (/factor)
  }
  EXPECT_NEAR(inv[10], base_inv(1e6, 128, 10), 1e-18);
  EXPECT_NEAR(inv[50], base_inv(1e6, 128, 50) / 4, 1e-18);
  const double attn = 0.1 * std::log(4.0) + 1.0;  // 1.1386
  EXPECT_NEAR(attn, 1.138629436, 1e-9);
  expect_cache(c, 128, inv, attn, {0, 1, 20000, 32767}, 32768);
}

TEST(RopeCache, YarnUntruncatedWithMscaleAllDim) {
  // DeepSeek-style: theta 10000, rot 64, original 4096, factor 40, mscale 1 / mscale_all_dim
  // 0.8, correction range not truncated: [10.4722, 22.5134].
  RopeConfig c;
  c.scaling = RopeScalingType::yarn;
  c.factor = 40.0;
  c.original_max_position_embeddings = 4096;
  c.mscale = 1.0;
  c.mscale_all_dim = 0.8;
  c.yarn_truncate = 0;
  double low = 0, high = 0;
  rope_yarn_correction_range(c, 64, &low, &high);
  const double lo = 64 * std::log(4096 / (32 * 2 * kPi)) / (2 * std::log(10000.0));
  const double hi = 64 * std::log(4096 / (1 * 2 * kPi)) / (2 * std::log(10000.0));
  EXPECT_NEAR(lo, 10.4722408, 1e-6);
  EXPECT_NEAR(hi, 22.5134406, 1e-6);
  EXPECT_NEAR(low, lo, 1e-12);
  EXPECT_NEAR(high, hi, 1e-12);
  std::vector<double> inv(32);
  for (int i = 0; i < 32; ++i) {
    const double ramp = std::min(1.0, std::max(0.0, (i - lo) / (hi - lo)));
    const double b = base_inv(10000.0, 64, i);
    inv[i] = b * (1 - ramp) + (b / 40.0) * ramp;
  }
  const double attn = (0.1 * 1.0 * std::log(40.0) + 1) / (0.1 * 0.8 * std::log(40.0) + 1);
  expect_cache(c, 64, inv, attn, {0, 5, 1234, 4095}, 4096);
}

TEST(RopeCache, YarnAttentionFactorOverridesAndSmallFactor) {
  RopeConfig c;
  c.scaling = RopeScalingType::yarn;
  c.factor = 8.0;
  c.attention_factor = 1.25;
  EXPECT_DOUBLE_EQ(rope_attention_factor(c), 1.25);
  c.attention_factor = 0;
  c.factor = 1.0;  // get_mscale(1) = 1: no magnitude change
  EXPECT_DOUBLE_EQ(rope_attention_factor(c), 1.0);
  c.mscale = 0.707;  // only one of mscale / mscale_all_dim set: plain get_mscale(factor)
  c.factor = 16.0;
  EXPECT_DOUBLE_EQ(rope_attention_factor(c), 0.1 * std::log(16.0) + 1.0);
}

TEST(RopeCache, BuilderRoundsOnceToTheCacheDtype) {
  RopeConfig c;
  c.theta = 500000.0;
  c.scaling = RopeScalingType::llama3;
  c.factor = 8.0;
  const Tensor exact = cache_f64(c, 300, 64);
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    const Tensor cache = make_rope_cos_sin_cache(c, 300, 64, dt);
    ASSERT_EQ(cache.dtype(), dt);
    for (int64_t i = 0; i < exact.numel(); ++i) {
      double rounded = 0;
      std::vector<char> buf(8);
      store_element(buf.data(), dt, at(exact, i));
      rounded = load_element(buf.data(), dt);
      ASSERT_EQ(at(cache, i), rounded) << dtype_name(dt) << " element " << i;
    }
  }
}

TEST(RopeCache, ScalingNames) {
  for (auto t : {RopeScalingType::none, RopeScalingType::linear, RopeScalingType::llama3, RopeScalingType::yarn})
    EXPECT_EQ(rope_scaling_from_name(rope_scaling_name(t)), t);
  EXPECT_EQ(rope_scaling_from_name("default"), RopeScalingType::none);
  EXPECT_THROW(rope_scaling_from_name("dynamic"), Error);
}

// ---- rotary_embedding semantics ----------------------------------------------------

// Cache [2, 4]: row 0 the identity, row 1 pair 0 at 90 degrees, pair 1 at 180 degrees.
Tensor hand_cache() { return host_tensor({2, 4}, DType::f32, {1, 1, 0, 0, /**/ 0, -1, 1, 0}); }

std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = at(t, i);
  return v;
}

TEST(RotaryEmbedding, NeoxRotatesHalvesGptjRotatesInterleavedPairs) {
  // One q head and one k head of 4 dims, token 0 at position 1, token 1 at position 0.
  //   neox pairs (x0, x2), (x1, x3); gptj pairs (x0, x1), (x2, x3).
  //   90 degrees: (a, b) -> (-b, a); 180 degrees: (a, b) -> (-a, -b).
  struct Case {
    RopeStyle style;
    std::vector<double> q, k;
  };
  const std::vector<Case> cases = {
      {RopeStyle::neox, {-3, -2, 1, -4}, {-7, -6, 5, -8}},
      {RopeStyle::gptj, {-2, 1, -3, -4}, {-6, 5, -7, -8}},
  };
  for (const Case& c : cases) {
    Tensor pos = host_tensor({2}, DType::i64, {1, 0});
    Tensor q = host_tensor({2, 4}, DType::f32, {1, 2, 3, 4, 1, 2, 3, 4});
    Tensor k = host_tensor({2, 4}, DType::f32, {5, 6, 7, 8, 5, 6, 7, 8});
    Tensor cache = hand_cache();
    call_op(test::rope_args(pos, q, k, cache, 4, c.style), DeviceType::cpu, nullptr);
    const auto qv = values(q), kv = values(k);
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(qv[d], c.q[d]) << ops::rope_style_name(c.style) << " q dim " << d;
      EXPECT_EQ(kv[d], c.k[d]) << ops::rope_style_name(c.style) << " k dim " << d;
      EXPECT_EQ(qv[4 + d], d + 1.0) << "position 0 must not rotate";
      EXPECT_EQ(kv[4 + d], d + 5.0) << "position 0 must not rotate";
    }
  }
}

// Reference rotation of one head held as doubles (the definition in fk/ops/rope.h).
void rotate(std::vector<double>& x, const Tensor& cache, int64_t pos, RopeStyle style) {
  const int64_t rot = cache.size(1), half = rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = style == RopeStyle::neox ? i : 2 * i, i2 = style == RopeStyle::neox ? i + half : 2 * i + 1;
    const double c = get(cache.view(), pos, i), s = get(cache.view(), pos, half + i);
    const double x1 = x[i1], x2 = x[i2];
    x[i1] = x1 * c - x2 * s;
    x[i2] = x2 * c + x1 * s;
  }
}

TEST(RotaryEmbedding, PartialRotaryLeavesTheTailUntouched) {
  const uint64_t seed = test::seed_for("rope_partial");
  constexpr int64_t T = 3, H = 2, D = 16, rot = 8;
  for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
    Tensor pos = host_tensor({T}, DType::i32, {0, 5, 2});
    Tensor cache = make_rope_cos_sin_cache(RopeConfig{}, 6, rot);
    Tensor q = test::random_host({T, H * D}, DType::f32, seed, 1);
    Tensor k = test::random_host({T, D}, DType::f32, seed, 2);
    const Tensor q0 = q.clone(), k0 = k.clone();
    call_op(test::rope_args(pos, q, k, cache, D, style), DeviceType::cpu, nullptr);
    for (const auto& [now, before, heads] : {std::tuple{q, q0, H}, std::tuple{k, k0, int64_t{1}}}) {
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t base = (t * heads + h) * D;
          std::vector<double> x(D);
          for (int64_t d = 0; d < D; ++d) x[d] = at(before, base + d);
          rotate(x, cache, get_index(pos.view(), t), style);
          for (int64_t d = 0; d < rot; ++d) EXPECT_NEAR(at(now, base + d), x[d], 1e-6) << "t " << t << " d " << d;
          for (int64_t d = rot; d < D; ++d) EXPECT_EQ(at(now, base + d), at(before, base + d)) << "tail dim " << d;
        }
      }
    }
  }
}

TEST(RotaryEmbedding, RelativePositionsOnly) {
  // With a real cache, <rope(q, m), rope(k, n)> depends on m - n only, in both styles: the
  // check that each style pairs the dims the cache's cos/sin columns belong to.
  const uint64_t seed = test::seed_for("rope_relative");
  constexpr int64_t D = 16;
  const Tensor cache = cache_f64(RopeConfig{}, 64, D);
  const Tensor q0 = test::to_dtype(test::random_host({1, D}, DType::f32, seed, 1), DType::f64);
  const Tensor k0 = test::to_dtype(test::random_host({1, D}, DType::f32, seed, 2), DType::f64);
  for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
    auto score = [&](int64_t m, int64_t n) {
      Tensor q = q0.clone(), k = k0.clone(), unused = Tensor::empty({1, 0}, DType::f64);
      Tensor pm = host_tensor({1}, DType::i64, {double(m)}), pn = host_tensor({1}, DType::i64, {double(n)});
      call_op(test::rope_args(pm, q, unused, cache, D, style), DeviceType::cpu, nullptr);
      call_op(test::rope_args(pn, k, unused, cache, D, style), DeviceType::cpu, nullptr);
      double s = 0;
      for (int64_t d = 0; d < D; ++d) s += at(q, d) * at(k, d);
      return s;
    };
    EXPECT_NEAR(score(5, 2), score(40, 37), 1e-9) << ops::rope_style_name(style);
    EXPECT_NEAR(score(0, 9), score(50, 59), 1e-9) << ops::rope_style_name(style);
    EXPECT_GT(std::fabs(score(5, 2) - score(5, 5)), 1e-3) << ops::rope_style_name(style);
  }
}

// q/k as strided views of a fused qkv buffer give the same result as contiguous copies,
// and the v part is not touched.
template <class MakeArgs>
void expect_fused_matches_contiguous(const MakeArgs& make_args, DType dtype, bool rank3) {
  const uint64_t seed = test::seed_for("rope_fused");
  constexpr int64_t T = 5, Hq = 4, Hk = 2, D = 16;
  Tensor qkv = test::random_host({T, (Hq + 2 * Hk) * D}, dtype, seed, 1);
  const Tensor before = qkv.clone();
  Tensor q = Tensor::empty({T, Hq * D}, dtype), k = Tensor::empty({T, Hk * D}, dtype);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t d = 0; d < Hq * D; ++d) set(q.view(), get(qkv.view(), t, d), t, d);
    for (int64_t d = 0; d < Hk * D; ++d) set(k.view(), get(qkv.view(), t, Hq * D + d), t, d);
  }
  const test::FusedQkv views = test::fused_views(qkv, Hq, Hk, D, rank3);
  call_op(make_args(views.q, views.k), DeviceType::cpu, nullptr);
  call_op(make_args(q.view(), k.view()), DeviceType::cpu, nullptr);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t d = 0; d < Hq * D; ++d) ASSERT_EQ(get(qkv.view(), t, d), get(q.view(), t, d)) << "q t " << t;
    for (int64_t d = 0; d < Hk * D; ++d) ASSERT_EQ(get(qkv.view(), t, Hq * D + d), get(k.view(), t, d)) << "k t " << t;
    for (int64_t d = (Hq + Hk) * D; d < (Hq + 2 * Hk) * D; ++d)
      ASSERT_EQ(get(qkv.view(), t, d), get(before.view(), t, d)) << "v must be untouched";
  }
}

TEST(RotaryEmbedding, StridedFusedQkvViews) {
  Tensor pos = host_tensor({5}, DType::i64, {3, 0, 7, 7, 1});
  Tensor cache = make_rope_cos_sin_cache(RopeConfig{}, 8, 8);  // partial: rot 8 of 16
  for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
    for (bool rank3 : {false, true}) {
      for (DType dt : {DType::bf16, DType::f32}) {
        expect_fused_matches_contiguous(
            [&](const TensorView& q, const TensorView& k) { return test::rope_args(pos, q, k, cache, 16, style); }, dt,
            rank3);
      }
    }
  }
}

TEST(QkNormRope, StridedFusedQkvViews) {
  Tensor pos = host_tensor({5}, DType::i32, {3, 0, 7, 7, 1});
  Tensor cache = make_rope_cos_sin_cache(RopeConfig{}, 8, 8);
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor qw = test::random_host({16}, dt, 7, 1, 0.5f, 1.5f), kw = test::random_host({16}, dt, 7, 2, 0.5f, 1.5f);
    for (bool rank3 : {false, true}) {
      expect_fused_matches_contiguous(
          [&](const TensorView& q, const TensorView& k) {
            return test::qk_norm_rope_args(pos, q, k, qw, kw, cache, 16, RopeStyle::neox, 1e-6f);
          },
          dt, rank3);
    }
  }
}

// ---- qk_norm_rope ---------------------------------------------------------------------

TEST(QkNormRope, HandMadeHead) {
  // q = [1, 2, 3, 4]: mean square 7.5; weight [1, 1, 2, 0.5]; then the 90/180-degree
  // rotation of hand_cache at position 1 (neox pairs (0, 2), (1, 3)).
  const double inv = 1.0 / std::sqrt(7.5 + 1e-6);
  const double n0 = 1 * inv, n1 = 2 * inv, n2 = 3 * inv * 2, n3 = 4 * inv * 0.5;
  const std::vector<double> expected = {-n2, -n1, n0, -n3};
  Tensor pos = host_tensor({1}, DType::i64, {1});
  Tensor q = host_tensor({1, 4}, DType::f64, {1, 2, 3, 4});
  Tensor k = Tensor::empty({1, 0}, DType::f64);
  Tensor w = host_tensor({4}, DType::f32, {1, 1, 2, 0.5});
  call_op(test::qk_norm_rope_args(pos, q, k, w, w, hand_cache(), 4, RopeStyle::neox, 1e-6f), DeviceType::cpu, nullptr);
  for (int d = 0; d < 4; ++d) EXPECT_NEAR(at(q, d), expected[d], 1e-7) << "dim " << d;  // eps is a float
}

TEST(QkNormRope, EqualsRmsNormPerHeadThenRope) {
  // The fused op against the unfused path built from the registry's own ops, all in f64
  // (no rounding in between, as the oracle). Partial rotary: the tail is normalised only.
  const uint64_t seed = test::seed_for("qk_norm_rope_unfused");
  constexpr int64_t T = 4, Hq = 3, Hk = 2, D = 32, rot = 16;
  const float eps = 1e-6f;
  for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
    Tensor pos = host_tensor({T}, DType::i64, {9, 0, 31, 4});
    Tensor cache = make_rope_cos_sin_cache(RopeConfig{}, 32, rot);
    Tensor q32 = test::random_host({T, Hq * D}, DType::f32, seed, 1), k32 = test::random_host({T, Hk * D}, DType::f32, seed, 2);
    Tensor qw = test::random_host({D}, DType::f32, seed, 3, 0.5f, 1.5f), kw = test::random_host({D}, DType::f32, seed, 4, 0.5f, 1.5f);

    Tensor q_fused = test::to_dtype(q32, DType::f64), k_fused = test::to_dtype(k32, DType::f64);
    call_op(test::qk_norm_rope_args(pos, q_fused, k_fused, qw, kw, cache, D, style, eps), DeviceType::cpu, nullptr);

    auto norm_heads = [&](const Tensor& x32, const Tensor& w, int64_t heads) {
      Tensor out = Tensor::empty({T * heads, D}, DType::f64);
      ops::RmsNormArgs a{};
      a.out = out.view();
      a.input = x32.reshape({T * heads, D}).view();
      a.weight = w.view();
      a.eps = eps;
      call_op(a, DeviceType::cpu, nullptr);
      return out.reshape({T, heads * D});
    };
    Tensor q_unfused = norm_heads(q32, qw, Hq), k_unfused = norm_heads(k32, kw, Hk);
    call_op(test::rope_args(pos, q_unfused, k_unfused, cache, D, style), DeviceType::cpu, nullptr);

    for (int64_t i = 0; i < q_fused.numel(); ++i) ASSERT_NEAR(at(q_fused, i), at(q_unfused, i), 1e-12) << i;
    for (int64_t i = 0; i < k_fused.numel(); ++i) ASSERT_NEAR(at(k_fused, i), at(k_unfused, i), 1e-12) << i;
  }
}

// ---- errors ---------------------------------------------------------------------------

template <class Args>
void expect_error(const Args& a, const std::string& needle) {
  try {
    call_op(a, DeviceType::cpu, nullptr);
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

struct ErrorCase {
  Tensor pos = host_tensor({2}, DType::i64, {0, 3});
  Tensor q = Tensor::zeros({2, 2 * 8}, DType::bf16);
  Tensor k = Tensor::zeros({2, 8}, DType::bf16);
  Tensor cache = Tensor::zeros({4, 8}, DType::f32);
  Tensor w = Tensor::zeros({8}, DType::bf16);
  ops::RotaryEmbeddingArgs rope() const { return test::rope_args(pos, q, k, cache, 8, RopeStyle::neox); }
  ops::QkNormRopeArgs qk() const { return test::qk_norm_rope_args(pos, q, k, w, w, cache, 8, RopeStyle::neox, 1e-6f); }
};

TEST(RotaryEmbedding, BadInputsAreClearErrors) {
  ErrorCase c;
  auto a = c.rope();
  a.head_size = 0;
  expect_error(a, "head_size must be positive");
  a = c.rope();
  a.style = static_cast<RopeStyle>(7);
  expect_error(a, "style must be neox (0) or gptj (1)");
  a = c.rope();
  a.head_size = 6;  // 16 is not a multiple of 6
  expect_error(a, "query width 16 is not a multiple of head_size 6");

  Tensor odd = Tensor::zeros({4, 7}, DType::f32), wide = Tensor::zeros({4, 16}, DType::f32);
  a = c.rope();
  a.cos_sin_cache = odd;
  expect_error(a, "cos_sin_cache width (rot_dim) must be even");
  a.cos_sin_cache = wide;
  expect_error(a, "cos_sin_cache width (rot_dim) must be even and in [2, head_size 8]");

  Tensor kf16 = Tensor::zeros({2, 8}, DType::f16);
  a = c.rope();
  a.key = kf16;
  expect_error(a, "key must be bf16");
  Tensor posf = Tensor::zeros({2}, DType::f32);
  a = c.rope();
  a.positions = posf;
  expect_error(a, "positions must be one of i64/i32");
  Tensor k3 = Tensor::zeros({3, 8}, DType::bf16);
  a = c.rope();
  a.key = k3;
  expect_error(a, "key has 3 tokens, positions 2");
  Tensor qi = Tensor::zeros({2, 16}, DType::i32);
  a = c.rope();
  a.query = qi;
  expect_error(a, "query must be one of");

  // Rows overlapping each other: token stride 8 < 16 elements per row.
  a = c.rope();
  a.query.strides[0] = 8;
  expect_error(a, "query tokens overlap");
  a = c.rope();
  a.query.strides[1] = 2;
  expect_error(a, "contiguous last dimension");
  a = c.rope();
  a.cos_sin_cache.device = Device::cuda(0);  // validation rejects it before any access
  expect_error(a, "cos_sin_cache must be on cpu");
}

TEST(RotaryEmbedding, OutOfRangePositionIsAnErrorAndChangesNothing) {
  for (double bad : {4.0, -1.0}) {
    ErrorCase c;
    fill_uniform(c.q.view(), 1, 1, -1.f, 1.f);
    const Tensor q0 = c.q.clone();
    store_element(c.pos.view().element_ptr(1), DType::i64, bad);
    expect_error(c.rope(), "positions[1] = " + std::to_string(static_cast<int>(bad)) + " is outside the cache's [0, 4)");
    for (int64_t i = 0; i < q0.numel(); ++i) ASSERT_EQ(at(c.q, i), at(q0, i)) << "the failed call wrote q";
  }
}

TEST(QkNormRope, BadInputsAreClearErrors) {
  ErrorCase c;
  auto a = c.qk();
  a.eps = 0;
  expect_error(a, "eps must be positive");
  Tensor w7 = Tensor::zeros({7}, DType::bf16);
  a = c.qk();
  a.q_weight = w7;
  expect_error(a, "q_weight dimension 0 must be 8");
  Tensor w2d = Tensor::zeros({2, 4}, DType::bf16);
  a = c.qk();
  a.k_weight = w2d;
  expect_error(a, "k_weight must have rank 1");
}

TEST(RopeCache, BadConfigsAreClearErrors) {
  auto expect_config_error = [](const RopeConfig& c, int64_t rot, const std::string& needle) {
    try {
      validate_rope_config(c, rot);
      ADD_FAILURE() << "expected an error containing '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
    }
  };
  RopeConfig c;
  expect_config_error(c, 7, "rot_dim must be even");
  c.theta = -1;
  expect_config_error(c, 8, "theta must be finite and positive");
  c = RopeConfig{};
  c.scaling = RopeScalingType::linear;
  c.factor = 0;
  expect_config_error(c, 8, "(linear): factor must be finite and positive");
  c = RopeConfig{};
  c.scaling = RopeScalingType::llama3;
  c.factor = 8;
  c.low_freq_factor = 4;
  c.high_freq_factor = 1;
  expect_config_error(c, 8, "high_freq_factor (1) must be greater than low_freq_factor (4)");
  c = RopeConfig{};
  c.scaling = RopeScalingType::yarn;
  c.factor = 4;
  c.beta_slow = 0;
  expect_config_error(c, 8, "(yarn): beta_slow must be finite and positive");
  c.beta_slow = 1;
  c.attention_factor = -1;
  expect_config_error(c, 8, "attention_factor must be >= 0");
  c.attention_factor = 0;
  c.mscale = 1;
  c.mscale_all_dim = -100;  // get_mscale(4, -100) < 0
  expect_config_error(c, 8, "is not finite and positive");
  c = RopeConfig{};
  c.scaling = static_cast<RopeScalingType>(9);
  expect_config_error(c, 8, "scaling must be none (0)");

  EXPECT_THROW(make_rope_cos_sin_cache(RopeConfig{}, 16, 8, DType::i32), Error);
  EXPECT_THROW(make_rope_cos_sin_cache(RopeConfig{}, 0, 8), Error);
  Tensor out = Tensor::empty({4, 8}, DType::f32);
  ops::RopeCosSinCacheArgs a{};
  a.cos_sin_cache = out.view();
  a.config.theta = 0;
  expect_error(a, "theta must be finite and positive");
}

}  // namespace
}  // namespace fk
