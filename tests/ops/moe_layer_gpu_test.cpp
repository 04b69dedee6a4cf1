// moe_layer's CUDA baseline at production width (the generic GPU oracle test covers the
// test workloads): a Qwen3-30B-A3B batch-1 decode step passes the check against the CPU
// oracle (128 experts of 768, a 4k cache), every bench shape runs with a finite output and
// its time is printed.
#include <gtest/gtest.h>

#include "fk/ops/moe_layer.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::MoeLayerArgs;

const OpDef& def() { return OpRegistry::global().def(MoeLayerArgs::kName); }

TEST(MoeLayerGpu, FullWidthDecodePassesTheOracle) {
  FK_REQUIRE_GPU();
  const Json& w = def().bench_workloads.front();
  const auto r = bench::check_op(def(), w, test::seed_for("moe_layer_gpu_oracle"), DeviceType::cuda);
  EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
}

TEST(MoeLayerGpu, BenchShapesRun) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("moe_layer_gpu" + w.dump()));
    OpCase c = bench::case_to_device(def(), host, Device::cuda());
    OpRegistry::global().plan(def().name, DeviceType::cuda, c.args_ptr(), nullptr);
    test::expect_ok(DeviceType::cuda, c.as<MoeLayerArgs>());
    rt::device_synchronize();
    EXPECT_EQ(test::count_nonfinite(c.tensors[0]), 0) << "hidden";
    EXPECT_EQ(test::count_nonfinite(c.tensors[1]), 0) << "residual";
    test::report_time(def(), c, 5);
  }
}

}  // namespace
}  // namespace fk
