// mrope_rotary_embedding beyond the generic oracle test: the axis of each frequency written
// as transformers writes it (Qwen3-VL's apply_interleaved_mrope: the t row with every third
// frequency from 1 overwritten by h and from 2 by w, up to 3 * section; Qwen2-VL: the
// doubled sections split in chunks cycling t, h, w), equal rows reducing to
// rotary_embedding, q/k as views of a fused qkv buffer, and named errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/ops/mrope.h"
#include "ops/norm_act_support.h"
#include "ops/rope/mrope_validate.h"
#include "ops/rope_test_util.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::MropeRotaryEmbeddingArgs;
using test::expect_invalid;
using test::expect_ok;

MropeRotaryEmbeddingArgs mrope_args(const TensorView& pos, const TensorView& q, const TensorView& k,
                                    const TensorView& cache, int D, std::vector<int> sec, bool interleaved) {
  MropeRotaryEmbeddingArgs a{};
  a.positions = pos;
  a.query = q;
  a.key = k;
  a.cos_sin_cache = cache;
  a.head_size = D;
  for (int i = 0; i < 3; ++i) a.mrope_section[i] = sec[static_cast<size_t>(i)];
  a.interleaved = interleaved ? 1 : 0;
  return a;
}

// A real cos/sin cache (theta 10000) so that a wrong axis changes the angle.
Tensor real_cache(int64_t max_pos, int64_t rot) {
  Tensor c = Tensor::empty({max_pos, rot}, DType::f32);
  const int64_t half = rot / 2;
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double f = p * std::pow(10000.0, -2.0 * i / rot);
      set(c.view(), std::cos(f), p, i);
      set(c.view(), std::sin(f), p, half + i);
    }
  return c;
}

// transformers' formulation: the [3, rot/2] angle table per token, then the merge of axes.
std::vector<int> axes_as_transformers(const std::vector<int>& sec, bool interleaved) {
  const int half = sec[0] + sec[1] + sec[2];
  std::vector<int> axis(static_cast<size_t>(half), 0);
  if (interleaved) {
    for (int dim = 1; dim <= 2; ++dim)  // freqs_t[..., offset:length:3] = freqs[dim, ..., offset:length:3]
      for (int i = dim; i < sec[static_cast<size_t>(dim)] * 3; i += 3) axis[static_cast<size_t>(i)] = dim;
  } else {
    // cos.split(mrope_section * 2) then chunk i from axis i % 3, over the doubled width: the
    // first rot/2 columns decide (the second half repeats the same sections).
    int start = 0;
    for (int chunk = 0; chunk < 3; ++chunk) {
      for (int i = start; i < start + sec[static_cast<size_t>(chunk)]; ++i) axis[static_cast<size_t>(i)] = chunk;
      start += sec[static_cast<size_t>(chunk)];
    }
  }
  return axis;
}

TEST(MropeRotaryEmbedding, AxisOfEachFrequencyMatchesTransformers) {
  for (bool il : {true, false})
    for (const std::vector<int>& sec : {std::vector<int>{24, 20, 20}, {16, 24, 24}, {8, 4, 4}, {10, 10, 0}, {4, 3, 3}}) {
      if (il && sec[1] > 0 && 3 * sec[1] - 2 >= sec[0] + sec[1] + sec[2]) continue;  // does not fit interleaved
      if (il && sec[2] > 0 && 3 * sec[2] - 1 >= sec[0] + sec[1] + sec[2]) continue;
      const std::vector<int> want = axes_as_transformers(sec, il);
      std::vector<int> count(3, 0);
      for (size_t i = 0; i < want.size(); ++i) {
        const int got = ops::mrope_axis(static_cast<int>(i), sec[0], sec[1], sec[2], il);
        EXPECT_EQ(got, want[i]) << "frequency " << i << " interleaved " << il;
        ++count[static_cast<size_t>(got)];
      }
      for (int a = 0; a < 3; ++a) EXPECT_EQ(count[static_cast<size_t>(a)], sec[static_cast<size_t>(a)]) << "axis " << a;
    }
  // Qwen3-VL, spelled out: T H W T H W ... up to 59, then the tail T.
  EXPECT_EQ(ops::mrope_axis(58, 24, 20, 20, true), 1);
  EXPECT_EQ(ops::mrope_axis(59, 24, 20, 20, true), 2);
  for (int i = 60; i < 64; ++i) EXPECT_EQ(ops::mrope_axis(i, 24, 20, 20, true), 0) << i;
}

// Each head rotated by hand with per-frequency positions, against the op on random inputs.
TEST(MropeRotaryEmbedding, MatchesHandRotationWithPerAxisPositions) {
  const uint64_t seed = test::seed_for("mrope_hand");
  const int64_t T = 6, Hq = 3, Hk = 2, D = 48, rot = 40, max_pos = 50;
  const std::vector<int> sec = {8, 6, 6};
  const Tensor cache = real_cache(max_pos, rot);
  for (bool il : {true, false}) {
    Tensor pos = test::random_host({3, T}, DType::f32, seed, 1, 0.f, 49.f);
    Tensor pos_i = Tensor::empty({3, T}, DType::i64);
    for (int64_t i = 0; i < 3 * T; ++i) pos_i.data_as<int64_t>()[i] = static_cast<int64_t>(test::at(pos, i));
    Tensor q = test::random_host({T, Hq * D}, DType::f32, seed, 2), k = test::random_host({T, Hk * D}, DType::f32, seed, 3);
    const Tensor q0 = q.clone(), k0 = k.clone();
    expect_ok(DeviceType::cpu, mrope_args(pos_i, q, k, cache, D, sec, il));
    const std::vector<int> axis = axes_as_transformers(sec, il);
    auto check = [&](const Tensor& before, const Tensor& after, int64_t heads, const char* what) {
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t base = t * heads * D + h * D;
          for (int64_t i = 0; i < rot / 2; ++i) {
            const int64_t p = pos_i.data_as<int64_t>()[axis[static_cast<size_t>(i)] * T + t];
            const double c = get(cache.view(), p, i), s = get(cache.view(), p, rot / 2 + i);
            const double x1 = test::at(before, base + i), x2 = test::at(before, base + i + rot / 2);
            EXPECT_NEAR(test::at(after, base + i), x1 * c - x2 * s, 1e-5) << what << " t " << t << " i " << i;
            EXPECT_NEAR(test::at(after, base + i + rot / 2), x2 * c + x1 * s, 1e-5) << what << " t " << t << " i " << i;
          }
          for (int64_t d = rot; d < D; ++d)
            EXPECT_EQ(test::at(after, base + d), test::at(before, base + d)) << what << ": the tail is not rotated";
        }
    };
    check(q0, q, Hq, "q");
    check(k0, k, Hk, "k");
  }
}

