// Qwen3-Next through the engine on the CPU backend (tiny-qwen3-next, random weights): its
// gated DeltaNet layers keep each sequence's conv and delta-rule state in a recurrent slot,
// which must carry a sequence from one step to the next (chunked prefill, decode) and never
// mix with another's (packed batches, preemption).
//
// The oracle is teacher forcing: one prefill of the prompt and the outputs but the last
// (Engine::prefill_logits) gives the logits every output token was sampled from. A chunked
// prefill or a decode differs from it only by rounding (the state passes between steps in
// f32, the logits are bf16), so greedy tokens are the teacher-forced argmax up to near-ties
// and their logprobs agree within kLogprobTol; a lost or leaked state is off by far more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "serving/generate/engine.h"
#include "serving/generate/logprobs_test_util.h"
#include "serving/generate/qwen3_next_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

using namespace qwen3_next_test;  // NOLINT: the shared helpers

TEST(EngineQwen3Next, GeneratesWithRecurrentSlotsAndWithoutPrefixCaching) {
  Engine e(tiny(512));
  EXPECT_FALSE(e.config().prefix_caching) << "a model with recurrent state runs without prefix caching";
  EXPECT_EQ(e.spec().num_kv_layers(), 1);  // the paged KV holds the one full-attention layer
  // One slot per request that may run: 3 layers of conv [512, 3] bf16 and delta state [4, 64, 64] f32.
  EXPECT_EQ(e.stats().state_slots, 32);
  EXPECT_GE(e.stats().state_bytes, 32 * 3 * (512 * 3 * 2 + 4 * 64 * 64 * 4));
  // Two requests sharing a 32-token prefix: nothing is served from a cache.
  std::vector<int64_t> a(32), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int64_t>(3 + i * 7 % 200);
  b = a;
  b.push_back(77);
  const auto out = e.generate({a, b}, greedy(12));
  for (const GenerationResult& g : out) {
    EXPECT_EQ(g.output_tokens.size(), 12u);
    EXPECT_EQ(g.num_cached_tokens, 0);
  }
  // The same prompt again gives the same tokens: its slot starts from zeros each time.
  EXPECT_EQ(e.generate({a}, greedy(12))[0].output_tokens, out[0].output_tokens);
}

// Chunked prefill (budgets of 16 and 7 tokens split a 40-token prompt) and decode both
// continue from the slot: their logprobs are those of one whole prefill.
TEST(EngineQwen3Next, ChunkedPrefillAndDecodeEqualOneWholePrefill) {
  const uint64_t seed = test::seed_for("EngineQwen3Next.ChunkedPrefill");
  const auto prompts = random_prompts(seed, 3, 30, 50);
  Engine oracle(tiny(512));
  for (int64_t budget : {512, 16, 7}) {
    Engine e(tiny(budget));
    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult g = e.generate({prompts[i]}, greedy(10, 0))[0];
      ASSERT_EQ(g.output_logprobs.size(), g.output_tokens.size());
      expect_teacher_forced(oracle, g, concat("budget ", budget, " prompt ", i, " seed ", seed));
    }
  }
}

// A whole batch prefilled in one step and decoded together gives each request exactly the
// tokens it gets alone (every sequence's computation is the same: its own slot, one
// prefill, then decodes), synchronously and asynchronously scheduled.
TEST(EngineQwen3Next, SequencesPackedInOneBatchEqualEachRunAlone) {
  const uint64_t seed = test::seed_for("EngineQwen3Next.Packed");
  const auto prompts = random_prompts(seed, 10, 1, 40);
  std::vector<std::vector<int64_t>> want;
  for (const auto& p : prompts) {
    Engine solo(tiny(512));
    want.push_back(solo.generate({p}, greedy(10))[0].output_tokens);
  }
  for (bool async : {false, true}) {
    EngineConfig c = tiny(512);
    c.async_scheduling = async;
    Engine e(c);
    const auto got = e.generate(prompts, greedy(10));
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(got[i].output_tokens, want[i]) << "prompt " << i << " async " << async << " seed " << seed;
    EXPECT_EQ(e.stats().preemptions, 0);
  }
}

