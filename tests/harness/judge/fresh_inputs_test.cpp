// Fresh timed inputs: which arguments get them, that they stay in the range the op drew,
// that one seed writes the same bits twice (so baseline and candidate see identical
// inputs) and another seed other values, and the per-call seeds.
#include "harness/judge/fresh_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "fk/element.h"
#include "fk/random.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// An op of every kind of argument: float and integer inputs, an in-place float, a host-only
// float, a constant float, an output and a workspace.
struct Mixed {
  OpDef def;
  OpCase c;
};
Mixed mixed_case(uint64_t seed) {
  Mixed m;
  m.def.name = "mixed";
  m.def.tensor_args = {{"x", ArgRole::in, 0},          {"ids", ArgRole::in, 0},
                       {"acc", ArgRole::inout, 0},     {"host_x", ArgRole::in, 0, /*host_only=*/true},
                       {"scale", ArgRole::in, 0},      {"out", ArgRole::out, 0},
                       {"ws", ArgRole::workspace, 0}};
  auto drawn = [&](const Shape& s, DType t, uint64_t off, float lo, float hi) {
    Tensor x = Tensor::empty(s, t);
    fill_uniform(x.view(), seed, off, lo, hi);
    return x;
  };
  Tensor ids = Tensor::empty({16}, DType::i32);
  fill_int(ids.view(), seed, 1, 0, 100);
  Tensor scale = Tensor::empty({4}, DType::f32);
  for (int64_t i = 0; i < 4; ++i) scale.data_as<float>()[i] = 0.25f;
  m.c.tensors = {drawn({8, 32}, DType::bf16, 0, 0.5f, 3.f), ids,  drawn({8, 32}, DType::f32, 2, -4.f, -1.f),
                 drawn({8}, DType::f32, 3, 0.f, 1.f),       scale, Tensor::empty({8, 32}, DType::bf16),
                 Tensor::empty({64}, DType::f32)};
  return m;
}

TEST(FreshInputs, FloatInputsOnTheDeviceGetFreshValuesInTheirDrawnRange) {
  const Mixed m = mixed_case(test::seed_for("fresh_ranges"));
  const std::vector<FreshInputRange> r = fresh_input_ranges(m.def, m.c);
  ASSERT_EQ(r.size(), m.def.tensor_args.size());
  EXPECT_TRUE(r[0].refill);
  EXPECT_FALSE(r[1].refill) << "integer inputs (indices) keep their values";
  EXPECT_TRUE(r[2].refill) << "in-place floats are inputs too";
  EXPECT_FALSE(r[3].refill) << "host-only plan inputs keep their values";
  EXPECT_FALSE(r[4].refill) << "a constant tensor keeps its value";
  EXPECT_FALSE(r[5].refill);
  EXPECT_FALSE(r[6].refill);
  // Drawn uniform in [0.5, 3) and [-4, -1): about the same ranges back, inside the drawn values.
  for (size_t a : {size_t{0}, size_t{2}}) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < m.c.tensors[a].numel(); ++i) lo = std::min(lo, at(m.c.tensors[a], i)), hi = std::max(hi, at(m.c.tensors[a], i));
    EXPECT_GE(r[a].lo, static_cast<float>(lo));
    EXPECT_LE(r[a].hi, static_cast<float>(hi));
  }
  EXPECT_NEAR(r[0].lo, 0.5f, 0.25f);
  EXPECT_NEAR(r[0].hi, 3.f, 0.25f);
  EXPECT_NEAR(r[2].lo, -4.f, 0.3f);
  EXPECT_NEAR(r[2].hi, -1.f, 0.3f);
  EXPECT_LT(r[2].hi, 0.f) << "signs are kept";
}

TEST(FreshInputs, FreshValuesKeepTheScaleOfTheDrawnOnes) {
  // Normal values reach about 4 standard deviations out; the fresh uniform ones keep the
  // mean and standard deviation instead of spreading over that whole range.
  OpDef def;
  def.tensor_args = {{"x", ArgRole::in, 0}};
  OpCase c;
  c.tensors = {Tensor::empty({4096}, DType::f32)};
  fill_normal(c.tensors[0].view(), test::seed_for("fresh_scale"), 0, 2.f, 0.5f);
  const std::vector<FreshInputRange> r = fresh_input_ranges(def, c);
  ASSERT_TRUE(r[0].refill);
  EXPECT_NEAR(r[0].lo, 2.f - std::sqrt(3.f) * 0.5f, 0.05f);
  EXPECT_NEAR(r[0].hi, 2.f + std::sqrt(3.f) * 0.5f, 0.05f);
  write_fresh_inputs(r, c, 77, nullptr);
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < 4096; ++i) sum += at(c.tensors[0], i), sum_sq += at(c.tensors[0], i) * at(c.tensors[0], i);
  const double mean = sum / 4096, sd = std::sqrt(sum_sq / 4096 - mean * mean);
  EXPECT_NEAR(mean, 2.0, 0.05);
  EXPECT_NEAR(sd, 0.5, 0.05);
}

