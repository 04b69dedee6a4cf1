// Every op's CUDA baseline against the f64 oracle, on every test workload (GPU label).
#include <gtest/gtest.h>

#include "harness/check/op_check.h"
#include "harness/check/op_check_strided.h"
#include "ops/op_cases.h"
#include "support/test_seed.h"

namespace fk {
namespace {

class OpOracleCuda : public testing::TestWithParam<test::OpWorkload> {};

TEST_P(OpOracleCuda, MatchesOracle) {
  FK_REQUIRE_GPU();
  const auto& p = GetParam();
  const OpDef& def = OpRegistry::global().def(p.op);
  if (!OpRegistry::global().active(p.op, DeviceType::cuda)) GTEST_SKIP() << "no cuda implementation";
  for (uint64_t round = 0; round < 3; ++round) {
    const uint64_t seed = test::seed_for(test::op_workload_name(p) + "_cuda", round);
    const auto r = bench::check_op(def, p.workload, seed, DeviceType::cuda);
    EXPECT_TRUE(r.passed) << p.op << " " << p.workload.dump() << " seed " << seed << ": " << r.message;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpOracleCuda, testing::ValuesIn(test::all_op_workloads()),
                         [](const auto& info) { return test::op_workload_name(info.param); });

// Row-strided views of the arguments that accept them (harness/check/op_check_strided.h): the
// kernels' vector paths on padded aligned rows, their scalar paths on misaligned ones, and
// no write past a row's end.
class OpOracleCudaStrided : public testing::TestWithParam<test::OpWorkload> {};

TEST_P(OpOracleCudaStrided, RowStridedViewsMatchOracle) {
  FK_REQUIRE_GPU();
  const auto& p = GetParam();
  const OpDef& def = OpRegistry::global().def(p.op);
  if (!OpRegistry::global().active(p.op, DeviceType::cuda)) GTEST_SKIP() << "no cuda implementation";
  for (uint64_t round = 0; round < 2; ++round) {
    const uint64_t seed = test::seed_for(test::op_workload_name(p) + "_cuda_strided", round);
    const auto r = bench::check_op_strided(def, p.workload, seed, DeviceType::cuda);
    EXPECT_TRUE(r.passed) << p.op << " " << p.workload.dump() << " seed " << seed << ": " << r.message;
  }
}

INSTANTIATE_TEST_SUITE_P(StridedOps, OpOracleCudaStrided, testing::ValuesIn(test::strided_op_workloads()),
                         [](const auto& info) { return test::op_workload_name(info.param); });

}  // namespace
}  // namespace fk
