// The sample of timed calls whose outputs are checked: every call for small outputs, and
// for large ones exactly one call of every block of four at a position the secret seed
// decides and the candidate cannot know.
#include "harness/judge/timed_check_sample.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "fk/status.h"

namespace fk::bench {
namespace {

std::vector<int> checked_positions(uint64_t secret, int blocks, int stride) {
  std::vector<int> out;
  for (int call = 0; call < blocks * stride; ++call)
    if (timed_call_checked(secret, call, stride)) out.push_back(call);
  return out;
}

TEST(TimedCheckSample, SmallOutputsAreCheckedOnEveryCall) {
  EXPECT_EQ(timed_check_stride(0), 1);
  EXPECT_EQ(timed_check_stride(kCheckEveryTimedCallBytes), 1);
  EXPECT_EQ(timed_check_stride(kCheckEveryTimedCallBytes + 1), kLargestTimedCheckStride);
  EXPECT_EQ(kLargestTimedCheckStride, 4) << "at least one timed call in four is checked";
  for (int call = 0; call < 100; ++call) EXPECT_TRUE(timed_call_checked(7, call, 1));
}

TEST(TimedCheckSample, ExactlyOneCallOfEveryBlockIsChecked) {
  for (uint64_t secret : {1ull, 2ull, 0xfeedfaceull}) {
    const std::vector<int> pos = checked_positions(secret, 250, 4);
    ASSERT_EQ(pos.size(), 250u);
    for (size_t k = 0; k < pos.size(); ++k) EXPECT_EQ(pos[k] / 4, static_cast<int>(k));
  }
}

TEST(TimedCheckSample, ThePositionsAreSecretNotFixed) {
  const std::vector<int> a = checked_positions(11, 200, 4);
  // Every position within the block occurs (a fixed one would let a candidate cheat on the others).
  std::set<int> offsets;
  for (int p : a) offsets.insert(p % 4);
  EXPECT_EQ(offsets.size(), 4u);
  EXPECT_EQ(a, checked_positions(11, 200, 4)) << "deterministic for one secret";
  EXPECT_NE(a, checked_positions(12, 200, 4)) << "another secret, other positions";
}

TEST(TimedCheckSample, BadArgumentsAreRefused) {
  EXPECT_THROW(timed_call_checked(1, 0, 0), Error);
  EXPECT_THROW(timed_call_checked(1, -1, 4), Error);
}

}  // namespace
}  // namespace fk::bench
