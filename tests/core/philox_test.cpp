// Philox4x32-10 and its distributions (fk/philox.h), and the reproducible log / sincos
// behind the normal stream (fk/reproducible_math.h).
#include "fk/philox.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "support/test_seed.h"

namespace fk {
namespace {

// Random123's published known-answer vectors for philox4x32_10 (kat_vectors).
TEST(Philox, KnownAnswerVectors) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const PhiloxBlock b = philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(b.v[j], k.out[j]) << "counter " << std::hex << k.ctr[0] << " word " << j;
  }
}

// The stream layout documented in fk/philox.h.
TEST(Philox, StreamLayout) {
  const uint64_t seed = 0x0123456789abcdefull, offset = 0xfedcba9876543210ull;
  for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{1} << 34, (uint64_t{1} << 34) + 3, ~uint64_t{0}}) {
    const uint64_t b = i / 4;
    const PhiloxBlock want =
        philox4x32_10(static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(offset),
                      static_cast<uint32_t>(offset >> 32), static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    EXPECT_EQ(philox_u32(seed, offset, i), want.v[i % 4]) << i;
  }
}

// Pinned outputs: recorded results depend on these streams, and the normal stream also
// pins the exact float arithmetic (a compiler contracting or reordering it would change
// these bits on the host; the GPU test compares the device against the host).
TEST(Philox, PinnedValues) {
  const uint64_t seed = 42, offset = 7;
  const uint32_t uniform_bits[4] = {0x3f56937fu, 0x3ea517b8u, 0x3e3c4d68u, 0x3c796080u};
  const int64_t ints[4] = {940, -937, -511, -630};
  const uint32_t normal_bits[8] = {0xbf48929bu, 0xbeaf174eu, 0xbfc2f87au, 0xbf82a7c4u, 0xbf7d16d0u, 0xbf1d372eu, 0xbd63f3bdu, 0x3eff0bcbu};
  for (uint64_t i = 0; i < 4; ++i) {
    float u = philox_uniform(seed, offset, 1000 + i);
    uint32_t ub;
    std::memcpy(&ub, &u, 4);
    EXPECT_EQ(ub, uniform_bits[i]) << i;
    EXPECT_EQ(philox_int(seed, offset, 2000 + i, -1000, 1000), ints[i]) << i;
  }
  for (uint64_t i = 0; i < 8; ++i) {
    float z = philox_normal(seed, offset, 3000 + i);
    uint32_t zb;
    std::memcpy(&zb, &z, 4);
    EXPECT_EQ(zb, normal_bits[i]) << i;
  }
}

TEST(Philox, UniformMoments) {
  const uint64_t seed = test::seed_for("Philox.UniformMoments");
  constexpr int kN = 1'000'000;
  double sum = 0, sum_sq = 0;
  float lo = 1, hi = 0;
  for (int i = 0; i < kN; ++i) {
    const float u = philox_uniform(seed, 3, i);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += static_cast<double>(u) * u;
  }
  EXPECT_GE(lo, 0.0f);
  EXPECT_LT(hi, 1.0f);
  const double mean = sum / kN, var = sum_sq / kN - mean * mean;
  // Standard errors: 2.9e-4 (mean), 7.5e-5 (variance); the bounds are ~6 of them.
  EXPECT_NEAR(mean, 0.5, 1.8e-3) << "seed " << seed;
  EXPECT_NEAR(var, 1.0 / 12, 4.5e-4) << "seed " << seed;
}

