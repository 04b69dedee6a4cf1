// A sequential model of the CUDA sampler's bucketed algorithm (src/ops/sampling/sample.cu:
// bucket histogram, gathered candidates, per-bucket selection, min-p shortcuts), checked to
// give exactly the token of the plain radix model (sampling_radix_model_test.cpp's
// algorithm, the previous kernel's) on rows built to reach every path: small candidate
// capacities force single-bucket gathers and the in-bucket fallback, rows of equal logits,
// -inf logits, extreme temperatures, top_k past the live tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <vector>

#include "fk/dtype_convert.h"
#include "fk/philox.h"
#include "ops/sampling/sample_buckets.h"
#include "ops/sampling/sample_radix.h"
#include "ops/sampling/sample_reference.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

namespace sr = sample_radix;
constexpr int kB = sr::kNumBuckets;

uint64_t fixed(float w) { return static_cast<uint64_t>(std::nearbyint(std::ldexp(static_cast<double>(w), sr::kFixedBits))); }

// ---- The previous kernel: full-row radix selections (as sampling_radix_model_test.cpp). ----
struct Sel {
  uint64_t key, mass_through;
};
Sel radix_select(const std::vector<float>& x, float max_logit, float inv_t, uint64_t lower, uint64_t target,
                 bool by_count) {
  struct E {
    uint64_t key, w;
  };
  std::vector<E> e;
  for (uint32_t i = 0; i < x.size(); ++i) {
    const uint64_t key = sr::rank_key(x[i], i);
    if (key >= lower) e.push_back({key, fixed(std::exp((x[i] - max_logit) * inv_t))});
  }
  std::sort(e.begin(), e.end(), [](const E& a, const E& b) { return a.key > b.key; });
  uint64_t before = 0;
  for (const E& v : e) {
    const uint64_t own = by_count ? 1 : v.w;
    if (target < before + own) return {v.key, 0};
    before += own;
  }
  return {e.back().key, 0};
}
uint64_t mass_from(const std::vector<float>& x, float max_logit, float inv_t, uint64_t lower) {
  uint64_t z = 0;
  for (uint32_t i = 0; i < x.size(); ++i)
    if (sr::rank_key(x[i], i) >= lower) z += fixed(std::exp((x[i] - max_logit) * inv_t));
  return z;
}
int64_t radix_model(const std::vector<float>& x, const SampleParams& p) {
  const auto V = static_cast<uint32_t>(x.size());
  uint64_t best = 0;
  for (uint32_t i = 0; i < V; ++i) best = std::max(best, sr::rank_key(x[i], i));
  const uint32_t top = sr::key_id(best);
  const float max_logit = x[top], t = static_cast<float>(p.temperature);
  if (!(t > 0.f) || !std::isfinite(max_logit)) return top;
  const float inv_t = 1.f / t;
  uint64_t lower = 0, Z;
  if (p.top_k > 0 && p.top_k < V) lower = radix_select(x, max_logit, inv_t, 0, static_cast<uint64_t>(p.top_k - 1), true).key;
  Z = mass_from(x, max_logit, inv_t, lower);
  const auto top_p = static_cast<float>(p.top_p);
  if (top_p < 1.f) {
    const uint64_t limit = sr::top_p_limit(top_p, Z);
    if (limit < Z) {
      lower = radix_select(x, max_logit, inv_t, lower, limit, false).key;
      Z = mass_from(x, max_logit, inv_t, lower);
    }
  }
  const auto min_p = static_cast<float>(p.min_p);
  if (min_p > 0.f) {
    uint64_t sum = 0, lowest = ~uint64_t{0};
    for (uint32_t i = 0; i < V; ++i) {
      const uint64_t key = sr::rank_key(x[i], i);
      const float w = std::exp((x[i] - max_logit) * inv_t);
      if (key >= lower && w >= std::min(min_p, 1.f)) {
        sum += fixed(w);
        lowest = std::min(lowest, key);
      }
    }
    lower = lowest;
    Z = sum;
  }
  const uint64_t target = sr::draw_target(Z, philox_u32(p.seed, p.offset, 0));
  return sr::key_id(radix_select(x, max_logit, inv_t, lower, target, false).key);
}

// ---- The bucketed kernel, step for step (sample.cu's sample_row and RankOrder). ----
struct Hit {
  bool found = false;
  int bucket = 0;
  uint64_t key = 0, mass_through = 0;
  int index = -1;
};
struct Range {
  int lo = 1, hi = 0;
  bool empty() const { return lo > hi; }
};

struct BucketModel {
  const std::vector<float>& x;
  sr::BucketMap map;
  size_t capacity;
  std::vector<uint64_t> count, mass;  // exclusive prefixes, kB + 1 entries
  std::vector<uint64_t> cand_key, cand_mass;
  std::vector<Range> held;
  std::vector<size_t> base;
  int fallbacks = 0, gathers = 0;

