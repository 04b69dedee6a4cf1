// gdn_layer's CUDA baseline at Qwen3-Next-80B's shapes (too large for the CPU oracle; the
// generic GPU oracle test covers the test workloads): prefill and decode run, out stays
// finite, both states are written, and the time is printed. And on the test workloads: the
// CUDA baseline agrees with the CPU one within twice the op's tolerance (both round the same
// intermediates, each its own way).
#include <gtest/gtest.h>

#include "fk/ops/gdn_layer.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::GdnLayerArgs;

const OpDef& def() { return OpRegistry::global().def(GdnLayerArgs::kName); }

TEST(GdnLayerGpu, BenchShapesRun) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("gdn_layer_gpu" + w.dump()));
    OpCase c = bench::case_to_device(def(), host, Device::cuda());
    test::expect_ok(DeviceType::cuda, c.as<GdnLayerArgs>());
    rt::device_synchronize();
    EXPECT_EQ(test::count_nonfinite(c.tensors[0]), 0);
    EXPECT_GT(test::count_changed_bytes(c.tensors[9].to(Device::cpu()), host.tensors[9]), 0) << "conv state";
    EXPECT_GT(test::count_changed_bytes(c.tensors[10].to(Device::cpu()), host.tensors[10]), 0) << "delta state";
    test::report_time(def(), c, 5);
  }
}

TEST(GdnLayerGpu, CudaBaselineAgreesWithCpuBaseline) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    OpCase cpu = def().make_case(w, test::seed_for("gdn_layer_cpu_vs_cuda" + w.dump()));
    OpCase cuda = bench::case_to_device(def(), cpu, Device::cuda());
    test::expect_ok(DeviceType::cpu, cpu.as<GdnLayerArgs>());
    test::expect_ok(DeviceType::cuda, cuda.as<GdnLayerArgs>());
    rt::device_synchronize();
    for (const int i : {0, 10}) {
      const TensorArg& arg = def().tensor_args[static_cast<size_t>(i)];
      const Tolerance tol = def().tolerance(cpu, arg, cpu.tensors[static_cast<size_t>(i)].dtype());
      test::expect_views_near(cuda.tensors[static_cast<size_t>(i)].to(Device::cpu()).view(),
                              cpu.tensors[static_cast<size_t>(i)].view(), {2 * tol.atol, 2 * tol.rtol}, arg.name);
    }
  }
}

}  // namespace
}  // namespace fk
