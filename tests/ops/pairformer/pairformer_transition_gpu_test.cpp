// pairformer_transition on CUDA: OpenFold3's pair (B N N rows, Cz 128, F 512) and single
// (N rows, Cs 384, F 1536) bench shapes against the double oracle on sampled rows (the rows
// are independent), the test workloads (every dtype) whole, and a CUDA-graph replay equal to
// the eager call, with each bench shape's time printed.
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

using ops::TransitionArgs;

const OpDef& def() { return OpRegistry::global().def(TransitionArgs::kName); }

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

// x and the workspaces are row tensors; the weights are used whole.
const std::vector<bool> kRowTensors{true, false, false, false, false, true, true, true, true};

TEST(PairformerTransitionGpu, BenchShapesMatchTheOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("PairformerTransitionGpu.Bench" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    test::check_sampled_rows(def(), dev, kRowTensors, test::sample_rows(host.tensors[0].shape()[0], 64));
    dev.tensors[0].copy_from(host.tensors[0]);
    test::report_time(def(), dev, 5);
  }
}

TEST(PairformerTransitionGpu, TestWorkloadsMatchTheOracle) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("PairformerTransitionGpu.Test" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    std::vector<int64_t> all(static_cast<size_t>(host.tensors[0].shape()[0]));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    test::check_sampled_rows(def(), dev, kRowTensors, all);
  }
}

TEST(PairformerTransitionGpu, ReplaysInACudaGraph) {
  FK_REQUIRE_GPU();
  engine::EngineStream stream(true);
  for (const Json& w : {def().bench_workloads.front(), def().bench_workloads.back(), def().test_workloads.back()}) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("PairformerTransitionGpu.Graph" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    const auto& a = dev.as<TransitionArgs>();
    call_op(a, DeviceType::cuda, stream.get());
    rt::stream_synchronize(stream.get());
    const Tensor eager = dev.tensors[0].clone();
    EXPECT_FALSE(same_bytes(eager, host.tensors[0])) << "the update changed nothing";
    dev.tensors[0].copy_from(host.tensors[0]);
    bench::poison_outputs(def(), dev, stream.get(), /*workspace_too=*/true);
    engine::CudaGraph graph;
    graph.capture(stream.get(), [&] { call_op(a, DeviceType::cuda, stream.get()); });
    graph.replay(stream.get());
    rt::stream_synchronize(stream.get());
    EXPECT_TRUE(same_bytes(dev.tensors[0], eager)) << "the graph replay differs from the eager call";
  }
}

}  // namespace
}  // namespace fk
