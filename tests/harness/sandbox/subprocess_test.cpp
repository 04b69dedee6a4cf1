#include "harness/sandbox/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <cstdlib>

#include "fk/status.h"

namespace fk::bench {
namespace {

TEST(Subprocess, CapturesOutputAndExitCode) {
  auto r = run_process({"sh", "-c", "echo hello; echo oops >&2; exit 3"});
  EXPECT_TRUE(r.exited());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("hello"), std::string::npos);
  EXPECT_NE(r.output.find("oops"), std::string::npos);
}

// A runner's socket and arena reach it (inherit_fds), its pid is told (on_start), and the
// harness can end it before its time (stop).
TEST(Subprocess, InheritsTheNamedDescriptorsAndStopsWhenAsked) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  ProcessOptions o;
  o.inherit_fds = {fds[1]};
  int pid = 0;
  o.on_start = [&](int p) { pid = p; };
  o.stop = [] { return true; };
  const auto r = run_process({"sh", "-c", concat("echo through >&", fds[1], "; sleep 30")}, o);
  close(fds[1]);
  char buf[16] = {};
  EXPECT_EQ(read(fds[0], buf, 7), 7);
  close(fds[0]);
  EXPECT_EQ(std::string(buf), "through");
  EXPECT_GT(pid, 0);
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.exited());
  EXPECT_LT(r.seconds, 5.0);
}

// keep_env passes on only the named variables (and prefixes), extra_env either way.
TEST(Subprocess, KeepsOnlyTheNamedEnvironment) {
  setenv("FK_SUBPROCESS_TEST_SECRET", "seen", 1);
  setenv("OMP_SUBPROCESS_TEST", "kept", 1);
  ProcessOptions o;
  o.keep_env = {"PATH", "OMP_*"};
  o.extra_env = {"ADDED=yes"};
  const auto r = run_process({"sh", "-c", "echo [$FK_SUBPROCESS_TEST_SECRET][$OMP_SUBPROCESS_TEST][$ADDED]"}, o);
  unsetenv("FK_SUBPROCESS_TEST_SECRET");
  unsetenv("OMP_SUBPROCESS_TEST");
  EXPECT_NE(r.output.find("[][kept][yes]"), std::string::npos) << r.output;
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