// Chunked prefills beside decodes in mixed steps, and preemption (6 pages of 16 tokens hold
// a few requests at once): a preempted request gives its slot back and recomputes from a
// fresh one. Every request's tokens are the teacher-forced ones, and equal those of a roomy
// run up to a near-tie of the teacher-forced logits (a tie may go either way under rounding).
TEST(EngineQwen3Next, ChunkingAndPreemptionKeepEachRequestsOwnState) {
  const uint64_t seed = test::seed_for("EngineQwen3Next.Preemption");
  const auto prompts = random_prompts(seed, 12, 5, 45);
  Engine roomy(tiny(512));
  const auto want = roomy.generate(prompts, greedy(16));
  for (bool async : {false, true}) {
    EngineConfig c = tiny(24, /*pages=*/6);
    c.async_scheduling = async;
    Engine e(c);
    const auto got = e.generate(prompts, greedy(16, 0));
    EXPECT_GT(e.stats().preemptions, 0) << "the test means to force preemption";
    EXPECT_GT(e.stats().mixed_steps + e.stats().prefill_steps, 0);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::string what = concat("prompt ", i, " async ", async, " seed ", seed);
      expect_teacher_forced(roomy, got[i], what);
      const auto& a = got[i].output_tokens;
      const auto& b = want[i].output_tokens;
      const auto diverge = std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin();
      if (diverge == static_cast<std::ptrdiff_t>(a.size())) continue;
      // Diverged at `diverge`: both tokens must be (near-)argmax there.
      GenerationResult prefix = got[i];
      prefix.output_tokens.resize(static_cast<size_t>(diverge) + 1);
      const std::vector<float> logits = logprobs_test::teacher_forced_logits(roomy, prefix);
      const int64_t V = roomy.spec().config.vocab_size;
      const auto lp = logprobs_test::log_softmax(&logits[static_cast<size_t>(diverge * V)], V);
      EXPECT_NEAR(lp[static_cast<size_t>(a[static_cast<size_t>(diverge)])],
                  lp[static_cast<size_t>(b[static_cast<size_t>(diverge)])], kLogprobTol)
          << what << ": tokens differ at output " << diverge << " without a near-tie";
    }
  }
}

TEST(EngineQwen3Next, TeacherForcingReturnsItsSlot) {
  Engine e(tiny(512, 64, /*max_seqs=*/1));
  const std::vector<int64_t> p = {5, 9, 13, 200, 17};
  const std::vector<float> first = e.prefill_logits(p, 1);
  // With one slot, a leaked slot would leave none for the next call or request.
  EXPECT_EQ(e.prefill_logits(p, 1), first);
  EXPECT_EQ(e.generate({p}, greedy(3))[0].output_tokens.size(), 3u);
}

// Teacher forcing of sequences packed into one prefill (fk e2e eval's oracle) gives each
// sequence's logits as it alone would, at the positions asked, and so does teacher forcing
// through batched decode steps; both return every KV block and state slot they borrowed,
// and what does not fit one step is refused.
TEST(EngineQwen3Next, PackedTeacherForcingEqualsEachSequenceAlone) {
  const auto prompts = random_prompts(test::seed_for("EngineQwen3Next.PackedTeacher"), 3, 5, 40);
  Engine e(tiny(512, 64, /*max_seqs=*/64));  // room for every logit row of a prompt alone
  const int64_t V = e.spec().config.vocab_size;
  std::vector<std::vector<int64_t>> positions;
  for (const auto& p : prompts) positions.push_back({0, static_cast<int64_t>(p.size()) / 2, static_cast<int64_t>(p.size()) - 1});
  const auto packed = e.prefill_logits_packed(prompts, positions);
  ASSERT_EQ(packed.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto alone = e.prefill_logits(prompts[i], static_cast<int64_t>(prompts[i].size()));
    ASSERT_EQ(packed[i].size(), 3 * static_cast<size_t>(V));
    for (size_t j = 0; j < positions[i].size(); ++j) {
      const float* want = alone.data() + positions[i][j] * V;
      const float* got = packed[i].data() + j * static_cast<size_t>(V);
      float scale = 0, err = 0;
      for (int64_t v = 0; v < V; ++v) {
        scale = std::max(scale, std::fabs(want[v]));
        err = std::max(err, std::fabs(want[v] - got[v]));
      }
      // The same tokens in another batch: the GEMMs' rows sum alike, the logits are bf16.
      EXPECT_LE(err, 0.02f * scale) << "sequence " << i << " position " << positions[i][j];
    }
  }
  EXPECT_EQ(e.stats().free_pages, Engine(tiny(512, 64, 64)).stats().free_pages) << "a KV block was kept";
  // With a slot per prompt, a slot kept would leave the three prompts no room to run at once.
  Engine three(tiny(512, 64, /*max_seqs=*/3));
  three.prefill_logits_packed(prompts, {{0}, {1}, {2}});
  EXPECT_EQ(three.generate(prompts, greedy(2)).size(), prompts.size());
  // Through the decode path (a prefill of all but the last 4 tokens, then a decode step a
  // token, the three sequences batched): the logits prefill gives at those positions.
  const auto decoded = e.decode_logits_packed(prompts, {4, 4, 4});
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto L = static_cast<int64_t>(prompts[i].size());
    const auto alone = e.prefill_logits(prompts[i], 4);
    ASSERT_EQ(decoded[i].size(), alone.size());
    float scale = 0, err = 0;
    for (size_t v = 0; v < alone.size(); ++v) {
      scale = std::max(scale, std::fabs(alone[v]));
      err = std::max(err, std::fabs(alone[v] - decoded[i][v]));
    }
    // The state passes between steps in f32 and the logits are bf16: rounding apart.
    EXPECT_LE(err, 0.03f * scale) << "sequence " << i << " of " << L << " tokens";
  }
  std::vector<std::vector<int64_t>> too_long(20, std::vector<int64_t>(30, 7));
  std::vector<std::vector<int64_t>> last(20, std::vector<int64_t>{29});
  try {
    e.prefill_logits_packed(too_long, last);
    ADD_FAILURE() << "600 tokens fit a step of 512";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("do not fit one step"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace fk::engine
