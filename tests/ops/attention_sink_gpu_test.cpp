// attention_sink_rescale's CUDA baseline beyond the generic GPU oracle test: gpt-oss's
// production shapes (64 heads of 64) checked against the oracle on a sample of rows with
// their time printed; a row-strided output (the heads of a wider buffer) against the CPU
// implementation with the padding untouched; rows without keys (lse = -inf) give zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "fk/ops/attention_sink.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AttentionSinkRescaleArgs;

const OpDef& def() { return OpRegistry::global().def(AttentionSinkRescaleArgs::kName); }

TEST(AttentionSinkRescaleGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const int64_t T = ops::wl_int(w, "tokens"), H = ops::wl_int(w, "heads"), D = ops::wl_int(w, "head_dim");
    const uint64_t seed = test::seed_for("attention_sink_rescale_gpu" + w.dump());
    OpCase c;
    c.workload = w;
    c.args.assign(def().args_size, std::byte{0});
    c.tensors = {test::device_uniform({T, H, D}, ops::wl_dtype(w), seed, 1ull << 40, -2.f, 2.f),
                 test::device_uniform({T, H}, DType::f32, seed, 2ull << 40, -6.f, 14.f),
                 test::device_uniform({H}, DType::f32, seed, 3ull << 40, -4.f, 9.f)};
    c.bind(def().tensor_args);
    test::check_sampled_rows(def(), c, {true, true, false}, test::sample_rows(T));
    test::report_time(def(), c);
  }
}

TEST(AttentionSinkRescaleGpu, StridedOutputAndRowsWithoutKeysMatchTheCpu) {
  FK_REQUIRE_GPU();
  const int64_t T = 37, H = 8, D = 64, stride = H * D + 3 * D;  // the q heads of a packed [q | k | v] row
  const uint64_t seed = test::seed_for("attention_sink_rescale_gpu_strided");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor storage = Tensor::empty({T * stride}, dt);
    fill_uniform(storage.view(), seed, 1ull << 40, -2.f, 2.f);
    Tensor lse = Tensor::empty({T, H}, DType::f32), sinks = Tensor::empty({H}, DType::f32);
    fill_uniform(lse.view(), seed, 2ull << 40, -6.f, 14.f);
    fill_uniform(sinks.view(), seed, 3ull << 40, -4.f, 9.f);
    for (int64_t h = 0; h < H; ++h) lse.data_as<float>()[5 * H + h] = -std::numeric_limits<float>::infinity();
    auto heads = [&](const Tensor& buffer) {
      TensorView v = buffer.view();
      v.rank = 3;
      v.shape[0] = T;
      v.shape[1] = H;
      v.shape[2] = D;
      v.strides[0] = stride;
      v.strides[1] = D;
      v.strides[2] = 1;
      return v;
    };
    Tensor device = storage.to(Device::cuda());
    const Tensor lse_d = lse.to(Device::cuda()), sinks_d = sinks.to(Device::cuda());
    test::expect_ok(DeviceType::cpu, AttentionSinkRescaleArgs{heads(storage), lse, sinks});
    test::expect_ok(DeviceType::cuda, AttentionSinkRescaleArgs{heads(device), lse_d, sinks_d});
    rt::device_synchronize();
    const Tensor back = device.to(Device::cpu());
    const Tolerance tol = default_tolerance(dt);
    const size_t es = dtype_size(dt);
    for (int64_t i = 0; i < T * stride; ++i) {
      const char* a = static_cast<const char*>(back.data()) + i * static_cast<int64_t>(es);
      const char* b = static_cast<const char*>(storage.data()) + i * static_cast<int64_t>(es);
      if (i % stride < H * D) {
        const double x = load_element(a, dt), ref = load_element(b, dt);
        EXPECT_LE(std::abs(x - ref), tol.atol + tol.rtol * std::abs(ref)) << "element " << i;
      } else {
        EXPECT_EQ(std::memcmp(a, b, es), 0) << "padding element " << i << " was written";
      }
    }
  }
}

}  // namespace
}  // namespace fk