// A text token has three equal positions: M-RoPE is then plain rope at that position.
TEST(MropeRotaryEmbedding, EqualRowsAreRotaryEmbedding) {
  const uint64_t seed = test::seed_for("mrope_equal_rows");
  const int64_t T = 7, Hq = 4, Hk = 2, D = 128, max_pos = 64;
  const Tensor cache = test::random_host({max_pos, D}, DType::f32, seed, 1, -1.f, 1.f);
  Tensor pos1 = Tensor::empty({T}, DType::i32), pos3 = Tensor::empty({3, T}, DType::i32);
  for (int64_t t = 0; t < T; ++t) {
    pos1.data_as<int32_t>()[t] = static_cast<int32_t>((t * 37 + 5) % max_pos);
    for (int a = 0; a < 3; ++a) pos3.data_as<int32_t>()[a * T + t] = pos1.data_as<int32_t>()[t];
  }
  for (bool il : {true, false}) {
    // q and k as views of one fused qkv buffer, as after the QKV GEMM.
    const Tensor qkv = test::random_host({T, (Hq + 2 * Hk) * D}, DType::bf16, seed, 2);
    Tensor a = qkv.clone(), b = qkv.clone();
    const auto va = test::fused_views(a, Hq, Hk, D, il), vb = test::fused_views(b, Hq, Hk, D, il);
    expect_ok(DeviceType::cpu, mrope_args(pos3, va.q, va.k, cache, D, {24, 20, 20}, il));
    expect_ok(DeviceType::cpu, test::rope_args(pos1, vb.q, vb.k, cache, D, ops::RopeStyle::neox));
    test::expect_views_near(TensorView(a.view()), TensorView(b.view()), {0, 0}, "equal rows");
    // v untouched
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = (Hq + Hk) * D; d < (Hq + 2 * Hk) * D; ++d)
        ASSERT_EQ(get(a.view(), t, d), get(qkv.view(), t, d)) << "value part changed";
  }
}

TEST(MropeRotaryEmbedding, NamedErrors) {
  const int64_t T = 3, D = 8;
  Tensor cache = real_cache(10, D);
  Tensor q = Tensor::zeros({T, 2 * D}, DType::f32), k = Tensor::zeros({T, D}, DType::f32);
  Tensor pos = Tensor::zeros({3, T}, DType::i64);
  expect_ok(DeviceType::cpu, mrope_args(pos, q, k, cache, D, {2, 1, 1}, true));
  Tensor pos1 = Tensor::zeros({T}, DType::i64);
  expect_invalid(DeviceType::cpu, mrope_args(pos1, q, k, cache, D, {2, 1, 1}, true), "positions");
  Tensor pos2 = Tensor::zeros({2, T}, DType::i64);
  expect_invalid(DeviceType::cpu, mrope_args(pos2, q, k, cache, D, {2, 1, 1}, true), "[3, T]");
  Tensor pos_short = Tensor::zeros({3, T - 1}, DType::i64);
  expect_invalid(DeviceType::cpu, mrope_args(pos_short, q, k, cache, D, {2, 1, 1}, true), "tokens");
  expect_invalid(DeviceType::cpu, mrope_args(pos, q, k, cache, D, {2, 2, 1}, true), "must sum to rot_dim / 2 = 4");
  expect_invalid(DeviceType::cpu, mrope_args(pos, q, k, cache, D, {-1, 3, 2}, true), ">= 0");
  expect_invalid(DeviceType::cpu, mrope_args(pos, q, k, cache, D, {0, 2, 2}, true), "does not fit");
  expect_ok(DeviceType::cpu, mrope_args(pos, q, k, cache, D, {0, 2, 2}, false));  // chunked: any split
  MropeRotaryEmbeddingArgs bad = mrope_args(pos, q, k, cache, D, {2, 1, 1}, true);
  bad.interleaved = 2;
  expect_invalid(DeviceType::cpu, bad, "interleaved must be 0 or 1");
  // A position outside the cache on one axis only: an error, q and k untouched.
  Tensor qr = test::random_host({T, 2 * D}, DType::f32, 1, 1);
  const Tensor qr0 = qr.clone();
  pos.data_as<int64_t>()[2 * T + 1] = 10;
  expect_invalid(DeviceType::cpu, mrope_args(pos, qr, k, cache, D, {2, 1, 1}, true), "positions[2, 1] = 10");
  test::expect_views_near(qr.view(), qr0.view(), {0, 0}, "q after an error");
}

}  // namespace
}  // namespace fk
