// What a candidate's plan is given: the host mirrors and workspaces as they are, every
// other present tensor at a guard address (shapes, dtypes, strides and devices kept),
// absent ones absent; a read there faults, and in a worker the fault is a finding.
#include "harness/judge/plan_guard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "fk/ops/layer.h"

namespace fk::bench {
namespace {

const TensorView& view_at(const std::vector<std::byte>& args, const TensorArg& a) {
  return *reinterpret_cast<const TensorView*>(args.data() + a.offset);
}

TEST(PlanGuard, PlanInputsKeepTheirDataTheRestPointAtTheGuard) {
  const OpDef& def = OpRegistry::global().def(ops::DecoderLayerArgs::kName);
  const OpCase c = def.make_case(def.test_workloads.front(), 1);  // no q/k norms, no qkv bias
  const std::vector<std::byte> args = plan_only_args(def, c);
  int guarded = 0;
  for (const TensorArg& a : def.tensor_args) {
    const TensorView &before = *reinterpret_cast<const TensorView*>(c.args.data() + a.offset), &seen = view_at(args, a);
    EXPECT_EQ(seen.rank, before.rank) << a.name;
    EXPECT_EQ(seen.dtype, before.dtype) << a.name;
    for (int d = 0; d < before.rank; ++d) {
      EXPECT_EQ(seen.shape[d], before.shape[d]) << a.name;
      EXPECT_EQ(seen.strides[d], before.strides[d]) << a.name;
    }
    if (before.data == nullptr) {
      EXPECT_EQ(seen.data, nullptr) << a.name << ": an absent argument stays absent";
    } else if (a.host_only || a.role == ArgRole::workspace) {
      EXPECT_EQ(seen.data, before.data) << a.name << " is a plan input";
    } else {
      EXPECT_TRUE(in_plan_guard(seen.data)) << a.name << " is no plan input";
      ++guarded;
    }
  }
  EXPECT_GE(guarded, 15);  // hidden, residual, the weights, positions, caches, device metadata
  // The case itself is untouched.
  EXPECT_FALSE(in_plan_guard(c.as<ops::DecoderLayerArgs>().hidden.data));
}

TEST(PlanGuard, AReadAtTheGuardIsReportedThenEndsTheProcess) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const OpDef& def = OpRegistry::global().def(ops::DecoderLayerArgs::kName);
  const std::vector<std::byte> args = plan_only_args(def, def.make_case(def.test_workloads.front(), 1));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    report_plan_guard_faults(fds[1]);
    const auto& a = *reinterpret_cast<const ops::DecoderLayerArgs*>(args.data());
    volatile char x = *static_cast<const volatile char*>(a.hidden.data);  // a plan reading the stream
    (void)x;
    _exit(0);
  }
  close(fds[1]);
  std::string finding;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) finding.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGSEGV);
  EXPECT_NE(finding.find("\"verdict\":\"REWARD_HACK\""), std::string::npos) << finding;
  EXPECT_NE(finding.find("plan read tensor data"), std::string::npos) << finding;
}

}  // namespace
}  // namespace fk::bench
