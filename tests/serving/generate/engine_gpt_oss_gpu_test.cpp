// gpt-oss through the engine on the CUDA backend (tiny-gpt-oss, random weights): the CPU
// test's checks (chunked prefill and decode against one whole prefill, prompts past the
// sliding window, decode steps replayed from CUDA graphs) with the CUDA baselines of the
// attention ops returning their lse, attention_sink_rescale and fused_experts_swigluoai;
// the CUDA engine's logits against the CPU engine's; and, once its data is committed,
// transformers' golden logits (tests/data/models/gpt_oss). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "models/llm/golden_check.h"  // tests/models/llm/
#include "serving/generate/gpt_oss_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

using namespace gpt_oss_test;  // NOLINT: the shared helpers

constexpr DeviceType kCuda = DeviceType::cuda;

TEST(EngineGptOssGpu, ChunkedPrefillAndDecodeEqualOneWholePrefill) {
  FK_REQUIRE_GPU();
  const uint64_t seed = fk::test::seed_for("EngineGptOssGpu.ChunkedPrefill");
  const auto prompts = random_prompts(seed, 3, 20, 50);
  Engine oracle(tiny(512, kCuda));
  for (int64_t budget : {512, 16, 7}) {
    Engine e(tiny(budget, kCuda));
    int misses = 0;  // of 36 outputs
    for (size_t i = 0; i < prompts.size(); ++i)
      misses += teacher_forced_misses(oracle, e.generate({prompts[i]}, greedy(12, 0))[0],
                                      concat("budget ", budget, " prompt ", i, " seed ", seed));
    EXPECT_LE(misses, kRouterNearTiesPer60Outputs) << "budget " << budget << ", seed " << seed;
  }
}

// Decode steps from CUDA graphs (5 requests in a graph of 8): the requests' tokens are
// still the teacher-forced argmax, but for router near-ties (gpt_oss_test_util.h).
TEST(EngineGptOssGpu, DecodeGraphsGiveTheTeacherForcedTokens) {
  FK_REQUIRE_GPU();
  const uint64_t seed = fk::test::seed_for("EngineGptOssGpu.Graphs");
  const auto prompts = random_prompts(seed, 5, 5, 30);
  Engine oracle(tiny(512, kCuda));
  EngineConfig with_graphs = tiny(512, kCuda);
  ASSERT_TRUE(with_graphs.cuda_graphs);
  Engine e(with_graphs);
  const auto got = e.generate(prompts, greedy(12, 0));
  EXPECT_GT(e.stats().graph_replays, 0) << "no decode step ran from a graph";
  int misses = 0;  // of 60 outputs
  for (size_t i = 0; i < prompts.size(); ++i) misses += teacher_forced_misses(oracle, got[i], concat("prompt ", i, " seed ", seed));
  EXPECT_LE(misses, kRouterNearTiesPer60Outputs) << "seed " << seed;
}

// The CUDA engine's teacher-forced logits are the CPU engine's within bf16 rounding. A
// router near-tie may send a token to another expert on one backend (4 experts, top-2):
// such rows are allowed, few, and the rest must agree.
TEST(EngineGptOssGpu, LogitsMatchTheCpuBackend) {
  FK_REQUIRE_GPU();
  const uint64_t seed = fk::test::seed_for("EngineGptOssGpu.VsCpu");
  const auto prompt = random_prompts(seed, 1, 60, 60)[0];
  // 60 logit rows: prefill_logits reads them as 60 sequences' last rows, within max_num_seqs.
  Engine cpu(tiny(512, DeviceType::cpu, 64, 64)), gpu(tiny(512, kCuda, 64, 64));
  const std::vector<float> want = cpu.prefill_logits(prompt, 60), got = gpu.prefill_logits(prompt, 60);
  ASSERT_EQ(got.size(), want.size());
  const int64_t V = cpu.spec().config.vocab_size;
  int bad = 0;
  for (int64_t r = 0; r < 60; ++r) {
    double scale = 0, err = 0;
    for (int64_t v = 0; v < V; ++v) {
      scale = std::max(scale, std::fabs(static_cast<double>(want[static_cast<size_t>(r * V + v)])));
      err = std::max(err, std::fabs(static_cast<double>(got[static_cast<size_t>(r * V + v)]) -
                                    want[static_cast<size_t>(r * V + v)]));
    }
    if (err > 0.03 * scale) {
      ++bad;
      std::printf("position %lld: max error %.4f, row scale %.4f\n", static_cast<long long>(r), err, scale);
    }
  }
  EXPECT_LE(bad, 6) << "of 60 positions, seed " << seed;
}

TEST(EngineGptOssGpu, GoldenLogitsMatchTransformers) {
  FK_REQUIRE_GPU();
  using namespace engine::test;  // NOLINT: golden_check.h
  if (!std::filesystem::exists(model_dir("gpt_oss") + "/golden.json"))
    GTEST_SKIP() << "no golden data in " << model_dir("gpt_oss")
                 << ": run tests/data/models/make_gpt_oss_goldens.py tests/data/models (torch, transformers)";
  const Golden g = load_golden("gpt_oss");
  EngineConfig ec = tiny(256, kCuda, 64, 64);
  ec.model = model_dir("gpt_oss");
  Engine e(ec);
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    std::vector<int64_t> tokens = g.prompts[p];
    tokens.insert(tokens.end(), g.generated[p].begin(), g.generated[p].end());
    const std::vector<float> got = e.prefill_logits(tokens, static_cast<int64_t>(tokens.size()));
    ASSERT_EQ(got.size(), g.logits[p].size());
    for (size_t r = 0; r < tokens.size(); ++r) {
      const float* w = g.logits[p].data() + r * static_cast<size_t>(g.vocab);
      const float* x = got.data() + r * static_cast<size_t>(g.vocab);
      double err = 0;
      for (int64_t v = 0; v < g.vocab; ++v) err = std::max(err, std::fabs(static_cast<double>(x[v]) - w[v]));
      EXPECT_LE(err / row_scale(w, g.vocab), kLogitTol) << "prompt " << p << " position " << r;
    }
  }
}

}  // namespace
}  // namespace fk::engine
