// triangle_multiplication on CUDA: the baseline against the double oracle at OpenFold3's
// channel counts (Cz = C = 128) on small and odd N, both directions, padding and every
// dtype; against the CPU baseline at a bench shape (N = 384); and every bench shape eagerly
// and replayed from a CUDA graph (equal bytes), finite, with its time printed.
#include <gtest/gtest.h>

#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "fk/runtime.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "runtime/device.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::TriangleMultiplicationArgs;

const OpDef& def() { return OpRegistry::global().def(TriangleMultiplicationArgs::kName); }

fk_status run_cuda(const OpCase& c) {
  const fk_status s = test::call_baseline(DeviceType::cuda, c.as<TriangleMultiplicationArgs>());
  rt::device_synchronize();
  return s;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

void expect_pair_near(const OpCase& device_case, const Tensor& want, const std::string& what) {
  const TensorArg& arg = def().tensor_args[0];
  const Tolerance tol = def().tolerance(device_case, arg, want.dtype());
  const bench::OutputError e = bench::compare_output(arg.name, device_case.tensors[0].to(Device::cpu()), want, tol);
  EXPECT_EQ(e.num_bad, 0) << what << ": " << bench::describe_output_error(e);
  EXPECT_EQ(test::count_nonfinite(device_case.tensors[0]), 0) << what;
}

TEST(TriangleMultiplicationGpu, MatchesTheOracleAtOpenFold3Channels) {
  FK_REQUIRE_GPU();
  const Json shapes[] = {
      {{"n", 64}, {"pair_channels", 128}, {"hidden", 128}, {"padded", 10}},
      {{"n", 97}, {"pair_channels", 128}, {"hidden", 128}, {"incoming", 1}},
      {{"n", 40}, {"pair_channels", 128}, {"hidden", 128}, {"batch", 2}, {"padded", 7}, {"incoming", 1},
       {"dtype", "f16"}},
      {{"n", 33}, {"pair_channels", 128}, {"hidden", 128}, {"padded", 5}, {"dtype", "f32"}},
      {{"n", 1}, {"pair_channels", 128}, {"hidden", 128}, {"incoming", 1}},
  };
  for (const Json& w : shapes) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("TriangleMultiplicationGpu.Oracle" + w.dump()));
    OpCase oracle = bench::make_oracle_case(def(), host);
    bench::run_oracle(def(), oracle);
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    bench::poison_outputs(def(), dev, nullptr, /*workspace_too=*/true);
    ASSERT_EQ(run_cuda(dev), FK_OK) << last_error_message();
    expect_pair_near(dev, oracle.tensors[0], "CUDA vs oracle");
  }
}

TEST(TriangleMultiplicationGpu, MatchesTheCpuBaselineAtABenchShape) {
  FK_REQUIRE_GPU();
  // Incoming edges only (the CPU baseline takes tens of seconds here; both directions meet
  // the oracle above).
  for (int incoming : {1}) {
    const Json w{{"n", 384}, {"pair_channels", 128}, {"hidden", 128}, {"incoming", incoming}, {"padded", 30}};
    SCOPED_TRACE(w.dump());
    OpCase cpu = def().make_case(w, test::seed_for("TriangleMultiplicationGpu.Cpu", incoming));
    OpCase dev = bench::case_to_device(def(), cpu, Device::cuda());
    ASSERT_EQ(OpRegistry::global().baseline(def().name, DeviceType::cpu)(cpu.args_ptr(), nullptr), FK_OK)
        << last_error_message();
    ASSERT_EQ(run_cuda(dev), FK_OK) << last_error_message();
    expect_pair_near(dev, cpu.tensors[0], "CUDA vs CPU baseline");
  }
}

TEST(TriangleMultiplicationGpu, BenchShapesReplayInACudaGraph) {
  FK_REQUIRE_GPU();
  engine::EngineStream stream(true);
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("TriangleMultiplicationGpu.Graph" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    const auto& a = dev.as<TriangleMultiplicationArgs>();
    call_op(a, DeviceType::cuda, stream.get());
    rt::stream_synchronize(stream.get());
    const Tensor eager = dev.tensors[0].clone();
    EXPECT_EQ(test::count_nonfinite(eager), 0);
    EXPECT_FALSE(same_bytes(eager, host.tensors[0])) << "the update changed nothing";

    dev.tensors[0].copy_from(host.tensors[0]);
    bench::poison_outputs(def(), dev, stream.get(), /*workspace_too=*/true);
    engine::CudaGraph graph;
    graph.capture(stream.get(), [&] { call_op(a, DeviceType::cuda, stream.get()); });
    graph.replay(stream.get());
    rt::stream_synchronize(stream.get());
    EXPECT_TRUE(same_bytes(dev.tensors[0], eager)) << "the graph replay differs from the eager call";
    test::report_time(def(), dev, 5);
  }
}

}  // namespace
}  // namespace fk