  int bucket_of(float v) const { return map.bucket(map.distance(v)); }
  uint64_t weight_of(float v) const {  // dead tokens are never weighed: their weight is 0
    const float d = map.distance(v);
    return map.bucket(d) == sr::kDeadBucket ? 0 : fixed(std::exp(-d));
  }
  void histogram(bool with_mass) {
    count.assign(kB + 1, 0);
    mass.assign(kB + 1, 0);
    for (float v : x) {
      ++count[static_cast<size_t>(bucket_of(v))];
      if (with_mass) mass[static_cast<size_t>(bucket_of(v))] += weight_of(v);
    }
    uint64_t c = 0, m = 0;
    for (size_t b = 0; b <= kB; ++b) {
      const uint64_t cb = count[b], mb = mass[b];
      count[b] = c;
      mass[b] = m;
      c += cb;
      m += mb;
    }
  }
  static int bucket_at(const std::vector<uint64_t>& prefix, uint64_t target) {
    int b = kB - 1;
    while (prefix[static_cast<size_t>(b)] > target) --b;
    return b;
  }
  uint64_t size_of(Range r) const { return count[static_cast<size_t>(r.hi + 1)] - count[static_cast<size_t>(r.lo)]; }
  void gather(std::vector<Range> want) {
    ++gathers;
    cand_key.clear();
    for (uint32_t i = 0; i < x.size(); ++i) {
      const int b = bucket_of(x[i]);
      for (const Range& r : want)
        if (r.lo <= b && b <= r.hi) cand_key.push_back(sr::rank_key(x[i], i));
    }
    std::sort(cand_key.begin(), cand_key.end(), std::greater<>());
    cand_mass.clear();
    uint64_t m = 0;
    for (uint64_t k : cand_key) cand_mass.push_back(m += weight_of(sr::key_logit(k)));
    held = want;
    base.clear();
    size_t at = 0;
    for (const Range& r : want) {
      base.push_back(at);
      at += size_of(r);
    }
    EXPECT_EQ(at, cand_key.size());
    EXPECT_LE(at, capacity);
  }
  void mass_prefix_from_candidates() {
    for (size_t b = 0; b <= kB; ++b) {
      const size_t first = std::min<size_t>(count[b], cand_key.size());
      mass[b] = first ? cand_mass[first - 1] : 0;
    }
  }
  Hit locate(bool by_count, uint64_t target) const {
    Hit h;
    h.bucket = bucket_at(by_count ? count : mass, target);
    for (size_t j = 0; j < held.size(); ++j) {
      const Range r = held[j];
      if (h.bucket < r.lo || h.bucket > r.hi) continue;
      const size_t first = base[j];
      const uint64_t before = first ? cand_mass[first - 1] : 0;
      size_t i = first;
      if (by_count) {
        i = first + (target - count[static_cast<size_t>(r.lo)]);
      } else {
        while (cand_mass[i] <= before + (target - mass[static_cast<size_t>(r.lo)])) ++i;
      }
      h.found = true;
      h.key = cand_key[i];
      h.mass_through = mass[static_cast<size_t>(r.lo)] + cand_mass[i] - before;
      h.index = static_cast<int>(i);
      return h;
    }
    return h;
  }
  // The kernel's radix select inside bucket b, by its result: the bucket's tokens in rank order.
  Hit in_bucket(int b, uint64_t target, bool by_count) {
    ++fallbacks;
    std::vector<uint64_t> keys;
    for (uint32_t i = 0; i < x.size(); ++i)
      if (bucket_of(x[i]) == b) keys.push_back(sr::rank_key(x[i], i));
    std::sort(keys.begin(), keys.end(), std::greater<>());
    uint64_t before = 0, mass_before = 0;
    for (uint64_t k : keys) {
      const uint64_t w = weight_of(sr::key_logit(k)), own = by_count ? 1 : w;
      if (target < before + own) return {true, b, k, mass[static_cast<size_t>(b)] + mass_before + w, -1};
      before += own;
      mass_before += w;
    }
    ADD_FAILURE() << "target past the bucket";
    return {};
  }
  Hit fetch(bool by_count, uint64_t target, Range extra = {}) {
    Hit h = locate(by_count, target);
    if (h.found) return h;
    const int b = h.bucket;
    if (b != sr::kDeadBucket && size_of({b, b}) <= capacity) {
      std::vector<Range> want = {{b, b}};
      extra.hi = std::min(extra.hi, sr::kDeadBucket - 1);
      if (!extra.empty()) {
        if (extra.lo <= b + 1 && b <= extra.hi + 1) {
          want = {{std::min(b, extra.lo), std::max(b, extra.hi)}};
        } else if (extra.lo < b) {
          want = {extra, {b, b}};
        } else {
          want = {{b, b}, extra};
        }
        uint64_t n = 0;
        for (const Range& r : want) n += size_of(r);
        if (n > capacity) want = {{b, b}};
      }
      gather(want);
      h = locate(by_count, target);
      if (h.found) return h;
      ADD_FAILURE() << "gathered bucket " << b << " does not hold the target";
    }
    return in_bucket(b, target - (by_count ? count : mass)[static_cast<size_t>(b)], by_count);
  }
  bool holds_rank_prefix_through(int index) const {
    return !held.empty() && held[0].lo == 0 && index >= 0 && static_cast<size_t>(index) < cand_key.size() &&
           static_cast<uint64_t>(index) < count[static_cast<size_t>(held[0].hi + 1)];
  }
};

