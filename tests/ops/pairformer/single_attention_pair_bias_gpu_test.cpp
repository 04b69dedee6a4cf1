// single_attention_pair_bias's composed CUDA baseline: OpenFold3's bench shapes (c_s 384,
// c_z 128, 16 heads of 24; 384 and 768 tokens) against the CPU oracle, timed; two masked
// structures; a CUDA graph replay equal to the eager call, byte for byte.
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

using ops::SingleAttentionPairBiasArgs;

const OpDef& def() { return OpRegistry::global().def(SingleAttentionPairBiasArgs::kName); }

TEST(SingleAttentionPairBiasGpu, BenchShapesAgainstTheOracleAndTimed) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const uint64_t seed = test::seed_for("single_attention_pair_bias_gpu_bench" + w.dump());
    const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
    const OpCase dev = bench::case_to_device(def(), def().make_case(w, seed), Device::cuda(0));
    test::report_time(def(), dev, 10);
  }
}

TEST(SingleAttentionPairBiasGpu, MaskedStructuresMatchTheOracle) {
  FK_REQUIRE_GPU();
  const Json w{{"batch", 3}, {"tokens", 130}, {"c_s", 384}, {"c_z", 128}, {"heads", 16}, {"head_dim", 24},
               {"lengths", {130, 77, 1}}};
  const auto r = bench::check_op(def(), w, test::seed_for("single_attention_pair_bias_gpu"), DeviceType::cuda);
  EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
}

TEST(SingleAttentionPairBiasGpu, ReplaysInACudaGraph) {
  FK_REQUIRE_GPU();
  const Json w{{"batch", 2}, {"tokens", 96}, {"c_s", 384}, {"c_z", 128}, {"heads", 16}, {"head_dim", 24},
               {"lengths", {96, 50}}};
  const OpCase host = def().make_case(w, test::seed_for("single_attention_pair_bias_gpu_graph"));
  engine::EngineStream stream(true);
  OpCase dev = bench::case_to_device(def(), host, Device::cuda(0));
  const Tensor s0 = dev.tensors[0].clone();
  call_op(dev.as<SingleAttentionPairBiasArgs>(), DeviceType::cuda, stream.get());  // warm-up: GEMM plans
  rt::stream_synchronize(stream.get());
  const Tensor eager = dev.tensors[0].to(Device::cpu());
  dev.tensors[0].copy_from(s0);
  engine::CudaGraph graph;
  graph.capture(stream.get(),
                [&] { call_op(dev.as<SingleAttentionPairBiasArgs>(), DeviceType::cuda, stream.get()); });
  graph.replay(stream.get());
  rt::stream_synchronize(stream.get());
  const Tensor replayed = dev.tensors[0].to(Device::cpu());
  ASSERT_EQ(replayed.nbytes(), eager.nbytes());
  EXPECT_EQ(std::memcmp(replayed.data(), eager.data(), eager.nbytes()), 0) << "the replay differs from the eager call";
}

}  // namespace
}  // namespace fk
