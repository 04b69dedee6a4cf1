// sample: the CPU reference's semantics (greedy, filters and their order, the draw), its
// distribution over many seeds, parameter errors, and the output check GPU tokens get.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/sampling.h"
#include "fk/philox.h"
#include "ops/sampling/sample_reference.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

// B rows of one logit vector, with per-row parameters set by the caller.
struct Batch {
  Tensor out, logits, temperature, top_k, top_p, min_p, seed, offset;
  Batch(const std::vector<double>& row, int64_t B, DType dt = DType::f32) {
    const auto V = static_cast<int64_t>(row.size());
    out = Tensor::empty({B}, DType::i64);
    logits = Tensor::empty({B, V}, dt);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t v = 0; v < V; ++v) set(logits.view(), row[static_cast<size_t>(v)], b, v);
    temperature = Tensor::empty({B}, DType::f32);
    top_k = Tensor::zeros({B}, DType::i32);
    top_p = Tensor::empty({B}, DType::f32);
    min_p = Tensor::zeros({B}, DType::f32);
    seed = Tensor::empty({B}, DType::i64);
    offset = Tensor::empty({B}, DType::i64);
    for (int64_t b = 0; b < B; ++b) {
      set(temperature.view(), 1.0, b);
      set(top_p.view(), 1.0, b);
      seed.data_as<int64_t>()[b] = 1234567;
      offset.data_as<int64_t>()[b] = b;  // a fresh Philox stream per row
    }
  }
  void fill(Tensor& t, double v) {
    for (int64_t b = 0; b < t.numel(); ++b) set(t.view(), v, b);
  }
  SampleArgs args() const { return {out, logits, temperature, top_k, top_p, min_p, seed, offset}; }
  fk_status run() const {
    const SampleArgs a = args();
    return OpRegistry::global().baseline("sample", DeviceType::cpu)(&a, nullptr);
  }
  int64_t token(int64_t b) const { return out.data_as<int64_t>()[b]; }
};

std::vector<double> log_probs(const std::vector<double>& p) {
  std::vector<double> x;
  for (double v : p) x.push_back(std::log(v));
  return x;
}

TEST(Sample, GreedyIsArgmaxWithLowestIdOnTies) {
  Batch batch({0.5, 3.0, -1.0, 3.0, 2.0}, 4);
  batch.fill(batch.temperature, 0.0);
  batch.fill(batch.top_k, 2);      // ignored when greedy
  batch.fill(batch.top_p, 0.3);
  ASSERT_EQ(batch.run(), FK_OK) << last_error_message();
  for (int64_t b = 0; b < 4; ++b) EXPECT_EQ(batch.token(b), 1);
}

TEST(Sample, TopKOneAndTinyTopPAreGreedy) {
  Batch batch({0.1, 0.7, 0.7, 0.3, -2.0, 0.65}, 200);
  for (int64_t b = 0; b < 200; ++b) set(batch.temperature.view(), 0.2 + 0.01 * static_cast<double>(b), b);
  batch.fill(batch.top_k, 1);
  ASSERT_EQ(batch.run(), FK_OK) << last_error_message();
  for (int64_t b = 0; b < 200; ++b) ASSERT_EQ(batch.token(b), 1) << b;
  batch.fill(batch.top_k, 0);
  batch.fill(batch.top_p, 1e-6);
  ASSERT_EQ(batch.run(), FK_OK) << last_error_message();
  for (int64_t b = 0; b < 200; ++b) ASSERT_EQ(batch.token(b), 1) << b;
}

SampleTrace trace(const std::vector<double>& x, double t, int64_t k, double p, double min_p) {
  return sample_row(x, SampleParams{t, k, p, min_p, 1, 2}, 0);
}

