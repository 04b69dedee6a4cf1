// The logits processors' CUDA baselines against the double-precision oracle beyond the
// oracle test's workloads: a decode batch at Qwen's vocabulary with long token lists (the
// counts workspace filled by many atomics per row), many repeated bias ids, many bad words.
#include <gtest/gtest.h>

#include "fk/op_registry.h"
#include "harness/check/op_check.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

void expect_passes(const char* op, const Json& w) {
  const uint64_t seed = test::seed_for(op);
  const bench::CheckResult r = bench::check_op(OpRegistry::global().def(op), w, seed, DeviceType::cuda);
  EXPECT_TRUE(r.passed) << op << " " << w.dump() << " seed " << seed << ": " << r.message;
}

TEST(LogitsProcessorsGpu, PenaltiesAtADecodeBatchWithLongContexts) {
  FK_REQUIRE_GPU();
  expect_passes("apply_penalties", {{"batch", 64}, {"vocab", 151936}, {"max_prompt", 2048}, {"max_output", 1024}});
  expect_passes("apply_penalties", {{"batch", 3}, {"vocab", 100}, {"max_prompt", 4000}, {"max_output", 4000}});
}

TEST(LogitsProcessorsGpu, LogitBiasWithManyEntriesPerRow) {
  FK_REQUIRE_GPU();
  expect_passes("apply_logit_bias", {{"batch", 32}, {"vocab", 128256}, {"dtype", "bf16"}, {"max_entries", 2000}});
  expect_passes("apply_logit_bias", {{"batch", 8}, {"vocab", 50}, {"max_entries", 40}});
}

TEST(LogitsProcessorsGpu, BadWordsWithManyWordsPerRow) {
  FK_REQUIRE_GPU();
  expect_passes("apply_bad_words", {{"batch", 16}, {"vocab", 151936}, {"words", 600}, {"max_word_len", 6},
                                    {"max_output", 64}});
}

}  // namespace
}  // namespace fk::ops
