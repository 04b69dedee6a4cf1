// Qwen3-Next through the engine on the CUDA backend (tiny-qwen3-next, random weights): the
// CPU test's state checks (chunked prefill and decode against one whole prefill, packed
// batches against solo runs, chunking with preemption) with the CUDA baselines of the
// convolution, delta-rule, gating and norm ops; and the CUDA engine against the CPU one.
// Dense MLPs in every layer (qwen3_next_test_util.h's dense() says why). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "serving/generate/qwen3_next_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

using namespace qwen3_next_test;  // NOLINT: the shared helpers

constexpr DeviceType kCuda = DeviceType::cuda;

TEST(EngineQwen3NextGpu, ChunkedPrefillAndDecodeEqualOneWholePrefill) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("EngineQwen3NextGpu.ChunkedPrefill");
  const auto prompts = random_prompts(seed, 3, 30, 50);
  Engine oracle(dense(tiny(512, 64, 32, kCuda)));
  for (int64_t budget : {512, 16, 7}) {
    Engine e(dense(tiny(budget, 64, 32, kCuda)));
    for (size_t i = 0; i < prompts.size(); ++i)
      expect_teacher_forced(oracle, e.generate({prompts[i]}, greedy(10, 0))[0],
                            concat("budget ", budget, " prompt ", i, " seed ", seed));
  }
}

TEST(EngineQwen3NextGpu, PackedChunkedAndPreemptedRequestsKeepTheirOwnState) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("EngineQwen3NextGpu.Packed");
  const auto prompts = random_prompts(seed, 12, 5, 45);
  Engine oracle(dense(tiny(512, 64, 32, kCuda)));
  Engine e(dense(tiny(24, /*pages=*/6, 32, kCuda)));
  const auto got = e.generate(prompts, greedy(16, 0));
  EXPECT_GT(e.stats().preemptions, 0) << "the test means to force preemption";
  for (size_t i = 0; i < prompts.size(); ++i) expect_teacher_forced(oracle, got[i], concat("prompt ", i, " seed ", seed));
}

// Decode steps replayed from CUDA graphs: the delta rule and the conv update index the slot
// pool on the device, and a padding sequence of a graph (5 requests in a graph of 8) has slot
// -1, which reads zeros and writes nothing. Every request's tokens are still the
// teacher-forced argmax, and an eager engine's run of the same requests agrees with it.
TEST(EngineQwen3NextGpu, DecodeGraphsWithPaddingSequencesKeepEachRequestsState) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("EngineQwen3NextGpu.Graphs");
  const auto prompts = random_prompts(seed, 5, 5, 30);
  Engine oracle(dense(tiny(512, 64, 32, kCuda)));
  EngineConfig with_graphs = dense(tiny(512, 64, 32, kCuda));
  ASSERT_TRUE(with_graphs.cuda_graphs);
  Engine e(with_graphs);
  const auto got = e.generate(prompts, greedy(12, 0));
  EXPECT_GT(e.stats().graph_replays, 0) << "no decode step ran from a graph";
  for (size_t i = 0; i < prompts.size(); ++i) expect_teacher_forced(oracle, got[i], concat("prompt ", i, " seed ", seed));
  EngineConfig eager = with_graphs;
  eager.cuda_graphs = false;
  Engine ee(eager);
  const auto want = ee.generate(prompts, greedy(12, 0));
  EXPECT_EQ(ee.stats().graph_replays, 0);
  // Up to the first near-tie that went the other way, the two runs are one computation.
  for (size_t i = 0; i < prompts.size(); ++i)
    for (size_t j = 0; j < got[i].output_tokens.size() && got[i].output_tokens[j] == want[i].output_tokens[j]; ++j)
      EXPECT_NEAR(got[i].output_logprobs[j].logprob, want[i].output_logprobs[j].logprob, kLogprobTol)
          << "prompt " << i << " output " << j << " seed " << seed;
}

// The CUDA engine's teacher-forced logits are the CPU engine's within bf16 rounding.
TEST(EngineQwen3NextGpu, LogitsMatchTheCpuBackend) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("EngineQwen3NextGpu.VsCpu");
  const auto prompt = random_prompts(seed, 1, 60, 60)[0];
  // 60 logit rows: prefill_logits reads them as 60 sequences' last rows, within max_num_seqs.
  Engine cpu(dense(tiny(512, 64, 64))), gpu(dense(tiny(512, 64, 64, kCuda)));
  const std::vector<float> want = cpu.prefill_logits(prompt, 60), got = gpu.prefill_logits(prompt, 60);
  ASSERT_EQ(got.size(), want.size());
  const int64_t V = cpu.spec().config.vocab_size;
  for (int64_t r = 0; r < 60; ++r) {
    double scale = 0, err = 0;
    for (int64_t v = 0; v < V; ++v) {
      scale = std::max(scale, std::fabs(static_cast<double>(want[static_cast<size_t>(r * V + v)])));
      err = std::max(err, std::fabs(static_cast<double>(got[static_cast<size_t>(r * V + v)]) -
                                    want[static_cast<size_t>(r * V + v)]));
    }
    EXPECT_LE(err, 0.03 * scale) << "position " << r << " seed " << seed;
  }
}

}  // namespace
}  // namespace fk::engine
