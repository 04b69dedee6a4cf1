// qwen3_vl_vision_block's CUDA baseline at Qwen3-VL-8B's shapes (too large for the CPU
// oracle; the generic GPU oracle test covers the test workloads): the composed baseline runs
// on one 1024 x 1024 image and on four 448 x 448 ones, hidden stays finite, and its time is
// printed. And on small frames: the CUDA baseline agrees with the CPU one within twice the
// op's tolerance (both round the same intermediates, each its own way: their distance is of
// the order of each one's distance to the oracle).
#include <gtest/gtest.h>

#include "fk/ops/vision_block.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::Qwen3VLVisionBlockArgs;

const OpDef& def() { return OpRegistry::global().def(Qwen3VLVisionBlockArgs::kName); }

TEST(Qwen3VLVisionBlockGpu, BenchShapesRun) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("qwen3_vl_vision_block_gpu" + w.dump()));
    OpCase c = bench::case_to_device(def(), host, Device::cuda());
    test::expect_ok(DeviceType::cuda, c.as<Qwen3VLVisionBlockArgs>());
    rt::device_synchronize();
    EXPECT_EQ(test::count_nonfinite(c.tensors[0]), 0);
    EXPECT_GT(test::count_changed_bytes(c.tensors[0].to(Device::cpu()), host.tensors[0]), 0) << "hidden was not updated";
    test::report_time(def(), c, 5);
  }
}

TEST(Qwen3VLVisionBlockGpu, CudaBaselineAgreesWithCpuBaseline) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    OpCase cpu = def().make_case(w, test::seed_for("qwen3_vl_vision_block_cpu_vs_cuda" + w.dump()));
    OpCase cuda = bench::case_to_device(def(), cpu, Device::cuda());
    test::expect_ok(DeviceType::cpu, cpu.as<Qwen3VLVisionBlockArgs>());
    test::expect_ok(DeviceType::cuda, cuda.as<Qwen3VLVisionBlockArgs>());
    rt::device_synchronize();
    const Tolerance tol = def().tolerance(cpu, def().tensor_args[0], cpu.tensors[0].dtype());
    test::expect_views_near(cuda.tensors[0].to(Device::cpu()).view(), cpu.tensors[0].view(), {2 * tol.atol, 2 * tol.rtol},
                            "hidden: CUDA against CPU");
  }
}

}  // namespace
}  // namespace fk