TEST(Philox, NormalMoments) {
  const uint64_t seed = test::seed_for("Philox.NormalMoments");
  constexpr int kN = 1'000'000;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0, max_abs = 0;
  int within_one = 0;
  for (int i = 0; i < kN; ++i) {
    const double z = philox_normal(seed, 11, i);
    ASSERT_TRUE(std::isfinite(z)) << i;
    s1 += z;
    s2 += z * z;
    s3 += z * z * z;
    s4 += z * z * z * z;
    max_abs = std::max(max_abs, std::fabs(z));
    within_one += std::fabs(z) < 1.0;
  }
  // Standard errors: 1e-3 (mean), 1.4e-3 (variance), 3.9e-3 (skewness), 9.8e-3 (kurtosis),
  // 4.7e-4 (P(|z| < 1)); the bounds are ~6 of them.
  EXPECT_NEAR(s1 / kN, 0.0, 6e-3) << "seed " << seed;
  EXPECT_NEAR(s2 / kN, 1.0, 8.5e-3) << "seed " << seed;
  EXPECT_NEAR(s3 / kN, 0.0, 2.4e-2) << "seed " << seed;
  EXPECT_NEAR(s4 / kN, 3.0, 6e-2) << "seed " << seed;
  EXPECT_NEAR(static_cast<double>(within_one) / kN, 0.682689, 3e-3) << "seed " << seed;
  EXPECT_LE(max_abs, 5.8);  // sqrt(-2 ln 2^-24) = 5.77
}

TEST(Philox, IntStreamsInRange) {
  const uint64_t seed = test::seed_for("Philox.IntStreamsInRange");
  struct Range {
    int64_t lo, hi;
  };
  for (Range r : {Range{0, 1}, Range{0, 10}, Range{-5, 5}, Range{-1000000007, 3}, Range{0, int64_t{1} << 32},
                  Range{INT64_MIN, INT64_MIN + 17}, Range{INT64_MAX - (int64_t{1} << 32), INT64_MAX}}) {
    int64_t seen_lo = r.hi, seen_hi = r.lo;
    for (int i = 0; i < 100000; ++i) {
      const int64_t v = philox_int(seed, 5, i, r.lo, r.hi);
      ASSERT_GE(v, r.lo);
      ASSERT_LT(v, r.hi);
      seen_lo = std::min(seen_lo, v);
      seen_hi = std::max(seen_hi, v);
    }
    if (static_cast<uint64_t>(r.hi - r.lo) <= 1000) {  // small ranges are covered end to end
      EXPECT_EQ(seen_lo, r.lo);
      EXPECT_EQ(seen_hi, r.hi - 1);
    }
  }
  // Counts over [0, 10): each bin within ~6 standard errors (sd = 95) of 10^4.
  int counts[10] = {};
  for (int i = 0; i < 100000; ++i) ++counts[philox_int(seed, 6, i, 0, 10)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 570) << "seed " << seed;
}

TEST(Philox, SeedsAndOffsetsGiveDifferentStreams) {
  const uint64_t seed = test::seed_for("Philox.SeedsAndOffsetsGiveDifferentStreams");
  const auto prefix = [](uint64_t s, uint64_t o) {
    std::vector<uint32_t> v;
    for (uint64_t i = 0; i < 64; ++i) v.push_back(philox_u32(s, o, i));
    return v;
  };
  const auto base = prefix(seed, 0);
  const auto same_elements = [&base](const std::vector<uint32_t>& other) {
    int n = 0;
    for (size_t i = 0; i < base.size(); ++i) n += base[i] == other[i];
    return n;
  };
  EXPECT_EQ(same_elements(prefix(seed, 0)), 64);
  EXPECT_LE(same_elements(prefix(seed + 1, 0)), 1);
  EXPECT_LE(same_elements(prefix(seed ^ (uint64_t{1} << 40), 0)), 1);
  EXPECT_LE(same_elements(prefix(seed, 1)), 1);
  EXPECT_LE(same_elements(prefix(seed, uint64_t{1} << 40)), 1);
  // Normals from different offsets differ as well.
  int equal = 0;
  for (uint64_t i = 0; i < 64; ++i) equal += philox_normal(seed, 0, i) == philox_normal(seed, 1, i);
  EXPECT_LE(equal, 1);
}

// ---- the reproducible math under the normal stream -----------------------------------

