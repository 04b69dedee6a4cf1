// A sequential model of the sampler's integer semantics in their plain radix form (the
// algorithm of the CUDA kernel before the bucketed one; sampling_bucket_model_test.cpp
// checks that the bucketed algorithm gives the same tokens): the same rank keys,
// fixed-point weights, radix passes and integer targets (sample_radix.h), run on the CPU
// and judged against the double-precision reference like a GPU result. It checks the
// conventions (prefix selection, top-p and draw boundaries, ties) where no GPU is
// available; the kernel's parallel mechanics are tested on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/dtype_convert.h"
#include "fk/philox.h"
#include "ops/sampling/sample_radix.h"
#include "ops/sampling/sample_reference.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

namespace sr = sample_radix;

struct ModelRow {
  std::vector<float> x;
  float max_logit = 0, inv_t = 1;
  float weight(float v) const { return std::exp((v - max_logit) * inv_t); }
  static uint64_t fixed(float w) { return static_cast<uint64_t>(std::nearbyint(std::ldexp(static_cast<double>(w), sr::kFixedBits))); }
};

struct Selection {
  uint32_t id;
  uint64_t key, mass_through;
};

// The kernel's radix_select, one pass per 8 bits, picking buckets from the top.
Selection radix_select(const ModelRow& r, uint64_t lower, uint64_t target, bool by_count) {
  uint64_t prefix = 0, mask = 0, mass_above = 0;
  for (int shift = 56;; shift -= 8) {
    uint64_t count[256] = {}, mass[256] = {};
    uint32_t any_id[256] = {};
    for (uint32_t i = 0; i < r.x.size(); ++i) {
      const uint64_t key = sr::rank_key(r.x[i], i);
      if (key < lower || (key & mask) != prefix) continue;
      const int d = static_cast<int>((key >> shift) & 0xFF);
      ++count[d];
      mass[d] += ModelRow::fixed(r.weight(r.x[i]));
      any_id[d] = i;
    }
    uint64_t total = 0;
    for (int d = 0; d < 256; ++d) total += by_count ? count[d] : mass[d];
    if (target >= total) target = total > 0 ? total - 1 : 0;
    uint64_t acc = 0, macc = 0;
    int digit = 0;
    for (int d = 255; d >= 0; --d) {
      const uint64_t wb = by_count ? count[d] : mass[d];
      if (target < acc + wb) {
        digit = d;
        break;
      }
      acc += wb;
      macc += mass[d];
    }
    target -= acc;
    mass_above += macc;
    prefix |= static_cast<uint64_t>(digit) << shift;
    mask |= uint64_t{0xFF} << shift;
    if (count[digit] == 1 || shift == 0) {
      const uint32_t id = any_id[digit];
      return {id, sr::rank_key(r.x[id], id), mass_above + mass[digit]};
    }
  }
}

// The kernel's per-row flow.
int64_t model_sample(const std::vector<float>& x, const SampleParams& p) {
  ModelRow r{x};
  const auto V = static_cast<uint32_t>(x.size());
  uint64_t best = 0;
  for (uint32_t i = 0; i < V; ++i) best = std::max(best, sr::rank_key(x[i], i));
  const uint32_t top = sr::key_id(best);
  r.max_logit = x[top];
  const auto t = static_cast<float>(p.temperature);
  if (!(t > 0.f)) return top;
  r.inv_t = 1.f / t;
  uint64_t lower = 0, Z = 0;
  if (p.top_k > 0 && p.top_k < V) {
    const Selection s = radix_select(r, 0, static_cast<uint64_t>(p.top_k - 1), true);
    lower = s.key;
    Z = s.mass_through;
  } else {
    for (float v : x) Z += ModelRow::fixed(r.weight(v));
  }
  const auto top_p = static_cast<float>(p.top_p);
  if (top_p < 1.f) {
    const uint64_t limit = sr::top_p_limit(top_p, Z);
    if (limit < Z) {
      const Selection s = radix_select(r, lower, limit, false);
      lower = s.key;
      Z = s.mass_through;
    }
  }
  const auto min_p = static_cast<float>(p.min_p);
  if (min_p > 0.f) {
    uint64_t sum = 0, lowest = ~uint64_t{0};
    for (uint32_t i = 0; i < V; ++i) {
      const uint64_t key = sr::rank_key(x[i], i);
      const float w = r.weight(x[i]);
      if (key >= lower && w >= std::min(min_p, 1.f)) {
        sum += ModelRow::fixed(w);
        lowest = std::min(lowest, key);
      }
    }
    lower = lowest;
    Z = sum;
  }
  const uint64_t target = sr::draw_target(Z, philox_u32(p.seed, p.offset, 0));
  return radix_select(r, lower, target, false).id;
}

