// pair_bias_attention's CUDA baseline beyond the generic GPU oracle test: OpenFold3's bench
// shapes (triangle attention N = 384 / 768, single attention) against the CPU oracle on a
// sample of rows, with the time printed; a 2048-key sequence with padded masks; masked
// rows and every head dim of the tensor-core path (16..128) against the oracle; a CUDA
// graph replay equal to the eager call, byte for byte.
#include <gtest/gtest.h>

#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "fk/runtime.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "runtime/device.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::PairBiasAttentionArgs;

const OpDef& def() { return OpRegistry::global().def(PairBiasAttentionArgs::kName); }

TEST(PairBiasAttentionGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("pair_bias_attention_gpu_bench" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda(0));
    // out, q, k, v have rows first; the bias (G = 1) and the mask (absent) are used whole.
    ASSERT_FALSE(w.contains("mask")) << "a bench mask would need its rows sampled too";
    test::check_sampled_rows(def(), dev, {true, true, true, true, false, false},
                             test::sample_rows(ops::wl_int(w, "rows"), 3));
    test::report_time(def(), dev);
  }
}

TEST(PairBiasAttentionGpu, LongSequencesMasksAndEveryHeadDimMatchTheOracle) {
  FK_REQUIRE_GPU();
  std::vector<Json> cases = {
      {{"rows", 2}, {"seq", 2048}, {"heads", 2}, {"head_dim", 32}, {"mask", "padded"}},
      {{"rows", 1}, {"seq", 2051}, {"heads", 1}, {"head_dim", 24}, {"mask", "random"}, {"dtype", "f16"}},
  };
  for (int64_t d : {16, 24, 32, 40, 48, 56, 64, 72, 96, 120, 128})
    cases.push_back({{"rows", 4}, {"seq", 77}, {"heads", 2}, {"head_dim", d}, {"groups", 2}, {"mask", "random"}});
  for (const Json& w : cases) {
    const auto r = bench::check_op(def(), w, test::seed_for("pair_bias_attention_gpu" + w.dump()), DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

TEST(PairBiasAttentionGpu, ReplaysInACudaGraph) {
  FK_REQUIRE_GPU();
  const Json w{{"rows", 64}, {"seq", 384}, {"heads", 4}, {"head_dim", 32}, {"mask", "padded"}};
  const OpCase host = def().make_case(w, test::seed_for("pair_bias_attention_gpu_graph"));
  engine::EngineStream stream(true);
  OpCase dev = bench::case_to_device(def(), host, Device::cuda(0));
  call_op(dev.as<PairBiasAttentionArgs>(), DeviceType::cuda, stream.get());
  rt::stream_synchronize(stream.get());
  const Tensor eager = dev.tensors[0].to(Device::cpu());
  bench::poison_outputs(def(), dev, stream.get());
  engine::CudaGraph graph;
  graph.capture(stream.get(), [&] { call_op(dev.as<PairBiasAttentionArgs>(), DeviceType::cuda, stream.get()); });
  graph.replay(stream.get());
  rt::stream_synchronize(stream.get());
  const Tensor replayed = dev.tensors[0].to(Device::cpu());
  ASSERT_EQ(replayed.nbytes(), eager.nbytes());
  EXPECT_EQ(std::memcmp(replayed.data(), eager.data(), eager.nbytes()), 0) << "the replay differs from the eager call";
}

}  // namespace
}  // namespace fk
