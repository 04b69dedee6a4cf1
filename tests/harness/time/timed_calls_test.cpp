// Timed calls: the warm-up calls first and untimed, then one time per timed call, in call
// order; no timed call or a negative count refused.
#include "harness/time/timed_calls.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fk/status.h"

namespace fk::bench {
namespace {

TEST(TimedCalls, WarmUpsUntimedThenOneTimePerCallInOrder) {
  int calls = 0;
  const std::vector<double> s = time_calls(2, 3, [&] {
    ++calls;
    if (calls == 4) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the second timed call
  });
  EXPECT_EQ(calls, 5);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_GE(s[1], 0.02);
  EXPECT_LT(s[0], s[1]);
  EXPECT_LT(s[2], s[1]);
  EXPECT_GE(s[0], 0.0);
}

TEST(TimedCalls, NoWarmUp) {
  int calls = 0;
  EXPECT_EQ(time_calls(0, 1, [&] { ++calls; }).size(), 1u);
  EXPECT_EQ(calls, 1);
}

TEST(TimedCalls, CountsRefused) {
  EXPECT_THROW(time_calls(0, 0, [] {}), Error);
  EXPECT_THROW(time_calls(-1, 1, [] {}), Error);
}

}  // namespace
}  // namespace fk::bench
