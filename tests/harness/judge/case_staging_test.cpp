// A case staged into a runner's arena (case_staging.h): views that overlap in the case
// overlap the same way in the arena, every pointer keeps its address modulo 256, a plan
// that may not see data gets guard addresses for everything but its plan inputs, and what
// the runner's memory holds comes back on unstage.
#include "harness/judge/case_staging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "fk/ops/layer.h"
#include "fk/ops/norm.h"
#include "harness/judge/plan_guard.h"

namespace fk::bench {
namespace {

namespace fs = std::filesystem;

RunnerSpec spec(const std::string& op, const std::string& name) {
  RunnerSpec s;
  s.op = op;
  s.dir = fs::temp_directory_path() / concat("fk-staging-test-", getpid()) / name;
  s.visible = running_code_paths();
  return s;
}

const TensorView& view(const std::vector<std::byte>& args, const TensorArg& a) {
  return *reinterpret_cast<const TensorView*>(args.data() + a.offset);
}

TEST(CaseStaging, OverlapAndAlignmentAreKept) {
  RemoteImplementation remote(spec(ops::RmsNormArgs::kName, "overlap"));
  const OpDef& def = OpRegistry::global().def(ops::RmsNormArgs::kName);
  OpCase c = def.make_case(def.test_workloads.front(), 3);
  auto& a = c.as<ops::RmsNormArgs>();
  // In place, and the weight a misaligned view into the input's second element.
  a.out.data = a.input.data;
  a.out.dtype = a.input.dtype;
  a.weight.data = static_cast<char*>(a.input.data) + a.input.element_size();
  const std::vector<std::byte> args = remote.staging->stage(def, c, /*plan_only=*/false);
  const auto& staged = *reinterpret_cast<const ops::RmsNormArgs*>(args.data());
  EXPECT_NE(staged.input.data, a.input.data);
  EXPECT_EQ(staged.out.data, staged.input.data);
  EXPECT_EQ(static_cast<const char*>(staged.weight.data) - static_cast<const char*>(staged.input.data),
            a.input.element_size());
  for (const auto* v : {&staged.input, &staged.weight})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v->data) % 256,
              reinterpret_cast<uintptr_t>(v == &staged.input ? a.input.data : a.weight.data) % 256);
}

TEST(CaseStaging, APlanThatMayNotSeeDataGetsGuardAddresses) {
  RemoteImplementation remote(spec(ops::DecoderLayerArgs::kName, "plan"));
  const OpDef& def = OpRegistry::global().def(ops::DecoderLayerArgs::kName);
  const OpCase c = def.make_case(def.test_workloads.front(), 1);
  const std::vector<std::byte> args = remote.staging->stage(def, c, /*plan_only=*/true);
  const auto* guard = remote.runner->guard();
  for (const TensorArg& a : def.tensor_args) {
    const void* p = view(args, a).data;
    if (p == nullptr) continue;
    const bool in_guard = p >= guard && p < guard + (size_t{16} << 20);
    EXPECT_EQ(in_guard, !is_plan_input(a)) << a.name;
  }
}

TEST(CaseStaging, UnstageBringsBackWhatTheRunnerLeft) {
  RemoteImplementation remote(spec(ops::RmsNormArgs::kName, "unstage"));
  const OpDef& def = OpRegistry::global().def(ops::RmsNormArgs::kName);
  OpCase c = def.make_case(def.test_workloads.front(), 5);
  const auto& a = c.as<ops::RmsNormArgs>();
  const std::string before(static_cast<const char*>(a.input.data), static_cast<size_t>(a.input.span_bytes()));
  const std::vector<std::byte> args = remote.staging->stage(def, c, /*plan_only=*/false);
  ASSERT_EQ(remote.runner->request(RunnerMessage::run, 0, args.data(), args.size()).status, FK_OK);
  std::memset(a.out.data, 0x7f, static_cast<size_t>(a.out.span_bytes()));  // the judge's copy, overwritten
  remote.staging->unstage();
  EXPECT_NE(static_cast<const unsigned char*>(a.out.data)[0], 0x7f);
  EXPECT_EQ(std::string(static_cast<const char*>(a.input.data), static_cast<size_t>(a.input.span_bytes())), before);
}

}  // namespace
}  // namespace fk::bench
