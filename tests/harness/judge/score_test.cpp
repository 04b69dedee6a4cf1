#include "harness/judge/score.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fk::bench {
namespace {

TaskScore score(const char* id, const char* level, Verdict v, double s) {
  TaskScore t;
  t.task = id;
  t.level = level;
  t.category = "dense-llm";
  t.verdict = v;
  t.speedup = s;
  return t;
}

TEST(Score, FastPCountsOnlyCorrectTasksAboveThreshold) {
  std::vector<TaskScore> s = {score("a", "L1", Verdict::PASSED, 1.5), score("b", "L1", Verdict::PASSED, 0.9),
                              score("c", "L2", Verdict::INCORRECT, 0), score("d", "L2", Verdict::REWARD_HACK, 0)};
  auto curve = fast_p_curve(s, {0, 1, 1.2, 2});
  EXPECT_DOUBLE_EQ(curve[0].second, 0.5);   // p = 0: correct
  EXPECT_DOUBLE_EQ(curve[1].second, 0.25);  // faster than the baseline
  EXPECT_DOUBLE_EQ(curve[2].second, 0.25);
  EXPECT_DOUBLE_EQ(curve[3].second, 0.0);
}

TEST(Score, GeomeanPerLevelAndOverall) {
  std::vector<TaskScore> s = {score("a", "L1", Verdict::PASSED, 2.0), score("b", "L1", Verdict::PASSED, 0.5),
                              score("c", "L2", Verdict::PASSED, 4.0), score("d", "L2", Verdict::INCORRECT, 0)};
  auto agg = aggregate(s);
  EXPECT_NEAR(agg["level:L1"].geomean_speedup, 1.0, 1e-12);
  EXPECT_NEAR(agg["level:L2"].geomean_speedup, 4.0, 1e-12);
  EXPECT_EQ(agg["level:L2"].correct, 1);
  EXPECT_NEAR(agg["overall"].geomean_speedup, std::cbrt(4.0), 1e-12);  // (2 * 0.5 * 4)^(1/3)
  EXPECT_EQ(agg["overall"].tasks, 4);
}

TEST(Score, AggregateOfLeavesFailuresOutOfTheMean) {
  const Aggregate a = aggregate_of({{true, 2.0}, {false, 100.0}, {true, 8.0}, {false, 0.0}});
  EXPECT_EQ(a.tasks, 4);
  EXPECT_EQ(a.correct, 2);
  EXPECT_NEAR(a.geomean_speedup, 4.0, 1e-12);  // sqrt(2 * 8): neither 100 nor 0 enters
  EXPECT_EQ(aggregate_of({{false, 3.0}}).geomean_speedup, 0.0);
}

TEST(Score, WeightedGeomeanUsesCallCounts) {
  // 3 calls at 2x and 1 call at 0.5x: exp((3 ln 2 + ln 0.5) / 4) = 2^(1/2)
  EXPECT_NEAR(weighted_geomean({{2.0, 3}, {0.5, 1}}), std::sqrt(2.0), 1e-12);
  EXPECT_EQ(weighted_geomean({}), 0.0);
}

}  // namespace
}  // namespace fk::bench