struct Paths {
  int regime_a = 0, fallbacks = 0, gathers = 0, streaming_min_p = 0;
};

int64_t bucket_model(const std::vector<float>& x, const SampleParams& p, size_t capacity, Paths& paths) {
  const auto V = static_cast<int64_t>(x.size());
  uint64_t best = 0, low = 0;
  for (uint32_t i = 0; i < x.size(); ++i) {
    best = std::max(best, sr::rank_key(x[i], i));
    if (std::isfinite(x[i])) low = std::max<uint64_t>(low, ~sr::logit_key(x[i]));
  }
  const auto top = static_cast<int64_t>(sr::key_id(best));
  const float max_logit = sr::key_logit(best), t = static_cast<float>(p.temperature), inv_t = 1.f / t;
  if (!(t > 0.f) || !std::isfinite(max_logit) || !(inv_t <= FLT_MAX)) return top;
  const float min_finite = low ? sr::key32_logit(~static_cast<uint32_t>(low)) : max_logit;
  BucketModel m{x, sr::BucketMap::make(max_logit, min_finite, inv_t), capacity, {}, {}, {}, {}, {}, {}};

  const bool top_k_on = p.top_k > 0 && p.top_k < V;
  const auto min_p = static_cast<float>(p.min_p), top_p = static_cast<float>(p.top_p);
  const bool min_p_on = min_p > 0.f;
  const float threshold = min_p_on ? std::min(min_p, 1.f) : INFINITY;
  const uint32_t bits = philox_u32(p.seed, p.offset, 0);
  uint64_t min_p_all = 0;
  for (float v : x)
    if (m.bucket_of(v) != sr::kDeadBucket && std::exp(-m.map.distance(v)) >= threshold) min_p_all += m.weight_of(v);

  bool have_mass = false;
  int k_bucket = sr::kDeadBucket;
  if (top_k_on) {
    m.histogram(false);
    k_bucket = BucketModel::bucket_at(m.count, static_cast<uint64_t>(p.top_k - 1));
    if (k_bucket != sr::kDeadBucket && m.count[static_cast<size_t>(k_bucket + 1)] <= capacity) {
      m.gather({{0, k_bucket}});
      m.mass_prefix_from_candidates();
      have_mass = true;
      ++paths.regime_a;
    }
  }
  if (!have_mass) m.histogram(true);
  uint64_t Z = m.mass[kB];
  Hit last;
  bool cut = false;
  if (top_k_on && k_bucket != sr::kDeadBucket) {
    last = m.fetch(true, static_cast<uint64_t>(p.top_k - 1));
    Z = last.mass_through;
    cut = true;
  }
  if (top_p < 1.f) {
    const uint64_t limit = sr::top_p_limit(top_p, Z);
    if (limit < Z) {
      Range draw;
      if (!min_p_on) {
        const auto b = static_cast<size_t>(BucketModel::bucket_at(m.mass, limit));
        draw.lo = BucketModel::bucket_at(m.mass, sr::draw_target(m.mass[b] + 1, bits));
        draw.hi = BucketModel::bucket_at(m.mass, sr::draw_target(m.mass[b + 1], bits));
      }
      last = m.fetch(false, limit, draw);
      Z = last.mass_through;
      cut = true;
    }
  }
  if (min_p_on) {
    uint64_t z = 0;
    if (!cut) {
      z = min_p_all;
    } else if (m.holds_rank_prefix_through(last.index)) {
      for (int i = 0; i <= last.index; ++i) {
        const auto u = static_cast<size_t>(i);
        if (std::exp(-m.map.distance(sr::key_logit(m.cand_key[u]))) >= threshold)
          z += m.cand_mass[u] - (i ? m.cand_mass[u - 1] : 0);
      }
    } else {
      ++paths.streaming_min_p;
      for (uint32_t i = 0; i < x.size(); ++i) {
        const float d = m.map.distance(x[i]);
        if (sr::rank_key(x[i], i) >= last.key && d < sr::kLiveDistance && std::exp(-d) >= threshold)
          z += fixed(std::exp(-d));
      }
    }
    if (z > 0) Z = z;
  }
  const int64_t token = sr::key_id(m.fetch(false, sr::draw_target(Z, bits)).key);
  paths.fallbacks += m.fallbacks;
  paths.gathers += m.gathers;
  return token;
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

TEST(SampleBucketModel, BucketsFollowRankOrderAndDeadTokensWeighNothing) {
  const sr::BucketMap maps[] = {sr::BucketMap::make(8.f, -8.f, 1.f), sr::BucketMap::make(3.f, -1e30f, 0.5f),
                                sr::BucketMap::make(0.1f, 0.0999f, 100.f), sr::BucketMap::make(1.f, 1.f, 1.f)};
  for (const sr::BucketMap& map : maps) {
    int prev = 0;
    for (float x = map.max_logit; x > -1e3f; x = x - std::max(1e-4f, std::fabs(x) * 1e-3f)) {
      const float d = map.distance(x);
      const int b = map.bucket(d);
      EXPECT_GE(b, prev) << x;  // a smaller logit never lands in an earlier bucket
      prev = b;
      if (b == sr::kDeadBucket) EXPECT_EQ(fixed(std::exp(-d)), 0u) << x;
      if (fixed(std::exp(-d)) > 0) EXPECT_LT(b, sr::kDeadBucket) << x;
      EXPECT_EQ(std::exp(-d), std::exp((x - map.max_logit) * map.inv_t)) << x;  // the weight, written as the kernel does
    }
    EXPECT_EQ(map.bucket(map.distance(-INFINITY)), sr::kDeadBucket);
  }
  EXPECT_EQ(sr::key_logit(sr::rank_key(-3.5f, 7)), -3.5f);
  EXPECT_EQ(sr::key_logit(sr::rank_key(-INFINITY, 7)), -INFINITY);
  EXPECT_EQ(sr::key_logit(sr::rank_key(-0.f, 7)), 0.f);
}

TEST(SampleBucketModel, GivesThePreviousKernelsTokens) {
  struct Setting {
    double t;
    int64_t k;
    double p, min_p;
  };
  const Setting settings[] = {{1, 0, 1, 0},        {0.7, 50, 1, 0},       {1, 0, 0.9, 0},      {0.8, 0, 1, 0.05},
                              {1.2, 40, 0.95, 0.02}, {0.6, 1, 1, 0},      {1, 0, 1e-6, 0},     {0.9, 1 << 30, 0.5, 0},
                              {2, 1000, 0.99, 0.001}, {0.3, 5, 0.5, 0.2}, {1, 0, 0.9, 0.05},   {0.05, 2000, 1, 0},
                              {1, 0, 1, 1e-14},     {100, 20, 0.8, 0},    {1, 299, 0.999, 0},  {1e-3, 0, 0.7, 1}};
  struct Row {
    int64_t V;
    float range;
    bool bf16;
    int kind;  // 0 random, 1 all equal, 2 half -inf, 3 one finite logit
  };
  const Row rows[] = {{7, 8, false, 0},    {300, 8, false, 0},  {3000, 8, true, 0},  {3000, 0.05f, true, 0},
                      {5000, 30, false, 0}, {1000, 8, false, 1}, {2000, 8, false, 2}, {500, 8, false, 3},
                      {4099, 0.02f, true, 0}, {1, 8, false, 0}};
  Paths paths;
  int cases = 0;
  for (size_t r = 0; r < std::size(rows); ++r) {
    const Row& row = rows[r];
    const uint64_t seed = test::seed_for("SampleBucketModel", r);
    std::vector<float> x = random_logits(seed, row.V, row.range, row.bf16);
    for (size_t i = 0; i < x.size(); ++i) {
      if (row.kind == 1) x[i] = 0.25f;
      if (row.kind == 2 && i % 2) x[i] = -INFINITY;
      if (row.kind == 3 && i != 17) x[i] = -INFINITY;
    }
    for (const Setting& s : settings) {
      for (size_t capacity : {size_t{4096}, size_t{64}, size_t{4}}) {
        const SampleParams p{s.t, s.k, s.p, s.min_p, seed * 31 + static_cast<uint64_t>(cases), static_cast<uint64_t>(cases)};
        EXPECT_EQ(bucket_model(x, p, capacity, paths), radix_model(x, p))
            << "V " << row.V << " kind " << row.kind << " range " << row.range << " t " << s.t << " k " << s.k
            << " p " << s.p << " min_p " << s.min_p << " capacity " << capacity;
        ++cases;
      }
    }
  }
  // Every path of the kernel was taken.
  EXPECT_GT(paths.regime_a, 0);
  EXPECT_GT(paths.fallbacks, 0);
  EXPECT_GT(paths.gathers, 0);
  EXPECT_GT(paths.streaming_min_p, 0);
}

}  // namespace
}  // namespace fk::ops
