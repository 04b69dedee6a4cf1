// Which reference the harness checks a workload against (CPU oracle, GPU oracle or the
// baseline), and the registry's GPU reference slot: registered once, never replaced by
// installing a candidate, present only in CUDA builds.
#include "harness/check/reference_choice.h"

#include <gtest/gtest.h>

#include "harness/judge/verdict.h"
#include "fk/runtime.h"

namespace fk::bench {
namespace {

EvalConfig config(DeviceType backend) {
  EvalConfig cfg;
  cfg.backend = backend;
  cfg.oracle_flop_budget = 100;
  cfg.oracle_byte_budget = 10;
  return cfg;
}

TEST(ReferenceChoice, CpuOracleWithinBothBudgets) {
  const OpCost small{10, 100, DType::bf16};  // bytes, flops: exactly at the budgets
  EXPECT_EQ(choose_reference(small, config(DeviceType::cuda), true), ReferenceKind::oracle);
  EXPECT_EQ(choose_reference(small, config(DeviceType::cuda), false), ReferenceKind::oracle);
  EXPECT_EQ(choose_reference(small, config(DeviceType::cpu), true), ReferenceKind::oracle);
}

TEST(ReferenceChoice, GpuOracleAboveEitherBudgetOnCudaWithAGpuReference) {
  const OpCost many_flops{1, 101, DType::bf16}, many_bytes{11, 1, DType::bf16};
  for (const OpCost& c : {many_flops, many_bytes}) {
    EXPECT_EQ(choose_reference(c, config(DeviceType::cuda), true), ReferenceKind::gpu_oracle);
    EXPECT_EQ(choose_reference(c, config(DeviceType::cuda), false), ReferenceKind::baseline);
    EXPECT_EQ(choose_reference(c, config(DeviceType::cpu), true), ReferenceKind::baseline);
  }
}

TEST(ReferenceChoice, NamesAndWhichBoundTheCandidate) {
  EXPECT_EQ(reference_name(ReferenceKind::oracle), "oracle");
  EXPECT_EQ(reference_name(ReferenceKind::gpu_oracle), "gpu_oracle");
  EXPECT_EQ(reference_name(ReferenceKind::baseline), "baseline");
  EXPECT_TRUE(is_oracle(ReferenceKind::oracle));
  EXPECT_TRUE(is_oracle(ReferenceKind::gpu_oracle));
  EXPECT_FALSE(is_oracle(ReferenceKind::baseline));
}

TEST(ReferenceChoice, FromAnOpCaseUsesItsCostModel) {
  const OpDef& def = OpRegistry::global().def("linear");
  const OpCase small = def.make_case(Json{{"m", 4}, {"n", 8}, {"k", 16}}, 1);
  const OpCase large = def.make_case(Json{{"m", 64}, {"n", 64}, {"k", 64}}, 1);  // 524288 flops
  EvalConfig cfg;
  cfg.backend = DeviceType::cuda;
  cfg.oracle_flop_budget = 1e5;
  EXPECT_EQ(choose_reference(def, small, cfg), ReferenceKind::oracle);
  EXPECT_EQ(choose_reference(def, large, cfg),
            rt::built_with_cuda() ? ReferenceKind::gpu_oracle : ReferenceKind::baseline);
}

TEST(GpuReferenceRegistry, TheOpsTooLargeForTheCpuOracleHaveOneInCudaBuildsOnly) {
  for (const char* op : {"linear", "batch_prefill_paged_attention", "batch_decode_paged_attention", "fused_experts"})
    EXPECT_EQ(OpRegistry::global().gpu_reference(op) != nullptr, rt::built_with_cuda()) << op;
  EXPECT_EQ(OpRegistry::global().gpu_reference("rms_norm"), nullptr);  // memory-bound: the CPU oracle affords it
  EXPECT_EQ(OpRegistry::global().gpu_reference("no_such_op"), nullptr);
}

fk_status fake_reference(const void*, void*) { return FK_OK; }
fk_status fake_candidate(const void*, void*) { return FK_OK; }

TEST(GpuReferenceRegistry, RegisteredOnceAndUntouchedByInstallingACandidate) {
  OpRegistry& reg = OpRegistry::global();
  const char* name = "reference_choice_test_op";
  reg.set_gpu_reference(name, fake_reference);
  EXPECT_EQ(reg.gpu_reference(name), &fake_reference);
  EXPECT_THROW(reg.set_gpu_reference(name, fake_candidate), Error);
  EXPECT_EQ(reg.gpu_reference(name), &fake_reference);

  // Installing and resetting an implementation leaves an op's GPU reference alone.
  const fk_op_fn before = reg.gpu_reference("linear");
  reg.install("linear", DeviceType::cpu, fake_candidate, "test candidate");
  EXPECT_EQ(reg.active("linear", DeviceType::cpu), &fake_candidate);
  EXPECT_EQ(reg.gpu_reference("linear"), before);
  reg.reset("linear", DeviceType::cpu);
  EXPECT_EQ(reg.gpu_reference("linear"), before);
}

TEST(HarnessErrorVerdict, RoundTripsByName) {
  EXPECT_EQ(verdict_name(Verdict::HARNESS_ERROR), "HARNESS_ERROR");
  EXPECT_EQ(verdict_from_name("HARNESS_ERROR"), Verdict::HARNESS_ERROR);
}

}  // namespace
}  // namespace fk::bench
