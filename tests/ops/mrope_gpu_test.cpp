// mrope_rotary_embedding's CUDA baseline on what the generic GPU oracle test does not
// cover: the Qwen3-VL bench shapes against the CPU implementation (timed), q/k as strided
// views of a fused qkv buffer (v untouched), and a position outside the cache on one axis
// leaving that token alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/ops/mrope.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "ops/rope_test_util.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::MropeRotaryEmbeddingArgs;

const OpDef& def() { return OpRegistry::global().def(MropeRotaryEmbeddingArgs::kName); }

MropeRotaryEmbeddingArgs args_of(const TensorView& pos, const TensorView& q, const TensorView& k,
                                 const TensorView& cache, int D, bool interleaved) {
  MropeRotaryEmbeddingArgs a{};
  a.positions = pos;
  a.query = q;
  a.key = k;
  a.cos_sin_cache = cache;
  a.head_size = D;
  a.mrope_section[0] = 24, a.mrope_section[1] = 20, a.mrope_section[2] = 20;
  a.interleaved = interleaved ? 1 : 0;
  return a;
}

TEST(MropeRotaryEmbeddingGpu, BenchShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const uint64_t seed = test::seed_for("mrope_gpu" + w.dump());
    OpCase host = def().make_case(w, seed);
    OpCase dev = def().make_case(w, seed);
    for (auto& t : dev.tensors) t = t.to(Device::cuda());
    dev.bind(def().tensor_args);
    const auto& h = host.as<MropeRotaryEmbeddingArgs>();
    const auto& d = dev.as<MropeRotaryEmbeddingArgs>();
    test::expect_ok(DeviceType::cpu, h);
    test::expect_ok(DeviceType::cuda, d);
    rt::device_synchronize();
    test::expect_views_near(dev.tensors[1].to(Device::cpu()).view(), host.tensors[1].view(),
                            default_tolerance(DType::bf16), "query");
    test::expect_views_near(dev.tensors[2].to(Device::cpu()).view(), host.tensors[2].view(),
                            default_tolerance(DType::bf16), "key");
    test::report_time(def(), dev);
  }
}

TEST(MropeRotaryEmbeddingGpu, FusedQkvViewsAndBadPositions) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("mrope_gpu_fused");
  const int64_t T = 300, Hq = 4, Hk = 2, D = 128, max_pos = 512;
  const Tensor cache = test::random_host({max_pos, D}, DType::f32, seed, 1, -1.f, 1.f);
  Tensor pos = Tensor::empty({3, T}, DType::i64);
  for (int64_t i = 0; i < 3 * T; ++i) pos.data_as<int64_t>()[i] = (i * 7919) % max_pos;
  pos.data_as<int64_t>()[1 * T + 17] = max_pos;  // token 17: its height position is out of range
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (bool il : {true, false})
      for (bool rank3 : {false, true}) {
        const std::string label = std::string(dtype_name(dt)) + (il ? " interleaved" : " chunked") + (rank3 ? " 3d" : " 2d");
        const Tensor qkv = test::random_host({T, (Hq + 2 * Hk) * D}, dt, seed, 2);
        Tensor host = qkv.clone();
        Tensor dev = qkv.to(Device::cuda());
        const Tensor pos_d = pos.to(Device::cuda()), cache_d = cache.to(Device::cuda());
        const auto vh = test::fused_views(host, Hq, Hk, D, rank3), vd = test::fused_views(dev, Hq, Hk, D, rank3);
        test::expect_ok(DeviceType::cuda, args_of(pos_d, vd.q, vd.k, cache_d, D, il));
        rt::device_synchronize();
        // The CPU reference refuses the bad token; rotate the others there, token 17 kept.
        Tensor pos_ok = pos.clone();
        pos_ok.data_as<int64_t>()[1 * T + 17] = 0;
        Tensor row17 = Tensor::empty({1, qkv.size(1)}, dt);
        for (int64_t c = 0; c < qkv.size(1); ++c) set(row17.view(), get(qkv.view(), 17, c), 0, c);
        test::expect_ok(DeviceType::cpu, args_of(pos_ok, vh.q, vh.k, cache, D, il));
        for (int64_t c = 0; c < qkv.size(1); ++c) set(host.view(), get(row17.view(), 0, c), 17, c);
        test::expect_views_near(dev.to(Device::cpu()).view(), host.view(), default_tolerance(dt), label);
      }
}

}  // namespace
}  // namespace fk
