#include "harness/time/stats.h"

#include <gtest/gtest.h>

#include "fk/status.h"

namespace fk::bench {
namespace {

TEST(Stats, PercentilesInterpolateBetweenRanks) {
  const std::vector<double> v = {5, 1, 4, 2, 3};  // sorted: 1 2 3 4 5
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3);
  EXPECT_DOUBLE_EQ(percentile(v, 10), 1.4);  // rank 0.4
  EXPECT_DOUBLE_EQ(percentile(v, 90), 4.6);  // rank 3.6
  EXPECT_DOUBLE_EQ(median({1, 2, 3, 4}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
}

TEST(Stats, SummaryOfASample) {
  std::vector<double> v;
  for (int i = 1; i <= 101; ++i) v.push_back(i);
  const Summary s = summarize(v);
  EXPECT_EQ(s.n, 101u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 101);
  EXPECT_DOUBLE_EQ(s.median, 51);
  EXPECT_DOUBLE_EQ(s.p10, 11);
  EXPECT_DOUBLE_EQ(s.p90, 91);
  EXPECT_DOUBLE_EQ(s.mean, 51);
  EXPECT_NEAR(s.stddev, 29.3002, 1e-4);
  EXPECT_NEAR(s.spread(), 80.0 / 51.0, 1e-12);
  const auto j = to_json(s);
  EXPECT_DOUBLE_EQ(j["median"].get<double>(), 51);
  EXPECT_EQ(j["n"].get<size_t>(), 101u);
}

TEST(Stats, SingleSampleHasNoSpread) {
  const Summary s = summarize({3.5});
  EXPECT_DOUBLE_EQ(s.median, 3.5);
  EXPECT_DOUBLE_EQ(s.p10, 3.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.spread(), 0);
}

TEST(Stats, BadInputIsAClearError) {
  EXPECT_THROW(percentile({}, 50), Error);
  EXPECT_THROW(summarize({}), Error);
  EXPECT_THROW(percentile({1, 2}, 101), Error);
  EXPECT_THROW(percentile({1, 2}, -1), Error);
}

}  // namespace
}  // namespace fk::bench
