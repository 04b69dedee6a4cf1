// compute_logprobs on the GPU beyond the oracle test's workloads: rows with a free stride
// and rows that are not 16-byte aligned (scalar loads), a decode batch at a production
// vocabulary, the heavy-tie fallback, and the documented NaN for an id outside the vocabulary.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/logprobs.h"
#include "fk/runtime.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

const OpDef& def() { return OpRegistry::global().def("compute_logprobs"); }

struct Outputs {
  Tensor logprob, ids, top;
};

// Runs one backend on (a copy of) the host case's logits, as a view of `columns` columns
// starting at column `offset` of a wider matrix (offset 0 and columns == V: the case itself).
Outputs run(const OpCase& host, DeviceType backend, int64_t offset, int64_t pad) {
  const auto& a = host.as<ComputeLogprobsArgs>();
  const int64_t N = a.logits.shape[0], V = a.logits.shape[1], K = a.topk_ids.shape[1];
  Tensor wide = Tensor::empty({N, V + pad}, a.logits.dtype);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V + pad; ++v)
      set(wide.view(), v >= offset && v < offset + V ? get(a.logits, n, v - offset) : 0.0, n, v);
  const Device dev = backend == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
  Tensor wide_dev = wide.to(dev), ids_dev = host.tensors[4].to(dev);
  TensorView logits = wide_dev;
  logits.data = logits.element_ptr(offset);
  logits.shape[1] = V;
  Outputs o{Tensor::empty({N}, DType::f32, dev), Tensor::empty({N, K}, DType::i32, dev),
            Tensor::empty({N, K}, DType::f32, dev)};
  call_op(ComputeLogprobsArgs{o.logprob, o.ids, o.top, logits, ids_dev}, backend, nullptr);
  if (backend == DeviceType::cuda) rt::device_synchronize();
  return {o.logprob.to(Device::cpu()), o.ids.to(Device::cpu()), o.top.to(Device::cpu())};
}

void expect_same(const Outputs& gpu, const Outputs& cpu, const std::string& what) {
  const int64_t N = cpu.logprob.numel(), K = cpu.ids.size(1);
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_NEAR(gpu.logprob.data_as<float>()[n], cpu.logprob.data_as<float>()[n], 2e-5) << what << " row " << n;
    for (int64_t k = 0; k < K; ++k) {
      ASSERT_EQ(gpu.ids.data_as<int32_t>()[n * K + k], cpu.ids.data_as<int32_t>()[n * K + k]) << what << " row " << n
                                                                                               << " rank " << k;
      EXPECT_NEAR(gpu.top.data_as<float>()[n * K + k], cpu.top.data_as<float>()[n * K + k], 2e-5) << what;
    }
  }
}

TEST(ComputeLogprobsGpu, StridedAndUnalignedRowsMatchTheReference) {
  FK_REQUIRE_GPU();
  for (const char* dt : {"f32", "bf16"}) {
    const Json w = {{"batch", 7}, {"vocab", 32003}, {"k", 20}, {"dtype", dt}};
    const OpCase host = def().make_case(w, test::seed_for(std::string("LogprobsGpuStrided") + dt));
    for (auto [offset, pad] : {std::pair<int64_t, int64_t>{0, 13}, {1, 8}, {3, 3}}) {
      const std::string what = std::string(dt) + " offset " + std::to_string(offset) + " pad " + std::to_string(pad);
      expect_same(run(host, DeviceType::cuda, offset, pad), run(host, DeviceType::cpu, offset, pad), what);
    }
  }
}

TEST(ComputeLogprobsGpu, DecodeBatchAtProductionVocabulary) {
  FK_REQUIRE_GPU();
  for (const Json& w : {Json{{"batch", 64}, {"vocab", 151936}, {"k", 20}, {"dtype", "bf16"}},
                        Json{{"batch", 16}, {"vocab", 128256}, {"k", 20}, {"dtype", "bf16"}, {"logit_range", 0.05}},
                        Json{{"batch", 4}, {"vocab", 262144}, {"k", 20}, {"dtype", "f32"}, {"pattern", "hot_stride"}}}) {
    const auto r = bench::check_op(def(), w, test::seed_for("LogprobsGpuDecode" + w.dump()), DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

TEST(ComputeLogprobsGpu, IdOutsideTheVocabularyGivesNaN) {
  FK_REQUIRE_GPU();
  OpCase host = def().make_case(Json{{"batch", 3}, {"vocab", 1000}, {"k", 2}}, 7);
  host.tensors[4].data_as<int64_t>()[1] = 1000;
  host.tensors[4].data_as<int64_t>()[2] = -1;
  const Outputs gpu = run(host, DeviceType::cuda, 0, 0);
  EXPECT_FALSE(std::isnan(gpu.logprob.data_as<float>()[0]));
  EXPECT_TRUE(std::isnan(gpu.logprob.data_as<float>()[1]));
  EXPECT_TRUE(std::isnan(gpu.logprob.data_as<float>()[2]));
}

}  // namespace
}  // namespace fk::ops
