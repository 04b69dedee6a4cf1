// The harness on workloads too large for the CPU oracle: checked against the op's GPU
// reference ("gpu_oracle"), with the baseline's error against it setting the candidate's
// precision bound; a GPU reference that fails is a HARNESS_ERROR, not a verdict on the
// candidate.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "harness/judge/evaluate.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

EvalConfig untimed_cuda_config(const std::string& name) {
  EvalConfig cfg;
  cfg.backend = DeviceType::cuda;
  cfg.seeds = {test::seed_for(name, 0), test::seed_for(name, 1), test::seed_for(name, 2)};
  cfg.secret_seed = test::seed_for(name, 3);
  cfg.time = false;
  return cfg;
}

Task one_workload_task(const std::string& op, const Json& shape) {
  Task t;
  t.id = op + "_large";
  t.op = op;
  t.level = "L1";
  t.category = "test";
  t.workloads = {{shape, 1, "too large for the CPU oracle"}};
  return t;
}

Implementation baseline_of(const std::string& op) {
  return {OpRegistry::global().baseline(op, DeviceType::cuda), OpRegistry::global().active_plan(op, DeviceType::cuda)};
}

// 4096^3 is 1.4e11 flops, 34 times the CPU oracle's budget.
const Json kLargeLinear = {{"m", 4096}, {"n", 4096}, {"k", 4096}};

TEST(EvaluateGpuOracle, LargeLinearBaselinePassesAgainstTheGpuReference) {
  FK_REQUIRE_GPU();
  const EvalResult r = evaluate(one_workload_task("linear", kLargeLinear), baseline_of("linear"),
                                untimed_cuda_config("large_linear_baseline"));
  ASSERT_EQ(r.verdict, Verdict::PASSED) << r.message;
  ASSERT_EQ(r.workloads.size(), 1u);
  const WorkloadResult& w = r.workloads[0];
  EXPECT_EQ(w.reference, "gpu_oracle");
  // bf16 outputs rounded once from fp32 accumulation: about 1.6e-3 relative L2 error.
  EXPECT_GT(w.baseline_rel_l2, 2e-4);
  EXPECT_LT(w.baseline_rel_l2, 1e-2);
  EXPECT_NEAR(w.candidate_rel_l2, w.baseline_rel_l2, 0.05 * w.baseline_rel_l2);  // the candidate is the baseline
}

// The baseline's output with the last mantissa bit of every bf16 flipped: one unit in the
// last place everywhere, well within bf16's tolerance but about 3x the baseline's error.
__global__ void flip_last_bit(uint16_t* out, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] ^= 1u;
}

fk_status sloppy_linear(const void* args, void* stream) {
  const fk_status s = OpRegistry::global().baseline("linear", DeviceType::cuda)(args, stream);
  if (s != FK_OK) return s;
  const auto& a = *static_cast<const ops::LinearArgs*>(args);
  if (a.out.dtype != DType::bf16 || !a.out.is_contiguous()) return FK_ERR_UNSUPPORTED;
  flip_last_bit<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<uint16_t*>(a.out.data),
                                                                      a.out.numel());
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

TEST(EvaluateGpuOracle, LargeLinearPrecisionLossIsBoundedByTheBaselinesError) {
  FK_REQUIRE_GPU();
  const EvalResult r = evaluate(one_workload_task("linear", kLargeLinear), {sloppy_linear, nullptr},
                                untimed_cuda_config("large_linear_sloppy"));
  EXPECT_EQ(r.verdict, Verdict::INCORRECT) << r.message;
  EXPECT_NE(r.message.find("materially worse than the baseline"), std::string::npos) << r.message;
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_EQ(r.workloads[0].reference, "gpu_oracle");
}

// ---- A GPU reference that fails ----------------------------------------------------------
// A test op (this executable only): out = input, f32, with a cost far above the CPU
// oracle's budgets and a GPU reference that always runs out of memory.
struct CopyArgs {
  static constexpr const char* kName = "evaluate_test_copy_failing_gpu_reference";
  TensorView out;    // [n] f32 written
  TensorView input;  // [n] f32 read
};

OpDef make_copy_def() {
  OpDef d;
  d.name = CopyArgs::kName;
  d.family = "test";
  d.summary = "out = input (harness test op)";
  d.args_size = sizeof(CopyArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(CopyArgs, out)}, {"input", ArgRole::in, offsetof(CopyArgs, input)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t n = ops::wl_int(w, "n");
    OpCase c = ops::begin_case<CopyArgs>(w, 2);
    c.tensors[0] = Tensor::empty({n}, DType::f32);
    c.tensors[1] = ops::random_tensor({n}, DType::f32, seed, 1);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase&) { return OpCost{1e12, 1e15, DType::f32}; };
  return d;
}

fk_status copy_cpu(const void* args, void*) {
  const auto& a = *static_cast<const CopyArgs*>(args);
  for (int64_t i = 0; i < a.input.numel(); ++i)
    store_element(a.out.element_ptr(i), a.out.dtype, load_element(a.input.element_ptr(i), a.input.dtype));
  return FK_OK;
}

fk_status copy_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const CopyArgs*>(args);
    rt::memcpy_async(a.out.data, a.out.device, a.input.data, a.input.device, static_cast<size_t>(a.input.nbytes()),
                     stream);
  });
}

fk_status failing_gpu_reference(const void*, void*) {
  return op_guard([] { FK_FAIL(FK_ERR_OUT_OF_MEMORY, "out of device memory (simulated)"); });
}

FK_REGISTER_OP(make_copy_def);
FK_REGISTER_IMPL(CopyArgs::kName, cpu, copy_cpu);
FK_REGISTER_IMPL(CopyArgs::kName, cuda, copy_cuda);
FK_REGISTER_GPU_REFERENCE(CopyArgs::kName, failing_gpu_reference);

TEST(EvaluateGpuOracle, AFailingGpuReferenceIsAHarnessErrorAndEndsTheEvaluation) {
  FK_REQUIRE_GPU();
  Task task = one_workload_task(CopyArgs::kName, Json{{"n", 1000}});
  task.workloads.push_back({Json{{"n", 2000}}, 1, "never reached"});
  const EvalResult r = evaluate(task, baseline_of(CopyArgs::kName), untimed_cuda_config("failing_gpu_reference"));
  EXPECT_EQ(r.verdict, Verdict::HARNESS_ERROR) << r.message;
  EXPECT_NE(r.message.find("harness error"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("GPU reference"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("out of device memory (simulated)"), std::string::npos) << r.message;
  EXPECT_EQ(r.workloads.size(), 1u) << "workloads after a harness failure are not judged";
  EXPECT_EQ(r.speedup, 0);
}

}  // namespace
}  // namespace fk::bench