TEST(Sample, FiltersKeepRankPrefixes) {
  const std::vector<double> x = log_probs({0.2, 0.4, 0.1, 0.3});  // rank order: 1, 3, 0, 2
  EXPECT_EQ(trace(x, 1, 0, 1, 0).survivors, (std::vector<int64_t>{1, 3, 0, 2}));
  EXPECT_EQ(trace(x, 1, 2, 1, 0).survivors, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(trace(x, 1, 4, 1, 0).survivors.size(), 4u);  // top_k >= V: off
  EXPECT_EQ(trace(x, 1, 0, 0.39, 0).survivors, (std::vector<int64_t>{1}));
  EXPECT_EQ(trace(x, 1, 0, 0.41, 0).survivors, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(trace(x, 1, 0, 0.71, 0).survivors, (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(trace(x, 1, 0, 0.91, 0).survivors, (std::vector<int64_t>{1, 3, 0, 2}));
  // min_p relative to the top token: keep w = p / 0.4 >= min_p
  EXPECT_EQ(trace(x, 1, 0, 1, 0.6).survivors, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(trace(x, 1, 0, 1, 0.26).survivors, (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(trace(x, 1, 0, 1, 0.24).survivors, (std::vector<int64_t>{1, 3, 0, 2}));
  // top-p runs on the top-k survivors' renormalised mass: with top_k = 2 the mass is 0.7, and
  // 0.55 * 0.7 < 0.4 cuts after token 1 (on the full distribution 0.55 would keep token 3).
  EXPECT_EQ(trace(x, 1, 2, 0.55, 0).survivors, (std::vector<int64_t>{1}));
  EXPECT_EQ(trace(x, 1, 0, 0.55, 0).survivors, (std::vector<int64_t>{1, 3}));
  // Temperature sharpens before the filters: at T = 0.5 token 1 holds 0.16 / 0.30 of the mass.
  EXPECT_EQ(trace(x, 0.5, 0, 0.5, 0).survivors, (std::vector<int64_t>{1}));
  EXPECT_EQ(trace(x, 0.5, 0, 0.54, 0).survivors, (std::vector<int64_t>{1, 3}));
}

TEST(Sample, DrawWalksTheRankOrderWithU) {
  const std::vector<double> x = log_probs({0.2, 0.4, 0.1, 0.3});
  for (uint64_t offset = 0; offset < 200; ++offset) {
    const SampleTrace t = sample_row(x, SampleParams{1, 0, 1, 0, 99, offset}, 0);
    const double u = t.u;
    const int64_t expect = u < 0.4 ? 1 : (u < 0.7 ? 3 : (u < 0.9 ? 0 : 2));
    EXPECT_EQ(t.token, expect) << "u = " << u;
  }
}

// Empirical frequencies over many Philox streams against the filtered distribution.
void expect_distribution(const std::vector<double>& x, double t, int64_t k, double p, double min_p,
                         const std::vector<double>& expected) {
  const int64_t B = 20000;
  Batch batch(x, B);
  batch.fill(batch.temperature, t);
  batch.fill(batch.top_k, static_cast<double>(k));
  batch.fill(batch.top_p, p);
  batch.fill(batch.min_p, min_p);
  const uint64_t seed = test::seed_for("SampleDistribution");
  for (int64_t b = 0; b < B; ++b) batch.seed.data_as<int64_t>()[b] = static_cast<int64_t>(seed + static_cast<uint64_t>(b));
  ASSERT_EQ(batch.run(), FK_OK) << last_error_message();
  std::vector<int64_t> counts(x.size());
  for (int64_t b = 0; b < B; ++b) ++counts[static_cast<size_t>(batch.token(b))];
  for (size_t v = 0; v < x.size(); ++v) {
    const double q = expected[v], freq = static_cast<double>(counts[v]) / B;
    const double sigma = std::sqrt(q * (1 - q) / B);
    if (q == 0) EXPECT_EQ(counts[v], 0) << "token " << v << " was filtered out";
    else EXPECT_NEAR(freq, q, 5 * sigma + 1e-9) << "token " << v << " seed " << seed;
  }
}

TEST(Sample, DistributionMatchesProbabilities) {
  const std::vector<double> p = {0.05, 0.3, 0.15, 0.25, 0.1, 0.15};
  const std::vector<double> x = log_probs(p);
  expect_distribution(x, 1, 0, 1, 0, p);
  // T = 0.5 squares the probabilities.
  std::vector<double> sq;
  double z = 0;
  for (double v : p) z += v * v;
  for (double v : p) sq.push_back(v * v / z);
  expect_distribution(x, 0.5, 0, 1, 0, sq);
  // top_k = 3 keeps tokens 1, 3 and 2 (ties 2 and 5 at 0.15 go to the lower id).
  expect_distribution(x, 1, 3, 1, 0, {0, 0.3 / 0.7, 0.15 / 0.7, 0.25 / 0.7, 0, 0});
  // top_p = 0.6 keeps 1, 3 and then 2 (mass before it 0.55 <= 0.6).
  expect_distribution(x, 1, 0, 0.6, 0, {0, 0.3 / 0.7, 0.15 / 0.7, 0.25 / 0.7, 0, 0});
  // min_p = 0.4 keeps p >= 0.12: tokens 1, 3, 2, 5.
  expect_distribution(x, 1, 0, 1, 0.4, {0, 0.3 / 0.85, 0.15 / 0.85, 0.25 / 0.85, 0, 0.15 / 0.85});
}

void expect_param_error(const std::function<void(Batch&)>& change, const std::string& needle) {
  Batch batch({1.0, 2.0, 3.0}, 2);
  change(batch);
  EXPECT_EQ(batch.run(), FK_ERR_INVALID_ARGUMENT) << needle;
  EXPECT_NE(std::string(last_error_message()).find(needle), std::string::npos) << last_error_message();
}

TEST(Sample, BadParametersAreClearErrors) {
  expect_param_error([](Batch& b) { set(b.temperature.view(), -0.5, 1); }, "row 1: temperature must be finite and >= 0");
  expect_param_error([](Batch& b) { set(b.temperature.view(), NAN, 0); }, "temperature must be finite");
  expect_param_error([](Batch& b) { set(b.temperature.view(), INFINITY, 0); }, "temperature must be finite");
  expect_param_error([](Batch& b) { set(b.top_k.view(), -1, 0); }, "top_k must be >= 0");
  expect_param_error([](Batch& b) { set(b.top_p.view(), 0.0, 0); }, "top_p must be in (0, 1]");
  expect_param_error([](Batch& b) { set(b.top_p.view(), 1.5, 0); }, "top_p must be in (0, 1]");
  expect_param_error([](Batch& b) { set(b.top_p.view(), NAN, 0); }, "top_p must be in (0, 1]");
  expect_param_error([](Batch& b) { set(b.min_p.view(), -0.1, 0); }, "min_p must be in [0, 1]");
  expect_param_error([](Batch& b) { set(b.min_p.view(), 1.5, 0); }, "min_p must be in [0, 1]");
  expect_param_error([](Batch& b) { set(b.logits.view(), NAN, 1, 2); }, "row 1: logit 2 is nan");
  expect_param_error([](Batch& b) { set(b.logits.view(), INFINITY, 0, 0); }, "logits must be finite or -inf");
  expect_param_error([](Batch& b) { for (int v = 0; v < 3; ++v) set(b.logits.view(), -INFINITY, 0, v); },
                     "every logit is -inf");
  expect_param_error([](Batch& b) { b.top_k = Tensor::zeros({2}, DType::i64); }, "top_k must be i32");
  expect_param_error([](Batch& b) { b.seed = Tensor::zeros({3}, DType::i64); }, "seed dimension 0 must be 2");
  expect_param_error([](Batch& b) { b.out = Tensor::zeros({2}, DType::i32); }, "out must be i64");
  expect_param_error([](Batch& b) { b.logits = Tensor::zeros({2, 3}, DType::f16); }, "logits must be one of f32/bf16");
}

TEST(Sample, MaskedTokensAreNeverDrawn) {
  Batch batch({-INFINITY, 1.0, -INFINITY, 0.5}, 500);
  ASSERT_EQ(batch.run(), FK_OK) << last_error_message();
  for (int64_t b = 0; b < 500; ++b) EXPECT_TRUE(batch.token(b) == 1 || batch.token(b) == 3) << batch.token(b);
  batch.fill(batch.temperature, 0);  // greedy on a row with -inf is fine too
  ASSERT_EQ(batch.run(), FK_OK) << last_error_message();
  EXPECT_EQ(batch.token(0), 1);
}

TEST(SampleCheck, JudgesTokensNearCdfBoundaries) {
  SampleTrace t;
  t.survivors = {4, 7, 1};
  t.weights = {0.5, 0.3, 0.2};
  t.total = 1.0;
  t.u = 0.5 - 1e-7;  // just below the 4 | 7 boundary
  t.token = 4;
  EXPECT_EQ(judge_sampled_token(t, 4, 1e-5), "");
  EXPECT_EQ(judge_sampled_token(t, 7, 1e-5), "");      // within eps of its interval [0.5, 0.8)
  EXPECT_NE(judge_sampled_token(t, 1, 1e-5), "");      // interval [0.8, 1): too far
  EXPECT_NE(judge_sampled_token(t, 9, 1e-5).find("not among"), std::string::npos);
  t.u = 0.3;
  EXPECT_NE(judge_sampled_token(t, 7, 1e-5), "");
  t.greedy = true;
  EXPECT_NE(judge_sampled_token(t, 7, 1.0).find("greedy"), std::string::npos);
}

// A top-p cut that falls within rounding of a survivor's boundary may land one token
// earlier on the GPU; the judgement accepts the draw that cut implies, and nothing else.
TEST(SampleCheck, AcceptsTopPCutsWithinRounding) {
  const std::vector<double> x = log_probs({0.5, 0.3, 0.2});  // w = 1, 0.6, 0.4; Z = 2
  SampleParams p{1, 0, 0.5 * (1 + 3e-6), 0, 5, 0};          // p * Z just above token 1's mass before
  while (!(philox_uniform(p.seed, p.offset, 0) > 0.7f && philox_uniform(p.seed, p.offset, 0) < 0.95f)) ++p.offset;
  const SampleTrace t = sample_row(x, p, 0);
  ASSERT_EQ(t.survivors, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(t.token, 1);
  EXPECT_NE(judge_sampled_token(t, 0, 1e-5), "");
  EXPECT_EQ(judge_sampled_row(x, p, 0, 0, 1e-5), "");  // the cut after token 0 is within rounding
  EXPECT_NE(judge_sampled_row(x, p, 0, 2, 1e-5), "");
  p.top_p = 0.5 * (1 + 1e-3);  // a clear cut: token 0 is wrong for this u
  EXPECT_NE(judge_sampled_row(x, p, 0, 0, 1e-5), "");
}

TEST(SampleCheck, OpCheckRejectsWrongTokens) {
  const OpDef& def = OpRegistry::global().def("sample");
  const Json w = {{"batch", 10}, {"vocab", 50}};
  OpCase host = def.make_case(w, 7);
  OpCase oracle = bench::make_oracle_case(def, host);
  bench::run_oracle(def, oracle);
  OpCase actual = oracle;
  EXPECT_EQ(def.check_outputs(host, oracle, actual), "");
  auto* tokens = actual.tensors[0].data_as<int64_t>();
  const int64_t saved = tokens[0];
  tokens[0] = (saved + 1) % 50;  // row 0 is greedy in the mixed mode
  EXPECT_NE(def.check_outputs(host, oracle, actual).find("row 0: greedy"), std::string::npos);
  tokens[0] = -6;
  EXPECT_NE(def.check_outputs(host, oracle, actual).find("outside the vocabulary"), std::string::npos);
  tokens[0] = saved;
  tokens[6] = (tokens[6] + 1) % 50;  // row 6 has top_k = 1: only one token is allowed
  EXPECT_NE(def.check_outputs(host, oracle, actual).find("not among"), std::string::npos);
}

}  // namespace
}  // namespace fk::ops
