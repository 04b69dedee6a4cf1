// embedding's CUDA baseline on what the generic GPU oracle test does not cover: the
// production (bench) shapes against the oracle on a sample of tokens, with time and
// bandwidth printed; out-of-range ids (zero rows, nothing read out of bounds); strided and
// misaligned rows (the element-wise fallback).
#include <gtest/gtest.h>

#include "fk/ops/embedding.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::EmbeddingArgs;

OpCase device_case(const OpDef& def, const Json& w, uint64_t seed) {
  const int64_t T = ops::wl_int(w, "tokens"), V = ops::wl_int(w, "vocab"), H = ops::wl_int(w, "hidden");
  const DType dt = ops::wl_dtype(w), ids_dt = ops::wl_dtype(w, "ids_dtype", DType::i32);
  OpCase c;
  c.workload = w;
  c.args.assign(def.args_size, std::byte{0});
  c.tensors = {Tensor::empty({T, H}, dt, Device::cuda()), test::device_ints({T}, ids_dt, seed, 1, 0, V),
               test::device_uniform({V, H}, dt, seed, 2, -1.f, 1.f)};
  c.bind(def.tensor_args);
  return c;
}

TEST(EmbeddingGpu, BenchShapesAgainstOracleOnSampledTokens) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def(EmbeddingArgs::kName);
  for (const Json& w : def.bench_workloads) {
    SCOPED_TRACE(w.dump());
    OpCase c = device_case(def, w, test::seed_for("embedding_gpu_" + w.dump()));
    test::check_sampled_rows(def, c, {true, true, false}, test::sample_rows(ops::wl_int(w, "tokens")));
    test::report_time(def, c);
  }
}

TEST(EmbeddingGpu, OutOfRangeIdsGiveZeroRows) {
  FK_REQUIRE_GPU();
  const int64_t V = 50, H = 4096;
  for (DType ids_dt : {DType::i32, DType::i64}) {
    Tensor table = ops::random_tensor({V, H}, DType::bf16, 5, 1, 0.5f, 1.5f);  // no zeros in the table
    const int64_t ids_values[] = {3, V, -1, 49, int64_t{1} << 40, 0};
    const int64_t T = ids_dt == DType::i32 ? 4 : 6;  // i32 cannot hold 2^40
    Tensor ids = Tensor::empty({T}, ids_dt);
    for (int64_t t = 0; t < T; ++t) store_element(ids.view().element_ptr(t), ids_dt, static_cast<double>(ids_values[t]));
    if (ids_dt == DType::i64) ids.data_as<int64_t>()[4] = int64_t{1} << 40;
    Tensor outd = Tensor::empty({T, H}, DType::bf16, Device::cuda());
    Tensor tabled = table.to(Device::cuda()), idsd = ids.to(Device::cuda());
    test::expect_ok(DeviceType::cuda, EmbeddingArgs{outd, idsd, tabled});
    rt::device_synchronize();
    Tensor out = outd.to(Device::cpu());
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = ids_values[t];
      const bool valid = id >= 0 && id < V;
      for (int64_t h = 0; h < H; h += 97)
        ASSERT_EQ(get(out.view(), t, h), valid ? get(table.view(), id, h) : 0.0) << "token " << t << " id " << id;
    }
  }
}

TEST(EmbeddingGpu, StridedAndMisalignedRowsMatchCpu) {
  FK_REQUIRE_GPU();
  struct Geometry {
    int64_t H, pad, offset;
  };
  for (DType dt : {DType::bf16, DType::f32}) {
    for (const Geometry g : {Geometry{4096, 8, 0}, Geometry{4096, 1, 0}, Geometry{4096, 0, 1}, Geometry{1000, 3, 5}}) {
      const int64_t T = 7, V = 30;
      const uint64_t seed = test::seed_for("embedding_gpu_strided", static_cast<uint64_t>(g.H + g.pad + g.offset));
      auto out = test::make_strided(T, g.H, g.H + g.pad, g.offset, dt, seed, 1, -1.f, 1.f);
      auto table = test::make_strided(V, g.H, g.H + g.pad + 8, g.offset, dt, seed, 2, -1.f, 1.f);
      Tensor ids = ops::random_int_tensor({T}, DType::i64, seed, 3, 0, V);
      auto outd = test::strided_to(out, Device::cuda()), tabled = test::strided_to(table, Device::cuda());
      Tensor idsd = ids.to(Device::cuda());
      test::expect_ok(DeviceType::cpu, EmbeddingArgs{out.view, ids, table.view});
      test::expect_ok(DeviceType::cuda, EmbeddingArgs{outd.view, idsd, tabled.view});
      rt::device_synchronize();
      test::expect_strided_near(outd, out, {0, 0},
                                "embedding " + std::string(dtype_name(dt)) + " H=" + std::to_string(g.H) +
                                    " pad=" + std::to_string(g.pad) + " offset=" + std::to_string(g.offset));
    }
  }
}

}  // namespace
}  // namespace fk
