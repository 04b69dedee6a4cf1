#include "harness/time/cpu_time.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fk::bench {
namespace {

// A thread that spins while this one sleeps shows up with about the time it spun.
TEST(CpuTime, AnotherThreadsSpinShowsBetweenTwoSamples) {
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const auto before = other_threads_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto after = other_threads_cpu_seconds();
  stop = true;
  spin.join();
  const double used = cpu_seconds_between(before, after);
  EXPECT_GT(used, 0.03);  // a loaded machine may give the spinner less than all 100 ms
  EXPECT_LT(used, 0.5);
}

// The calling thread's own work is not counted, and an idle process shows almost nothing.
TEST(CpuTime, OwnWorkIsNotCounted) {
  const auto before = other_threads_cpu_seconds();
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + 1.0;
  EXPECT_LT(cpu_seconds_between(before, other_threads_cpu_seconds()), 0.002);
}

TEST(CpuTime, ThreadsThatStartedInBetweenCountWholeAndEndedOnesAreLeftOut) {
  EXPECT_DOUBLE_EQ(cpu_seconds_between({{1, 2.0}, {2, 5.0}}, {{1, 2.5}, {3, 0.25}}), 0.75);
}

}  // namespace
}  // namespace fk::bench
