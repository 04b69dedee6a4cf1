// Every op's CPU implementation against the f64 oracle, on every test workload, with
// fresh seeds (ggml test-backend-ops style: one driver, every op).
#include <gtest/gtest.h>

#include "harness/check/op_check.h"
#include "harness/check/op_check_strided.h"
#include "ops/op_cases.h"
#include "support/test_seed.h"

namespace fk {
namespace {

class OpOracleCpu : public testing::TestWithParam<test::OpWorkload> {};

TEST_P(OpOracleCpu, MatchesOracle) {
  const auto& p = GetParam();
  const OpDef& def = OpRegistry::global().def(p.op);
  if (!OpRegistry::global().active(p.op, DeviceType::cpu)) GTEST_SKIP() << "no cpu implementation";
  for (uint64_t round = 0; round < 2; ++round) {
    const uint64_t seed = test::seed_for(test::op_workload_name(p), round);
    const auto r = bench::check_op(def, p.workload, seed, DeviceType::cpu);
    EXPECT_TRUE(r.passed) << p.op << " " << p.workload.dump() << " seed " << seed << ": " << r.message;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpOracleCpu, testing::ValuesIn(test::all_op_workloads()),
                         [](const auto& info) { return test::op_workload_name(info.param); });

// The same with row-strided views of the arguments that accept them: padded rows (16-byte
// aligned, and the misaligned variants where the op takes any row stride), the padding
// poisoned and checked untouched (harness/check/op_check_strided.h).
class OpOracleCpuStrided : public testing::TestWithParam<test::OpWorkload> {};

TEST_P(OpOracleCpuStrided, RowStridedViewsMatchOracle) {
  const auto& p = GetParam();
  const OpDef& def = OpRegistry::global().def(p.op);
  if (!OpRegistry::global().active(p.op, DeviceType::cpu)) GTEST_SKIP() << "no cpu implementation";
  const uint64_t seed = test::seed_for(test::op_workload_name(p) + "_strided");
  const auto r = bench::check_op_strided(def, p.workload, seed, DeviceType::cpu);
  EXPECT_TRUE(r.passed) << p.op << " " << p.workload.dump() << " seed " << seed << ": " << r.message;
}

INSTANTIATE_TEST_SUITE_P(StridedOps, OpOracleCpuStrided, testing::ValuesIn(test::strided_op_workloads()),
                         [](const auto& info) { return test::op_workload_name(info.param); });

TEST(OpRegistry, EveryOpHasCpuReferenceAndWorkloads) {
  for (const OpDef* d : OpRegistry::global().defs()) {
    EXPECT_NE(OpRegistry::global().baseline(d->name, DeviceType::cpu), nullptr) << d->name;
    EXPECT_FALSE(d->test_workloads.empty()) << d->name;
    EXPECT_FALSE(d->bench_workloads.empty()) << d->name;
    EXPECT_TRUE(d->cost != nullptr) << d->name;
  }
}

TEST(OpRegistry, UnknownOpIsAClearError) {
  try {
    OpRegistry::global().def("no_such_op");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'no_such_op'"), std::string::npos) << e.what();
  }
}

TEST(OpRegistry, InstallReplacesAndResetRestores) {
  const std::string name = "rms_norm";
  fk_op_fn base = OpRegistry::global().baseline(name, DeviceType::cpu);
  ASSERT_NE(base, nullptr);
  fk_op_fn fake = [](const void*, void*) -> fk_status { return FK_ERR_UNSUPPORTED; };
  OpRegistry::global().install(name, DeviceType::cpu, fake, "candidate:test");
  EXPECT_EQ(OpRegistry::global().active(name, DeviceType::cpu), fake);
  EXPECT_EQ(OpRegistry::global().active_origin(name, DeviceType::cpu), "candidate:test");
  EXPECT_THROW(OpRegistry::global().call(name, DeviceType::cpu, nullptr, nullptr), Error);
  OpRegistry::global().reset(name, DeviceType::cpu);
  EXPECT_EQ(OpRegistry::global().active(name, DeviceType::cpu), base);
}

}  // namespace
}  // namespace fk
