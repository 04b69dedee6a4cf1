// The pieces of fk e2e eval's teacher forcing that need no engine: where the forced
// positions lie, and how two runs' logits are summed up.
#include <gtest/gtest.h>

#include "harness/e2e/teacher_forcing.h"

namespace fk::e2e {
namespace {

TEST(TeacherForcing, PositionsSpreadFromTheFirstTokenToTheLast) {
  EXPECT_EQ(spread_positions(10, 4), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(spread_positions(5, 8), (std::vector<int64_t>{0, 1, 2, 3, 4}));  // no more than the tokens
  EXPECT_EQ(spread_positions(7, 1), (std::vector<int64_t>{6}));
  EXPECT_EQ(spread_positions(1, 3), (std::vector<int64_t>{0}));
}

TEST(TeacherForcing, DecodeForcedPositionsAreGeneratedTokensAfterAPromptToken) {
  EXPECT_EQ(decode_forced_count(20, 6, 8), 6);  // every generated token
  EXPECT_EQ(decode_forced_count(20, 12, 8), 8);  // at most n
  EXPECT_EQ(decode_forced_count(3, 5, 8), 2);    // a prompt token first
  EXPECT_EQ(decode_forced_count(1, 0, 8), 0);
}

TEST(TeacherForcing, LogitErrorsSumRowsUp) {
  const float want[6] = {1, 2, 4, 0, 0, 1};
  const float got[6] = {1, 2, 3, 0, 0, 1};
  LogitErrors e;
  e.add(want, got, 2, 3);
  const nlohmann::json j = e.to_json();
  EXPECT_EQ(j["positions"], 2);
  EXPECT_DOUBLE_EQ(j["max_rel_err"].get<double>(), 0.25);  // |4 - 3| / 4, the first row's
  EXPECT_NEAR(j["mean_abs_err"].get<double>(), (1.0 / 3 + 0) / 2, 1e-12);
  EXPECT_GT(j["max_kl"].get<double>(), 0);
  EXPECT_NEAR(j["mean_kl"].get<double>(), j["max_kl"].get<double>() / 2, 1e-12);  // the second row's is 0
}

}  // namespace
}  // namespace fk::e2e