std::vector<float> random_logits(uint64_t seed, int64_t V, float range, bool bf16) {
  std::vector<float> x(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) {
    float v = std::fmaf(2 * range, philox_uniform(seed, 1, static_cast<uint64_t>(i)), -range);
    if (bf16) v = bf16_to_float(float_to_bf16(v));
    x[static_cast<size_t>(i)] = v;
  }
  return x;
}

TEST(SampleRadixModel, KeysOrderLikeTheReference) {
  EXPECT_GT(sr::rank_key(1.5f, 7), sr::rank_key(1.25f, 0));
  EXPECT_GT(sr::rank_key(-1.f, 9), sr::rank_key(-2.f, 0));
  EXPECT_GT(sr::rank_key(0.f, 3), sr::rank_key(-1e-30f, 0));
  EXPECT_GT(sr::rank_key(2.f, 3), sr::rank_key(2.f, 4));    // ties: lower id first
  EXPECT_GT(sr::rank_key(-0.f, 3), sr::rank_key(0.f, 4));   // -0 ties with +0
  EXPECT_GT(sr::rank_key(-1e30f, 0), sr::rank_key(-INFINITY, 0));
  EXPECT_EQ(sr::key_id(sr::rank_key(3.f, 123456)), 123456u);
}

TEST(SampleRadixModel, DrawTargetIsFloorOfUTimesZ) {
  for (uint64_t Z : {uint64_t{1} << 40, (uint64_t{1} << 40) * 100000 + 12345, (uint64_t{1} << 58) - 1}) {
    for (uint32_t bits : {0u, 0xFFu, 0x100u, 0x80000000u, 0xFFFFFFFFu, 0x12345678u}) {
      // floor(Z * u24 / 2^24): t * 2^24 <= Z * u24 < (t + 1) * 2^24
      const unsigned __int128 zu = static_cast<unsigned __int128>(Z) * (bits >> 8);
      const unsigned __int128 t = sr::draw_target(Z, bits);
      EXPECT_LE(t << 24, zu) << Z << " " << bits;
      EXPECT_GT((t + 1) << 24, zu) << Z << " " << bits;
      EXPECT_LT(sr::draw_target(Z, bits), Z);
    }
  }
}

// The model's token passes the same judgement a GPU token gets, over many rows and settings.
TEST(SampleRadixModel, AgreesWithTheReference) {
  struct Setting {
    double t;
    int64_t k;
    double p, min_p;
  };
  const Setting settings[] = {{0, 0, 1, 0},     {1, 0, 1, 0},      {0.7, 50, 1, 0},     {1, 0, 0.9, 0},
                              {0.8, 0, 1, 0.05}, {1.2, 40, 0.95, 0.02}, {0.6, 1, 1, 0}, {1, 0, 1e-6, 0},
                              {2, 1000, 0.99, 0.001}, {0.3, 5, 0.5, 0.2}};
  int rows = 0, exact = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const uint64_t seed = test::seed_for("SampleRadixModel", static_cast<uint64_t>(trial));
    const int64_t V = trial % 4 == 0 ? 7 : (trial % 4 == 1 ? 300 : 3000);
    const bool bf16 = trial % 3 == 0;
    const float range = trial % 5 == 0 ? 0.05f : (trial % 5 == 1 ? 30.f : 8.f);
    const std::vector<float> xf = random_logits(seed, V, range, bf16);
    const std::vector<double> xd(xf.begin(), xf.end());
    for (const Setting& s : settings) {
      SampleParams p{s.t, s.k, s.p, s.min_p, seed * 31 + static_cast<uint64_t>(rows), static_cast<uint64_t>(rows)};
      const SampleTrace ref = sample_row(xd, p, 0);
      const int64_t got = model_sample(xf, p);
      EXPECT_EQ(judge_sampled_row(xd, p, 0, got, 1e-5), "")
          << "V " << V << " range " << range << " bf16 " << bf16 << " t " << s.t << " k " << s.k << " p " << s.p
          << " min_p " << s.min_p << " seed " << seed;
      exact += got == ref.token;
      ++rows;
    }
  }
  EXPECT_GE(exact, rows - 2) << "boundary cases should be rare";
}

}  // namespace
}  // namespace fk::ops