// |got - want| in units of the float ulp at want.
double ulp_error(float got, double want) {
  float w = static_cast<float>(std::fabs(want));
  if (w < FLT_MIN) w = FLT_MIN;
  const double ulp = static_cast<double>(std::nextafter(w, INFINITY)) - static_cast<double>(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

// Every input the normal stream can give, k * 2^-24; strided to keep CI fast.
TEST(ReproducibleMath, LogWithinOneUlp) {
  double worst = 0;
  uint32_t worst_k = 0;
  for (uint32_t k = 1; k <= (1u << 24); k += 13) {
    const float u = static_cast<float>(k) * 0x1p-24f;
    const double e = ulp_error(rmath::log_positive(u), std::log(static_cast<double>(u)));
    if (e > worst) worst = e, worst_k = k;
  }
  EXPECT_EQ(rmath::log_positive(1.0f), 0.0f);
  EXPECT_LE(worst, 1.0) << "at u = " << worst_k << " * 2^-24";
  // Beyond the stream's domain: any positive normal float.
  for (float x : {FLT_MIN, 1e-30f, 0.5f, 1.5f, 2.0f, 3.0f, 1e10f, FLT_MAX})
    EXPECT_LE(ulp_error(rmath::log_positive(x), std::log(static_cast<double>(x))), 1.0) << x;
}

TEST(ReproducibleMath, SinCosTwoPiWithinTwoUlp) {
  // Quarter turns are exact.
  const float want_sin[4] = {0.0f, 1.0f, 0.0f, -1.0f}, want_cos[4] = {1.0f, 0.0f, -1.0f, 0.0f};
  for (int q = 0; q < 4; ++q) {
    float s, c;
    rmath::sincos_two_pi(0.25f * static_cast<float>(q), &s, &c);
    EXPECT_EQ(s, want_sin[q]) << q;
    EXPECT_EQ(c, want_cos[q]) << q;
  }
  const long double two_pi = 6.283185307179586476925286766559005768L;
  double worst_s = 0, worst_c = 0;
  for (uint32_t k = 1; k < (1u << 24); k += 31) {
    if (k % (1u << 22) == 0) continue;  // quarter turns: above
    const float u = static_cast<float>(k) * 0x1p-24f;
    float s, c;
    rmath::sincos_two_pi(u, &s, &c);
    const long double a = two_pi * static_cast<long double>(u);
    worst_s = std::max(worst_s, ulp_error(s, static_cast<double>(std::sin(a))));
    worst_c = std::max(worst_c, ulp_error(c, static_cast<double>(std::cos(a))));
  }
  EXPECT_LE(worst_s, 2.0);
  EXPECT_LE(worst_c, 2.0);
}

TEST(ReproducibleMath, NormalNearTrueBoxMuller) {
  const uint64_t seed = test::seed_for("ReproducibleMath.NormalNearTrueBoxMuller");
  const long double two_pi = 6.283185307179586476925286766559005768L;
  double worst = 0;
  for (uint64_t i = 0; i < (1u << 18); ++i) {
    const PhiloxBlock b = philox_block(seed, 0, i / 4);
    const unsigned lane = static_cast<unsigned>(i % 4), first = lane & 2u;
    const double u1 = ((b.v[first] >> 8) + 1) * 0x1p-24, u2 = (b.v[first + 1] >> 8) * 0x1p-24;
    const long double a = two_pi * u2;
    // At quarter turns the true sine or cosine is exactly 0 (and sinl/cosl of the rounded 2*pi*u2 is not),
    // so those draws have no relative error to measure; SinCosTwoPiWithinTwoUlp checks them exactly.
    const bool zero_turn = (lane & 1) ? (u2 == 0.0 || u2 == 0.5) : (u2 == 0.25 || u2 == 0.75);
    if (zero_turn) continue;
    const double want = std::sqrt(-2.0 * std::log(u1)) * static_cast<double>((lane & 1) ? std::sin(a) : std::cos(a));
    if (want == 0.0) continue;
    worst = std::max(worst, ulp_error(normal_from_block(b, lane), want));
  }
  EXPECT_LE(worst, 4.0) << "seed " << seed;
}

}  // namespace
}  // namespace fk