TEST(FreshInputs, NonFiniteValuesKeepTheirTensor) {
  Mixed m = mixed_case(test::seed_for("fresh_nonfinite"));
  m.c.tensors[0].data_as<uint16_t>()[5] = 0x7f80;  // bf16 +inf: a mask, say
  EXPECT_FALSE(fresh_input_ranges(m.def, m.c)[0].refill);
}

TEST(FreshInputs, OneSeedWritesTheSameBitsAnotherSeedOthers) {
  const uint64_t seed = test::seed_for("fresh_write");
  const Mixed m = mixed_case(seed);
  const std::vector<FreshInputRange> r = fresh_input_ranges(m.def, m.c);
  auto copy = [&] {
    OpCase c = m.c;
    for (auto& t : c.tensors) t = t.clone();
    return c;
  };
  OpCase a = copy(), b = copy(), other = copy();
  write_fresh_inputs(r, a, seed + 1, nullptr);
  write_fresh_inputs(r, b, seed + 1, nullptr);
  write_fresh_inputs(r, other, seed + 2, nullptr);
  for (size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(m.def.tensor_args[i].name);
    EXPECT_TRUE(same_bytes(a.tensors[i], b.tensors[i]));
    if (!r[i].refill) {
      const ArgRole role = m.def.tensor_args[i].role;
      if (role != ArgRole::out && role != ArgRole::workspace) {
        EXPECT_TRUE(same_bytes(a.tensors[i], m.c.tensors[i])) << "left alone";
      }
      continue;
    }
    int64_t same_as_checked = 0, same_as_other = 0;
    for (int64_t k = 0; k < a.tensors[i].numel(); ++k) {
      const double v = at(a.tensors[i], k);
      // Drawn in float, then rounded to the dtype: up to half an ulp past the bounds.
      const double ulp = std::ldexp(1.0, -7);  // bf16's, relative; finer for f32
      EXPECT_GE(v, r[i].lo - std::fabs(r[i].lo) * ulp);
      EXPECT_LE(v, r[i].hi + std::fabs(r[i].hi) * ulp);
      same_as_checked += v == at(m.c.tensors[i], k);
      same_as_other += v == at(other.tensors[i], k);
    }
    // bf16 has 256 values per octave: a few coincidences, not many.
    EXPECT_LT(same_as_checked, a.tensors[i].numel() / 8);
    EXPECT_LT(same_as_other, a.tensors[i].numel() / 8);
  }
}

TEST(FreshInputs, LargeInputsKeepTheirValuesWhileASmallerOneIsFresh) {
  const Mixed m = mixed_case(test::seed_for("fresh_large"));
  // x is 8 x 32 bf16 (512 bytes), acc 8 x 32 f32 (1024 bytes).
  std::vector<FreshInputRange> r = fresh_input_ranges(m.def, m.c);
  EXPECT_EQ(keep_large_inputs(r, m.c, 600), 1);
  EXPECT_TRUE(r[0].refill);
  EXPECT_FALSE(r[2].refill) << "over the limit, and x is still fresh";
  // With nothing small left fresh, every input stays fresh.
  r = fresh_input_ranges(m.def, m.c);
  EXPECT_EQ(keep_large_inputs(r, m.c, 100), 0);
  EXPECT_TRUE(r[0].refill);
  EXPECT_TRUE(r[2].refill);
}

TEST(FreshInputs, EveryTimedCallHasItsOwnSecretSeed) {
  std::set<uint64_t> seen;
  for (int call = 0; call < 1000; ++call) seen.insert(timed_call_seed(42, call));
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(timed_call_seed(42, 7), timed_call_seed(42, 7));
  EXPECT_NE(timed_call_seed(42, 7), timed_call_seed(43, 7));
}

}  // namespace
}  // namespace fk::bench
