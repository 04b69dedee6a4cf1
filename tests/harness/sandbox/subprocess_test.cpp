#include "harness/sandbox/subprocess.h"

#include <gtest/gtest.h>

namespace fk::bench {
namespace {

TEST(Subprocess, CapturesOutputAndExitCode) {
  auto r = run_process({"sh", "-c", "echo hello; echo oops >&2; exit 3"});
  EXPECT_TRUE(r.exited());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("hello"), std::string::npos);
  EXPECT_NE(r.output.find("oops"), std::string::npos);
}

TEST(Subprocess, TimesOutAndKillsTheGroup) {
  ProcessOptions o;
  o.timeout_s = 0.5;
  auto r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
}

// on_tick runs about every 100 ms while the child runs (a parent's progress line polls there).
TEST(Subprocess, TicksWhileTheChildRuns) {
  ProcessOptions o;
  int ticks = 0;
  o.on_tick = [&] { ++ticks; };
  auto r = run_process({"sh", "-c", "sleep 0.5"}, o);
  EXPECT_TRUE(r.exited());
  EXPECT_GE(ticks, 2);
  EXPECT_LE(ticks, 8);
}

TEST(Subprocess, ReportsTheSignalOfACrash) {
  auto r = run_process({"sh", "-c", "kill -SEGV $$"});
  EXPECT_FALSE(r.exited());
  EXPECT_EQ(r.term_signal, 11);
  EXPECT_NE(r.describe().find("signal 11"), std::string::npos);
}

TEST(Subprocess, ChildExitingWhileGrandchildHoldsThePipeReturns) {
  ProcessOptions o;
  o.timeout_s = 20;
  auto r = run_process({"sh", "-c", "sleep 30 & echo done"}, o);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
}

}  // namespace
}  // namespace fk::bench
