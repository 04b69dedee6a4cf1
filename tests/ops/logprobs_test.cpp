// compute_logprobs: the CPU reference's values against hand-computed log_softmax, rank order
// with ties and -inf logits, K = 0 and K = 20, and the errors bad arguments get.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/logprobs.h"

namespace fk::ops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Rows of logits with their sampled ids and outputs for K alternatives.
struct Call {
  Tensor sampled_logprob, topk_ids, topk_logprobs, logits, sampled_ids;
  Call(const std::vector<std::vector<double>>& rows, const std::vector<int64_t>& ids, int64_t K,
       DType dt = DType::f32) {
    const auto N = static_cast<int64_t>(rows.size());
    const int64_t V = N ? static_cast<int64_t>(rows[0].size()) : 1;
    sampled_logprob = Tensor::empty({N}, DType::f32);
    topk_ids = Tensor::empty({N, K}, DType::i32);
    topk_logprobs = Tensor::empty({N, K}, DType::f32);
    logits = Tensor::empty({N, V}, dt);
    sampled_ids = Tensor::empty({N}, DType::i64);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t v = 0; v < V; ++v) set(logits.view(), rows[static_cast<size_t>(n)][static_cast<size_t>(v)], n, v);
      sampled_ids.data_as<int64_t>()[n] = ids[static_cast<size_t>(n)];
    }
  }
  ComputeLogprobsArgs args() const { return {sampled_logprob, topk_ids, topk_logprobs, logits, sampled_ids}; }
  fk_status run() const {
    const ComputeLogprobsArgs a = args();
    return OpRegistry::global().baseline("compute_logprobs", DeviceType::cpu)(&a, nullptr);
  }
  float logprob(int64_t n) const { return sampled_logprob.data_as<float>()[n]; }
  int32_t id(int64_t n, int64_t k) const { return topk_ids.data_as<int32_t>()[n * topk_ids.size(1) + k]; }
  float top(int64_t n, int64_t k) const { return topk_logprobs.data_as<float>()[n * topk_logprobs.size(1) + k]; }
};

double log_softmax(const std::vector<double>& x, size_t i) {
  double m = -kInf;
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  return x[i] - m - std::log(s);
}

TEST(ComputeLogprobs, ValuesAreLogSoftmaxOfTheRawLogits) {
  const std::vector<double> row = {1.5, -0.25, 3.0, 0.0, 2.75};
  Call c({row, row}, {2, 1}, 3);
  ASSERT_EQ(c.run(), FK_OK) << last_error_message();
  EXPECT_NEAR(c.logprob(0), log_softmax(row, 2), 1e-6);
  EXPECT_NEAR(c.logprob(1), log_softmax(row, 1), 1e-6);
  const int32_t order[] = {2, 4, 0};
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(c.id(0, k), order[k]);
    EXPECT_NEAR(c.top(0, k), log_softmax(row, static_cast<size_t>(order[k])), 1e-6);
  }
  // The probabilities of a row sum to one.
  double total = 0;
  for (size_t i = 0; i < row.size(); ++i) total += std::exp(log_softmax(row, i));
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(ComputeLogprobs, TiesGoToTheLowerTokenId) {
  const std::vector<double> row = {0.5, 2.0, 2.0, -1.0, 2.0, 0.5};
  Call c({row}, {4}, 6, DType::bf16);
  ASSERT_EQ(c.run(), FK_OK) << last_error_message();
  const int32_t order[] = {1, 2, 4, 0, 5, 3};
  for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(c.id(0, k), order[k]) << k;
  EXPECT_EQ(c.top(0, 0), c.top(0, 2));
  EXPECT_EQ(c.logprob(0), c.top(0, 0));
}

