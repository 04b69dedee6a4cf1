// Folding one side's repeated engine runs (harness/e2e/repeat_runs.h): timings become medians, the
// first run's outputs and teacher-forced figures stay, and a run with other tokens marks
// the side as not reproducible.
#include <gtest/gtest.h>

#include "harness/e2e/repeat_runs.h"
#include "fk/status.h"

namespace fk::e2e {
namespace {

using nlohmann::json;

json run(double elapsed, std::vector<double> e2e, std::vector<std::vector<int64_t>> outputs, bool teacher) {
  json r = {{"elapsed_s", elapsed}, {"output_tokens", 10}, {"output_tokens_per_s", 10 / elapsed},
            {"e2e_s", e2e}, {"outputs", outputs}};
  if (teacher) r["teacher_forced"] = {{"positions", 4}, {"max_rel_err", 0.0}, {"mean_kl", 0.0}};
  return r;
}

TEST(RepeatRuns, TimingsAreMediansAndTheFirstRunsOutputsStay) {
  const json folded = fold_runs({run(2.0, {1.0, 2.0}, {{1, 2}, {3}}, true), run(1.0, {0.5, 1.0}, {{1, 2}, {3}}, false),
                                 run(4.0, {3.0, 0.1}, {{1, 2}, {3}}, false)});
  EXPECT_DOUBLE_EQ(folded["elapsed_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(folded["output_tokens_per_s"].get<double>(), 5.0);
  EXPECT_EQ(folded["e2e_s"], json({1.0, 1.0}));
  EXPECT_EQ(folded["elapsed_s_runs"], json({2.0, 1.0, 4.0}));
  EXPECT_TRUE(folded["reproducible"].get<bool>());
  EXPECT_EQ(folded["runs"], 3);
  EXPECT_TRUE(folded.contains("teacher_forced"));  // only the first run computes it
}

TEST(RepeatRuns, EvenCountsTakeTheMeanOfTheMiddleTwo) {
  const json folded = fold_runs({run(1.0, {1.0}, {{7}}, true), run(3.0, {2.0}, {{7}}, false)});
  EXPECT_DOUBLE_EQ(folded["elapsed_s"].get<double>(), 2.0);
  EXPECT_EQ(folded["e2e_s"], json({1.5}));
}

TEST(RepeatRuns, OtherTokensInALaterRunMeanNotReproducible) {
  const json folded = fold_runs({run(1.0, {1.0}, {{7, 8}}, true), run(1.0, {1.0}, {{7, 9}}, false)});
  EXPECT_FALSE(folded["reproducible"].get<bool>());
  EXPECT_EQ(folded["outputs"], json({{7, 8}}));
}

TEST(RepeatRuns, PairsAlternateTheirOrder) {
  EXPECT_TRUE(baseline_first(0));
  EXPECT_FALSE(baseline_first(1));
  EXPECT_TRUE(baseline_first(2));
}

TEST(RepeatRuns, NoRunsIsAnError) { EXPECT_THROW(fold_runs({}), Error); }

}  // namespace
}  // namespace fk::e2e
