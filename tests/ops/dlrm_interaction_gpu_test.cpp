// dlrm_interaction's CUDA baseline on what the generic GPU oracle test (every test workload,
// and their row-strided views) does not cover: MLPerf's bench shapes against the CPU
// implementation (timed), random shapes of every dtype across the tile-pass and chunk
// boundaries against the oracle, the DLRM forward's shared [B, F + 1, D] buffer with a padded
// out whose padding stays untouched, more samples than the grid's first pass, the limit on
// the vectors it takes (FK_ERR_UNSUPPORTED past it), and errors for tensors on the wrong device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "fk/element.h"
#include "fk/ops/recsys.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::DlrmInteractionArgs;

const OpDef& def() { return OpRegistry::global().def(DlrmInteractionArgs::kName); }

void expect_passes(const Json& w, const std::string& name) {
  const uint64_t seed = test::seed_for(name + w.dump());
  const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
  EXPECT_TRUE(r.passed) << w.dump() << " seed " << seed << ": " << r.message;
}

TensorView view_of(const Tensor& t, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
                   int64_t offset = 0) {
  TensorView v = t.view();
  v.data = v.element_ptr(offset);
  v.rank = static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t s : shape) v.shape[i++] = s;
  i = 0;
  for (int64_t s : strides) v.strides[i++] = s;
  return v;
}

TEST(DlrmInteractionGpu, MlperfBenchShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("dlrm_interaction_gpu" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    bench::poison_outputs(def(), dev);
    ASSERT_EQ(test::call_baseline(DeviceType::cpu, host.as<DlrmInteractionArgs>()), FK_OK) << last_error_message();
    ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<DlrmInteractionArgs>()), FK_OK) << last_error_message();
    rt::device_synchronize();
    const Tensor got = dev.tensors[0].to(Device::cpu());
    EXPECT_EQ(test::count_nonfinite(got), 0) << "unwritten (poisoned) elements";
    // Both round one dot product each: the CPU's from double, the GPU's from fp32.
    const Tolerance tol = def().tolerance(host, def().tensor_args[0], got.dtype());
    test::expect_views_near(got.view(), host.tensors[0].view(), tol, "out");
    test::report_time(def(), dev);
  }
}

TEST(DlrmInteractionGpu, RandomShapesAgainstOracle) {
  FK_REQUIRE_GPU();
  std::mt19937_64 rng(test::seed_for("dlrm_interaction_gpu_random"));
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const char* dtypes[] = {"bf16", "f16", "f32"};
  for (int i = 0; i < 30; ++i) {
    // Vectors up to 96 (1 to 10 passes of 32 tiles; chunks of 32 and of 16 columns), widths
    // across the 32-column chunks, batches across blocks of 4 samples.
    expect_passes({{"batch", pick(0, 70)}, {"features", pick(0, 95)}, {"dim", pick(1, 300)}, {"dtype", dtypes[i % 3]}},
                  "dlrm_interaction_gpu_random");
  }
}

// More samples than one pass of the grid over blocks of 4 takes (the grid strides).
TEST(DlrmInteractionGpu, ManySamples) {
  FK_REQUIRE_GPU();
  expect_passes({{"batch", 300001}, {"features", 2}, {"dim", 4}, {"dtype", "f32"}}, "dlrm_interaction_gpu_many");
}

// The DLRM forward's layout: dense and sparse slots of one [B, F + 1, D] buffer; out rows of
// 479 in a 480-wide buffer; the 480th column keeps its value.
TEST(DlrmInteractionGpu, SharedBufferAndPaddedOut) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("dlrm_interaction_gpu_shared");
  const int64_t B = 37, F = 26, D = 128, W = 479, Wp = 480;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor all = ops::random_tensor({B, F + 1, D}, dt, seed, 1);
    const Tensor all_dev = all.to(Device::cuda());
    const Tensor padded = ops::random_tensor({B, Wp}, dt, seed, 2);
    Tensor want = padded.clone(), padded_dev = padded.to(Device::cuda());
    auto args = [&](const Tensor& out, const Tensor& in) {
      return DlrmInteractionArgs{view_of(out, {B, W}, {Wp, 1}), view_of(in, {B, D}, {(F + 1) * D, 1}),
                                 view_of(in, {B, F, D}, {(F + 1) * D, D, 1}, D)};
    };
    test::expect_ok(DeviceType::cpu, args(want, all));
    test::expect_ok(DeviceType::cuda, args(padded_dev, all_dev));
    rt::device_synchronize();
    const Tensor got = padded_dev.to(Device::cpu());
    Tolerance tol = default_tolerance(dt);
    if (dt == DType::f32) tol.atol += 1e-4;  // fp32 dots of 128 terms against double ones
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t k = 0; k < D; ++k) ASSERT_EQ(get(got.view(), b, k), get(want.view(), b, k)) << "dense copy " << b;
      for (int64_t k = D; k < W; ++k) {
        const double g = get(got.view(), b, k), e = get(want.view(), b, k);
        ASSERT_LE(std::fabs(g - e), tol.atol + tol.rtol * std::fabs(e)) << b << ", " << k;
      }
      ASSERT_EQ(get(got.view(), b, W), get(padded.view(), b, W)) << "padding written in row " << b;
    }
  }
}

TEST(DlrmInteractionGpu, RefusesMoreVectorsThanItTakes) {
  FK_REQUIRE_GPU();
  expect_passes({{"batch", 3}, {"features", 95}, {"dim", 24}}, "dlrm_interaction_gpu_limit");
  const Tensor dense = Tensor::empty({2, 8}, DType::bf16, Device::cuda());
  const Tensor sparse = Tensor::empty({2, 96, 8}, DType::bf16, Device::cuda());
  Tensor out = Tensor::empty({2, 8 + 97 * 48}, DType::bf16, Device::cuda());
  const fk_status s = test::call_baseline(DeviceType::cuda, DlrmInteractionArgs{out, dense, sparse});
  EXPECT_EQ(s, FK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error_message()).find("at most 95 sparse features"), std::string::npos)
      << last_error_message();
}

TEST(DlrmInteractionGpu, NamedErrors) {
  FK_REQUIRE_GPU();
  const Tensor dense = Tensor::empty({2, 8}, DType::bf16, Device::cuda());
  const Tensor sparse = Tensor::empty({2, 3, 8}, DType::bf16, Device::cuda());
  Tensor out = Tensor::empty({2, 14}, DType::bf16, Device::cuda());
  const Tensor host_sparse = Tensor::empty({2, 3, 8}, DType::bf16);
  Tensor host_out = Tensor::empty({2, 14}, DType::bf16);
  test::expect_invalid(DeviceType::cuda, DlrmInteractionArgs{out, dense, host_sparse}, "sparse must be on cuda");
  test::expect_invalid(DeviceType::cuda, DlrmInteractionArgs{host_out, dense, sparse}, "out must be on cuda");
  Tensor out64 = Tensor::empty({2, 14}, DType::f64, Device::cuda());
  test::expect_invalid(DeviceType::cuda, DlrmInteractionArgs{out64, dense, sparse}, "out must be bf16");
}

}  // namespace
}  // namespace fk
