// weighted_embedding_add's CUDA baseline beyond the generic GPU oracle test: the Qwen3-VL
// bench shapes against the CPU implementation (timed), and a token with an id outside the
// table keeping its row while the others are updated.
#include <gtest/gtest.h>

#include "fk/ops/weighted_embedding.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::WeightedEmbeddingAddArgs;

const OpDef& def() { return OpRegistry::global().def(WeightedEmbeddingAddArgs::kName); }

TEST(WeightedEmbeddingAddGpu, BenchShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const uint64_t seed = test::seed_for("weighted_embedding_add_gpu" + w.dump());
    OpCase host = def().make_case(w, seed);
    OpCase dev = def().make_case(w, seed);
    for (auto& t : dev.tensors) t = t.to(Device::cuda());
    dev.bind(def().tensor_args);
    test::expect_ok(DeviceType::cpu, host.as<WeightedEmbeddingAddArgs>());
    test::expect_ok(DeviceType::cuda, dev.as<WeightedEmbeddingAddArgs>());
    rt::device_synchronize();
    test::expect_views_near(dev.tensors[0].to(Device::cpu()).view(), host.tensors[0].view(),
                            default_tolerance(DType::bf16), "out");
    test::report_time(def(), dev);
  }
}

TEST(WeightedEmbeddingAddGpu, BadIdKeepsItsRow) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("weighted_embedding_add_gpu_bad");
  const int64_t T = 70000, K = 4, V = 64, H = 40;  // more tokens than one grid row: the grid-stride loop
  Tensor out = Tensor::empty({T, H}, DType::f32), table = Tensor::empty({V, H}, DType::f32);
  Tensor w = Tensor::empty({T, K}, DType::f32), ids = Tensor::empty({T, K}, DType::i32);
  fill_uniform(out.view(), seed, 1, -1.f, 1.f);
  fill_uniform(table.view(), seed, 2, -1.f, 1.f);
  fill_uniform(w.view(), seed, 3, 0.f, 1.f);
  for (int64_t i = 0; i < T * K; ++i) ids.data_as<int32_t>()[i] = static_cast<int32_t>((i * 13) % V);
  ids.data_as<int32_t>()[5 * K + 2] = static_cast<int32_t>(V);  // token 5
  Tensor out_d = out.to(Device::cuda());
  test::expect_ok(DeviceType::cuda, WeightedEmbeddingAddArgs{out_d, ids.to(Device::cuda()), w.to(Device::cuda()),
                                                             table.to(Device::cuda())});
  rt::device_synchronize();
  Tensor expected = out.clone();
  Tensor ids_ok = ids.clone();
  ids_ok.data_as<int32_t>()[5 * K + 2] = 0;
  test::expect_ok(DeviceType::cpu, WeightedEmbeddingAddArgs{expected, ids_ok, w, table});
  for (int64_t h = 0; h < H; ++h) set(expected.view(), get(out.view(), 5, h), 5, h);
  test::expect_views_near(out_d.to(Device::cpu()).view(), expected.view(), {1e-5, 1e-5}, "out");
}

}  // namespace
}  // namespace fk
