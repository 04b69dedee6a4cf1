// Every op's GPU reference against the CPU f64 oracle on the op's test workloads (edge
// shapes: one token, empty batches, tails of every tile, GQA, windows, soft-caps, fp8
// scales, dropped experts...). Both compute in double, so they must agree to rounding:
// 1e-9 relative to the output's largest value. The GPU reference must also leave its
// inputs unchanged (the harness runs it on the baseline's inputs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/check/gpu_oracle.h"
#include "harness/check/op_check.h"
#include "fk/element.h"
#include "ops/op_cases.h"
#include "support/test_seed.h"

namespace fk {
namespace {

// The ops whose production workloads exceed the CPU oracle's budgets.
const std::set<std::string> kOpsWithGpuReference = {"linear", "batch_prefill_paged_attention",
                                                    "batch_decode_paged_attention", "fused_experts",
                                                    "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule",
                                                    "conv2d", "maxsim"};

std::vector<test::OpWorkload> workloads() {
  std::vector<test::OpWorkload> out;
  for (const auto& w : test::all_op_workloads())
    if (kOpsWithGpuReference.contains(w.op)) out.push_back(w);
  return out;
}

double largest_magnitude(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = load_element(t.view().element_ptr(i), t.dtype());
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  }
  return m;
}

class GpuReferenceVsOracle : public testing::TestWithParam<test::OpWorkload> {};

TEST_P(GpuReferenceVsOracle, AgreesToDoubleRounding) {
  FK_REQUIRE_GPU();
  const auto& p = GetParam();
  const OpDef& def = OpRegistry::global().def(p.op);
  ASSERT_NE(OpRegistry::global().gpu_reference(p.op), nullptr) << p.op << " has no GPU reference";
  for (uint64_t round = 0; round < 2; ++round) {
    const uint64_t seed = test::seed_for(test::op_workload_name(p) + "_gpu_reference", round);
    SCOPED_TRACE(testing::Message() << p.op << " " << p.workload.dump() << " seed " << seed);
    const OpCase host = def.make_case(p.workload, seed);
    OpCase oracle = bench::make_oracle_case(def, host);
    bench::run_oracle(def, oracle);

    const OpCase device_case = bench::case_to_device(def, host, Device::cuda(0));
    const OpCase gpu = bench::run_gpu_oracle(def, host, device_case, nullptr);
    for (size_t i = 0; i < def.tensor_args.size(); ++i) {
      const TensorArg& arg = def.tensor_args[i];
      if (arg.role == ArgRole::in) {
        EXPECT_EQ(bench::fingerprint(device_case.tensors[i]), bench::fingerprint(host.tensors[i]))
            << "the GPU reference modified input '" << arg.name << "'";
      }
      if (arg.role != ArgRole::out && arg.role != ArgRole::inout) continue;
      const Tensor& want = oracle.tensors[i];
      const Tensor& got = gpu.tensors[i];
      ASSERT_EQ(got.defined(), want.defined()) << arg.name;
      if (!want.defined()) continue;
      ASSERT_EQ(got.dtype(), want.dtype()) << arg.name;
      ASSERT_EQ(got.shape(), want.shape()) << arg.name;
      const double scale = std::max(largest_magnitude(want), 1e-300);
      const auto e = bench::compare_output(arg.name, got, want, Tolerance{1e-9 * scale, 1e-9});
      EXPECT_EQ(e.num_bad, 0) << "output '" << arg.name << "': " << e.num_bad << " of " << e.numel
                              << " elements differ; worst at index " << e.worst_index << ": GPU " << e.worst_value
                              << ", CPU " << e.worst_ref << "; max abs err " << e.max_abs_err << " (largest value "
                              << scale << ")";
      EXPECT_LE(e.rel_l2_err, 1e-12) << arg.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OpsTooLargeForTheCpuOracle, GpuReferenceVsOracle, testing::ValuesIn(workloads()),
                         [](const auto& info) { return test::op_workload_name(info.param); });

// A new GPU reference is tested here as soon as it is registered: the list above must name it.
TEST(GpuReferenceVsOracle, EveryRegisteredGpuReferenceIsCovered) {
  FK_REQUIRE_GPU();
  for (const OpDef* d : OpRegistry::global().defs())
    if (OpRegistry::global().gpu_reference(d->name))
      EXPECT_TRUE(kOpsWithGpuReference.contains(d->name)) << d->name << " has a GPU reference this test skips";
}

}  // namespace
}  // namespace fk