TEST(ComputeLogprobs, NegativeInfinityLogitsHaveLogprobMinusInfinityAndRankLast) {
  const std::vector<double> row = {-kInf, 1.0, -kInf, 0.0, -kInf};
  Call c({row}, {2}, 5);
  ASSERT_EQ(c.run(), FK_OK) << last_error_message();
  EXPECT_EQ(c.logprob(0), -std::numeric_limits<float>::infinity());
  const int32_t order[] = {1, 3, 0, 2, 4};  // finite first, then -inf by id
  for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(c.id(0, k), order[k]) << k;
  EXPECT_NEAR(c.top(0, 0), log_softmax({1.0, 0.0}, 0), 1e-6);
  EXPECT_EQ(c.top(0, 2), -std::numeric_limits<float>::infinity());
}

TEST(ComputeLogprobs, KZeroGivesOnlyTheSampledLogprob) {
  Call c({{0.0, 1.0, 2.0}}, {0}, 0);
  ASSERT_EQ(c.run(), FK_OK) << last_error_message();
  EXPECT_NEAR(c.logprob(0), log_softmax({0.0, 1.0, 2.0}, 0), 1e-6);
}

TEST(ComputeLogprobs, TwentyAlternativesOfALargeVocabulary) {
  std::vector<double> row(50000);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(std::sin(static_cast<double>(i) * 0.37) * 4.0);
  Call c({row}, {123}, kMaxTopLogprobs);
  ASSERT_EQ(c.run(), FK_OK) << last_error_message();
  for (int64_t k = 1; k < kMaxTopLogprobs; ++k) {
    const double prev = row[static_cast<size_t>(c.id(0, k - 1))], cur = row[static_cast<size_t>(c.id(0, k))];
    EXPECT_TRUE(prev > cur || (prev == cur && c.id(0, k - 1) < c.id(0, k))) << k;
    EXPECT_LE(c.top(0, k), c.top(0, k - 1));
  }
  // Nothing outside the top 20 is larger than the 20th.
  const double last = row[static_cast<size_t>(c.id(0, kMaxTopLogprobs - 1))];
  int above = 0;
  for (double v : row) above += v > last;
  EXPECT_LT(above, kMaxTopLogprobs);
  EXPECT_NEAR(c.logprob(0), log_softmax(row, 123), 1e-5);
}

std::string error_of(const Call& c) {
  if (c.run() == FK_OK) return "";
  return last_error_message();
}

TEST(ComputeLogprobs, BadArgumentsAreClearErrors) {
  const std::vector<double> row = {0.0, 1.0, 2.0};
  {
    Call c({row}, {3}, 1);
    EXPECT_NE(error_of(c).find("sampled_ids[0] is 3, outside the vocabulary"), std::string::npos) << error_of(c);
  }
  {
    Call c({{0.0, NAN, 1.0}}, {0}, 1);
    EXPECT_NE(error_of(c).find("row 0 token 1 is nan"), std::string::npos) << error_of(c);
  }
  {
    Call c({{-kInf, -kInf}}, {0}, 1);
    EXPECT_NE(error_of(c).find("no finite logit"), std::string::npos) << error_of(c);
  }
  {
    Call c({row}, {0}, 4);  // K > V
    EXPECT_NE(error_of(c).find("K) must be in [0, min(20, V = 3)]"), std::string::npos) << error_of(c);
  }
  {
    std::vector<double> wide(30, 0.0);
    Call c({wide}, {0}, 21);  // K > 20
    EXPECT_NE(error_of(c).find("K) must be in [0, min(20"), std::string::npos) << error_of(c);
  }
  {
    Call c({row}, {0}, 2);
    c.topk_logprobs = Tensor::empty({1, 2}, DType::bf16);
    EXPECT_NE(error_of(c).find("topk_logprobs must be f32"), std::string::npos) << error_of(c);
  }
  {
    Call c({row}, {0}, 2);
    c.sampled_ids = Tensor::empty({1}, DType::i32);
    EXPECT_NE(error_of(c).find("sampled_ids must be i64"), std::string::npos) << error_of(c);
  }
  {
    Call c({row, row}, {0, 0}, 2);
    c.topk_ids = Tensor::empty({1, 2}, DType::i32);
    EXPECT_NE(error_of(c).find("topk_ids dimension 0 must be 2"), std::string::npos) << error_of(c);
  }
}

}  // namespace
}  // namespace fk::ops
