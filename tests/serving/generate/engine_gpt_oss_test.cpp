// gpt-oss through the engine on the CPU backend (tiny-gpt-oss, random weights): a sliding
// (window 8) and a full attention layer, both with sinks, and biased experts. Prompts are
// longer than the window, so chunked prefill and decode must apply it across steps.
//
// The oracle is teacher forcing (gpt_oss_test_util.h): chunked prefill at several budgets
// and decode steps give the logits of one whole prefill up to rounding; a packed batch
// gives each sequence exactly its solo outputs.
#include <gtest/gtest.h>

#include <string>

#include "serving/generate/engine.h"
#include "serving/generate/gpt_oss_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

using namespace gpt_oss_test;  // NOLINT: the shared helpers

TEST(EngineGptOss, ChunkedPrefillAndDecodeEqualOneWholePrefill) {
  const uint64_t seed = test::seed_for("EngineGptOss.ChunkedPrefill");
  const auto prompts = random_prompts(seed, 3, 20, 50);
  Engine oracle(tiny(512));
  EXPECT_TRUE(oracle.spec().attention_sinks);
  EXPECT_EQ(oracle.spec().layers[0].window_left, 7);
  EXPECT_EQ(oracle.spec().layers[1].window_left, -1);
  for (int64_t budget : {512, 16, 7}) {
    Engine e(tiny(budget));
    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult g = e.generate({prompts[i]}, greedy(12, 0))[0];
      ASSERT_EQ(g.output_logprobs.size(), g.output_tokens.size());
      expect_teacher_forced(oracle, g, concat("budget ", budget, " prompt ", i, " seed ", seed));
    }
  }
}

TEST(EngineGptOss, PackedBatchEqualsSoloRuns) {
  const uint64_t seed = test::seed_for("EngineGptOss.Packed");
  const auto prompts = random_prompts(seed, 4, 5, 40);
  Engine solo(tiny(512));
  std::vector<std::vector<int64_t>> want;
  for (const auto& p : prompts) want.push_back(solo.generate({p}, greedy(10))[0].output_tokens);
  for (int64_t budget : {512, 24}) {
    Engine e(tiny(budget));
    const auto out = e.generate(prompts, greedy(10));
    ASSERT_EQ(out.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(out[i].output_tokens, want[i]) << "budget " << budget << " prompt " << i << " seed " << seed;
  }
}

TEST(EngineGptOss, SharedPrefixFromTheCacheGivesTheSameTokens) {
  const uint64_t seed = test::seed_for("EngineGptOss.Prefix");
  auto prompts = random_prompts(seed, 1, 40, 40);
  std::vector<int64_t> a = prompts[0], b = a;
  b.push_back(99);
  Engine e(tiny(512));
  ASSERT_TRUE(e.config().prefix_caching);
  const auto first = e.generate({a}, greedy(8, 0))[0];
  const auto again = e.generate({b}, greedy(8, 0))[0];
  EXPECT_GT(again.num_cached_tokens, 0) << "the shared 40-token prefix comes from the cache";
  Engine oracle(tiny(512));
  expect_teacher_forced(oracle, first, concat("first, seed ", seed));
  expect_teacher_forced(oracle, again, concat("from the cache, seed ", seed));
}

}  // namespace
}  // namespace fk::engine
