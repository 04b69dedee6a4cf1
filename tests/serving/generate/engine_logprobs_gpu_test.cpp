// Logprobs through the engine on the CUDA backend: decode steps replayed from captured
// graphs (with padding sequences) and eager mixed steps give every output token the
// log_softmax of the teacher-forced logits at its position, within the rounding that
// separates the decode and prefill attention kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "serving/generate/engine.h"
#include "fk/ops/attention.h"
#include "fk/status.h"
#include "serving/generate/logprobs_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

EngineConfig golden_config(const char* model) {
  EngineConfig c;
  c.model = std::string(FK_SOURCE_DIR) + "/tests/data/models/" + model;
  c.backend = DeviceType::cuda;
  c.num_pages = 128;
  c.max_num_batched_tokens = 512;  // teacher forcing prefills a whole sequence (up to ~300 tokens)
  c.max_num_seqs = 16;  // prefill_logits returns at most max_num_seqs rows (10 here)
  c.max_model_len = 512;
  return c;
}

// Runs the prompts (request i with logprobs ks[i]) to 10 sampled tokens each and checks
// every reported logprob against the log_softmax of the teacher-forced logits.
void expect_logprobs_match_teacher_forcing(Engine& e, const std::vector<std::vector<int64_t>>& prompts,
                                           const std::vector<std::optional<int32_t>>& ks, const std::string& what) {
  const int64_t V = e.spec().config.vocab_size;
  SamplingParams sp;
  sp.temperature = 0.7f;
  sp.seed = test::seed_for("EngineLogprobsGpu");
  sp.max_tokens = 10;
  sp.ignore_eos = true;
  const std::map<std::string, GenerationResult> done = logprobs_test::run_with_logprobs(e, prompts, ks, sp);
  EXPECT_GT(e.stats().graph_replays, 0) << what;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const GenerationResult& g = done.at(concat("r", i));
    if (!ks[i]) {
      EXPECT_TRUE(g.output_logprobs.empty());
      continue;
    }
    ASSERT_EQ(g.output_logprobs.size(), g.output_tokens.size()) << what;
    const int64_t n = static_cast<int64_t>(g.output_tokens.size());
    const std::vector<float> logits = logprobs_test::teacher_forced_logits(e, g);
    for (int64_t j = 0; j < n; ++j) {
      const float* row = logits.data() + j * V;
      const std::vector<double> ref = logprobs_test::log_softmax(row, V);
      // The decode step (graph, GEMV) and the teacher-forced prefill (cuBLASLt, prefill
      // attention) round their bf16 logits differently: the golden checks bound that by
      // 2% of the row's largest |logit|; a logprob moves with its logit and the lse.
      double scale = 0;
      for (int64_t v = 0; v < V; ++v) scale = std::max(scale, std::fabs(static_cast<double>(row[v])));
      const double tol = 2 * 0.02 * scale;
      const TokenLogprobs& lp = g.output_logprobs[static_cast<size_t>(j)];
      EXPECT_NEAR(lp.logprob, ref[static_cast<size_t>(g.output_tokens[static_cast<size_t>(j)])], tol)
          << what << " " << i << " " << j;
      ASSERT_EQ(lp.top_ids.size(), static_cast<size_t>(*ks[i]));
      for (size_t k = 0; k < lp.top_ids.size(); ++k) {
        EXPECT_NEAR(lp.top_logprobs[k], ref[static_cast<size_t>(lp.top_ids[k])], tol) << what;
        if (k > 0) EXPECT_LE(lp.top_logprobs[k], lp.top_logprobs[k - 1]);
      }
    }
  }
}

TEST(EngineLogprobsGpu, GraphAndEagerStepsMatchTeacherForcedLogSoftmax) {
  FK_REQUIRE_GPU();
  // The golden checkpoints (head dim 64, which the CUDA attention kernels take; the
  // built-in tiny configs have 16), Gemma 2's with logit soft-capping.
  for (const char* model : {"llama", "gemma2"}) {
    Engine e(golden_config(model));
    // Three requests: decode batches of 3 run in the graph of 4 (one padding sequence);
    // one request without logprobs in between splits the rows into two runs.
    expect_logprobs_match_teacher_forcing(e, {{5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15, 16}}, {20, std::nullopt, 3},
                                          model);
  }
}

// Every decode graph grid class (each pads the split-KV grid to its own size, so a graph
// replayed under a plan of another class would read the wrong schedule), and the per-step
// choice, on contexts long enough to be split into chunks.
TEST(EngineLogprobsGpu, EveryDecodeGraphGridMatchesTeacherForcedLogSoftmax) {
  FK_REQUIRE_GPU();
  std::vector<std::vector<int64_t>> prompts(3);
  for (size_t i = 0; i < prompts.size(); ++i)
    for (int64_t t = 0; t < 150 + 70 * static_cast<int64_t>(i); ++t) prompts[i].push_back(3 + (t * 7 + 11 * i) % 200);
  for (int32_t grid = 0; grid <= ops::kDecodeGraphGrids; ++grid) {
    EngineConfig c = golden_config("llama");
    c.decode_graph_grid = grid;
    Engine e(c);
    expect_logprobs_match_teacher_forcing(e, prompts, {5, 5, 5}, concat("grid ", grid));
  }
}

}  // namespace
}  // namespace fk::engine
