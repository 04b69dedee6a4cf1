// triangle_attention's composed CUDA baseline: a 384-token crop (OpenFold3's c_z 128, 4
// heads of 32), both nodes, against the CPU oracle in full; the 768-token bench shapes
// timed (and finite); two masked structures, both nodes, against the oracle; a CUDA graph
// replay equal to the eager call, byte for byte; the layout moves on CUDA equal to the CPU's
// byte for byte, through each copy width (16, 8, 4 and 2 bytes).
#include <gtest/gtest.h>

#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "fk/runtime.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "ops/pairformer/triangle_attention_layout.h"
#include "runtime/device.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::TriangleAttentionArgs;

const OpDef& def() { return OpRegistry::global().def(TriangleAttentionArgs::kName); }

TEST(TriangleAttentionGpu, BenchShapesAgainstTheOracleAndTimed) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const uint64_t seed = test::seed_for("triangle_attention_gpu_bench" + w.dump());
    if (w["tokens"] == 384) {  // the full oracle: about a minute on one core
      const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
      EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
    }
    OpCase dev = bench::case_to_device(def(), def().make_case(w, seed), Device::cuda(0));
    const fk_op_fn fn = OpRegistry::global().baseline(TriangleAttentionArgs::kName, DeviceType::cuda);
    ASSERT_EQ(fn(dev.args_ptr(), nullptr), FK_OK) << last_error_message();
    rt::device_synchronize();
    EXPECT_EQ(test::count_nonfinite(dev.tensors[0]), 0);
    test::report_time(def(), dev, 5);
  }
}

TEST(TriangleAttentionGpu, MaskedCropsAndBothNodesMatchTheOracle) {
  FK_REQUIRE_GPU();
  for (int64_t ending : {0, 1}) {
    const Json w{{"batch", 2}, {"tokens", 96}, {"c_z", 128}, {"heads", 4}, {"head_dim", 32}, {"ending", ending},
                 {"lengths", {96, 70}}};
    const auto r = bench::check_op(def(), w, test::seed_for("triangle_attention_gpu" + w.dump()), DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

TEST(TriangleAttentionGpu, LayoutMovesEqualTheCpus) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("triangle_attention_gpu_layout");
  struct Case {
    DType dt;
    int64_t nb, n, src_cols, col0, width;
  };
  // 16-byte rows (q of a 4 x 32 head projection), 8-, 4- and 2-byte units (a mask column).
  for (const Case& k : {Case{DType::bf16, 2, 33, 512, 128, 128}, Case{DType::f16, 1, 17, 12, 4, 4},
                        Case{DType::bf16, 1, 9, 6, 2, 2}, Case{DType::bf16, 3, 7, 1, 0, 1},
                        Case{DType::f32, 1, 11, 12, 3, 5}})
    for (bool transpose : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(k.dt)) + " width " + std::to_string(k.width) +
                   (transpose ? " transposed" : ""));
      const int64_t rows = k.nb * k.n * k.n;
      const Tensor src = test::device_uniform({rows, k.src_cols}, k.dt, seed, 1, -2.f, 2.f);
      Tensor dst = Tensor::empty({rows, k.width}, k.dt, Device::cuda(0));
      Tensor want = Tensor::empty({rows, k.width}, k.dt);
      const Tensor host_src = src.to(Device::cpu());
      ops::pair_rows_copy(want.view(), host_src.view(), k.nb, k.n, k.n, k.col0, transpose, DeviceType::cpu, nullptr);
      ops::pair_rows_copy(dst.view(), src.view(), k.nb, k.n, k.n, k.col0, transpose, DeviceType::cuda, nullptr);
      rt::device_synchronize();
      EXPECT_TRUE(same_bytes(dst, want));
      // The bias layout from the first `width` columns seen as heads.
      if (k.width > 8) continue;
      const Tensor& heads_src = want;
      const Tensor dev_heads_src = heads_src.to(Device::cuda(0));
      Tensor major = Tensor::empty({k.nb, k.width, k.n, k.n}, k.dt, Device::cuda(0));
      Tensor major_want = Tensor::empty({k.nb, k.width, k.n, k.n}, k.dt);
      ops::pair_heads_major(major_want.view(), heads_src.view(), k.nb, k.n, transpose, DeviceType::cpu, nullptr);
      ops::pair_heads_major(major.view(), dev_heads_src.view(), k.nb, k.n, transpose, DeviceType::cuda, nullptr);
      rt::device_synchronize();
      EXPECT_TRUE(same_bytes(major, major_want));
    }
}

TEST(TriangleAttentionGpu, ReplaysInACudaGraph) {
  FK_REQUIRE_GPU();
  const Json w{{"tokens", 128}, {"c_z", 128}, {"heads", 4}, {"head_dim", 32}, {"ending", 1}, {"lengths", {100}}};
  const OpCase host = def().make_case(w, test::seed_for("triangle_attention_gpu_graph"));
  engine::EngineStream stream(true);
  OpCase dev = bench::case_to_device(def(), host, Device::cuda(0));
  const Tensor z0 = dev.tensors[0].clone();
  call_op(dev.as<TriangleAttentionArgs>(), DeviceType::cuda, stream.get());  // warm-up: GEMM plans
  rt::stream_synchronize(stream.get());
  const Tensor eager = dev.tensors[0].to(Device::cpu());
  dev.tensors[0].copy_from(z0);
  engine::CudaGraph graph;
  graph.capture(stream.get(), [&] { call_op(dev.as<TriangleAttentionArgs>(), DeviceType::cuda, stream.get()); });
  graph.replay(stream.get());
  rt::stream_synchronize(stream.get());
  const Tensor replayed = dev.tensors[0].to(Device::cpu());
  ASSERT_EQ(replayed.nbytes(), eager.nbytes());
  EXPECT_EQ(std::memcmp(replayed.data(), eager.data(), eager.nbytes()), 0) << "the replay differs from the eager call";
}

}  // namespace
}  // namespace fk
