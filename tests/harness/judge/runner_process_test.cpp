// A runner process (runner_process.h) serving the op's baseline: its calls, through the
// arena, give what the baseline gives in this process; a library that does not load is a
// load error, and a runner that dies is the candidate's RUNTIME_ERROR at the next request.
#include "harness/judge/runner_process.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "fk/ops/norm.h"
#include "harness/judge/case_staging.h"

namespace fk::bench {
namespace {

namespace fs = std::filesystem;

RunnerSpec baseline_spec(const std::string& name, const std::string& op = ops::RmsNormArgs::kName) {
  RunnerSpec s;
  s.op = op;
  s.dir = fs::temp_directory_path() / concat("fk-runner-test-", getpid()) / name;
  s.visible = running_code_paths();
  s.timeout_s = 60;
  return s;
}

std::string bytes_of(const Tensor& t) { return std::string(static_cast<const char*>(t.data()), t.nbytes()); }

TEST(RunnerProcess, TheBaselineInARunnerGivesWhatItGivesHere) {
  RemoteImplementation remote(baseline_spec("baseline"));
  ASSERT_EQ(remote.runner->load_error(), "");
  const OpDef& def = OpRegistry::global().def(ops::RmsNormArgs::kName);
  OpCase here = def.make_case(def.test_workloads.front(), 7), there = def.make_case(def.test_workloads.front(), 7);
  ASSERT_EQ(OpRegistry::global().baseline(def.name, DeviceType::cpu)(here.args_ptr(), nullptr), FK_OK);
  const std::vector<std::byte> args = remote.staging->stage(def, there, /*plan_only=*/false);
  const RunnerProcess::Reply r = remote.runner->request(RunnerMessage::run, 0, args.data(), args.size());
  ASSERT_EQ(r.status, FK_OK) << r.text;
  remote.staging->unstage();
  const auto& a = here.as<ops::RmsNormArgs>();
  const size_t out = static_cast<size_t>(std::find_if(def.tensor_args.begin(), def.tensor_args.end(),
                                                      [](const TensorArg& t) { return t.name == "out"; }) -
                                         def.tensor_args.begin());
  ASSERT_LT(out, def.tensor_args.size());
  EXPECT_EQ(bytes_of(there.tensors[out]), bytes_of(here.tensors[out]));
  EXPECT_NE(a.out.data, nullptr);
}

// A request's time runs from its send to the kernel's stamp on the reply: within the
// wall-clock time around it, never more.
TEST(RunnerProcess, ARequestIsTimedFromItsSendToTheReplysStamp) {
  RemoteImplementation remote(baseline_spec("timed"));
  const OpDef& def = OpRegistry::global().def(ops::RmsNormArgs::kName);
  const OpCase c = def.make_case(def.test_workloads.front(), 9);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(remote.runner->request(RunnerMessage::wake, 0).status, 0);
    const std::vector<std::byte> args = remote.staging->stage(def, c, /*plan_only=*/false);
    const int64_t before = realtime_ns();
    const RunnerProcess::Reply r = remote.runner->request(RunnerMessage::run, 0, args.data(), args.size());
    const double wall_us = static_cast<double>(realtime_ns() - before) * 1e-3;
    ASSERT_EQ(r.status, FK_OK) << r.text;
    EXPECT_GT(r.us, 0.0);
    EXPECT_LE(r.us, wall_us + 1.0);
  }
}

// A runner kept from running (stopped here) has a long wall time but little CPU time: the
// judge reads the runner's CPU clock, not its word. Stopped, it was not ready to run: no
// wait for a processor is counted, and the stop stays in the call's time (evaluate.cpp).
TEST(RunnerProcess, ATimedRequestCarriesTheRunnersCpuTime) {
  RemoteImplementation remote(baseline_spec("cpu_time"));
  const OpDef& def = OpRegistry::global().def(ops::RmsNormArgs::kName);
  const OpCase c = def.make_case(def.test_workloads.front(), 9);
  const std::vector<std::byte> args = remote.staging->stage(def, c, /*plan_only=*/false);
  const RunnerProcess::Reply idle = remote.runner->request(RunnerMessage::run, 0, args.data(), args.size(), true);
  ASSERT_EQ(idle.status, FK_OK) << idle.text;
  EXPECT_GE(idle.cpu_us, 0.0);
  EXPECT_GE(idle.waited_us, 0.0);
  EXPECT_LT(remote.runner->request(RunnerMessage::run, 0, args.data(), args.size()).cpu_us, 0.0) << "untimed";

  ASSERT_EQ(kill(remote.runner->pid(), SIGSTOP), 0);
  std::thread resume([pid = remote.runner->pid()] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, SIGCONT);
  });
  const RunnerProcess::Reply stopped = remote.runner->request(RunnerMessage::run, 0, args.data(), args.size(), true);
  resume.join();
  ASSERT_EQ(stopped.status, FK_OK) << stopped.text;
  EXPECT_GE(stopped.us, 90'000.0);
  EXPECT_GE(stopped.cpu_us, 0.0);
  EXPECT_LT(stopped.cpu_us, 50'000.0);
  EXPECT_LT(stopped.waited_us, 50'000.0);
  remote.staging->unstage();
}

// A runner that shares its processor with a busy thread waits for it, and the kernel's
// count of that wait comes with the reply.
TEST(RunnerProcess, ATimedRequestCarriesTheRunnersWaitForAProcessor) {
  RemoteImplementation remote(baseline_spec("waited"));
  const OpDef& def = OpRegistry::global().def(ops::RmsNormArgs::kName);
  const OpCase c = def.make_case(def.test_workloads.front(), 9);
  const std::vector<std::byte> args = remote.staging->stage(def, c, /*plan_only=*/false);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  ASSERT_EQ(sched_setaffinity(remote.runner->pid(), sizeof one, &one), 0);
  std::atomic<bool> stop{false}, busy_on_it{false};
  std::thread busy([&] {
    sched_setaffinity(0, sizeof one, &one);
    busy_on_it = true;
    while (!stop) {
    }
  });
  while (!busy_on_it) std::this_thread::yield();
  // Requests until one waited a millisecond, for two seconds at most (on a loaded machine
  // the busy thread may itself wait for its turn).
  double most = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (most < 1000 && std::chrono::steady_clock::now() < until) {
    remote.runner->request(RunnerMessage::wake, 0);
    const RunnerProcess::Reply r = remote.runner->request(RunnerMessage::run, 0, args.data(), args.size(), true);
    ASSERT_EQ(r.status, FK_OK) << r.text;
    most = std::max(most, r.waited_us);
  }
  stop = true;
  busy.join();
  EXPECT_GE(most, 1000.0) << "a runner sharing a processor with a busy thread never waited a millisecond for it";
  remote.staging->unstage();
}

TEST(RunnerProcess, ALibraryThatDoesNotLoadIsALoadError) {
  RunnerSpec s = baseline_spec("missing");
  s.library = s.dir.parent_path() / "no-such-candidate.so";
  RunnerProcess runner(s);
  EXPECT_NE(runner.load_error().find("no-such-candidate.so"), std::string::npos) << runner.load_error();
}

TEST(RunnerProcess, ARunnerThatDiesEndsTheNextRequest) {
  RunnerProcess runner(baseline_spec("killed"));
  ASSERT_GT(runner.pid(), 0);
  kill(runner.pid(), SIGKILL);
  try {
    runner.request(RunnerMessage::map_arena, 1 << 20);
    FAIL() << "a request to a dead runner returned";
  } catch (const RunnerFailure& f) {
    EXPECT_EQ(f.verdict, Verdict::HARNESS_ERROR) << f.message;  // the baseline's runner: the harness's failure
    EXPECT_NE(f.message.find("killed by signal 9"), std::string::npos) << f.message;
  }
}

}  // namespace
}  // namespace fk::bench
