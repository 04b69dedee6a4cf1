// logit_bias, min_tokens, bad_words and the penalties through the engine on the CUDA
// backend: decode steps replayed from captured graphs (the processors run on the graph's
// padded logit rows) and eager mixed steps, asynchronous scheduling (a pending output token
// filled in on the device). Greedy tokens are the argmax of the processed teacher-forced
// logits within the rounding that separates decode and prefill kernels; a forced token,
// banned words and EOS held back by min_tokens hold exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "fk/status.h"
#include "serving/generate/engine.h"
#include "serving/generate/logits_processors_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

EngineConfig golden_llama() {
  EngineConfig c;
  c.model = std::string(FK_SOURCE_DIR) + "/tests/data/models/llama";
  c.backend = DeviceType::cuda;
  c.num_pages = 128;
  c.max_num_batched_tokens = 512;
  c.max_num_seqs = 16;
  c.max_model_len = 512;
  c.async_scheduling = true;
  return c;
}

SamplingParams greedy(int64_t max_tokens) {
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = max_tokens;
  sp.ignore_eos = true;
  return sp;
}

TEST(EngineLogitsProcessorsGpu, GraphAndEagerStepsApplyEachRequestsProcessors) {
  FK_REQUIRE_GPU();
  Engine e(golden_llama());
  const int64_t V = e.spec().config.vocab_size;
  ASSERT_FALSE(e.spec().config.eos_token_ids.empty());
  const int64_t eos = e.spec().config.eos_token_ids[0];
  const std::vector<int64_t> prompt = {5, 17, 42, 9, 33, 8};
  const GenerationResult plain = e.generate({prompt}, greedy(12))[0];

  std::vector<SamplingParams> ps(6, greedy(12));
  ps[0].logit_bias = {{V - 1, 100.f}};                  // forced
  ps[1].bad_words = {{plain.output_tokens[0]}, {plain.output_tokens[1], plain.output_tokens[2]}};
  ps[2].repetition_penalty = 1.8f;
  ps[2].frequency_penalty = 1.f;
  ps[2].presence_penalty = 0.5f;
  ps[3].ignore_eos = false;                              // EOS held back for 4 tokens, then forced
  ps[3].logit_bias = {{eos, 100.f}};
  ps[3].min_tokens = 4;
  ps[4].presence_penalty = -2.f;
  // ps[5]: none (its tokens must be the plain run's)
  for (size_t i = 0; i < ps.size(); ++i) e.add_request(prompt, ps[i], concat("r", i));
  std::map<std::string, GenerationResult> done;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) done[g.id] = std::move(g);
  EXPECT_GT(e.stats().graph_replays, 0);

  EXPECT_EQ(done.at("r0").output_tokens, std::vector<int64_t>(12, V - 1));
  const auto& bw = done.at("r1").output_tokens;
  for (size_t j = 0; j < bw.size(); ++j) {
    EXPECT_NE(bw[j], plain.output_tokens[0]) << j;
    if (j + 1 < bw.size()) EXPECT_FALSE(bw[j] == plain.output_tokens[1] && bw[j + 1] == plain.output_tokens[2]) << j;
  }
  const auto& held = done.at("r3").output_tokens;
  ASSERT_EQ(held.size(), 5u);
  for (size_t j = 0; j < 4; ++j) EXPECT_NE(held[j], eos) << j;
  EXPECT_EQ(held[4], eos);
  EXPECT_EQ(done.at("r5").output_tokens, plain.output_tokens);
  for (size_t i : {1, 2, 4}) {
    const GenerationResult& g = done.at(concat("r", i));
    const std::vector<float> raw = logprobs_test::teacher_forced_logits(e, g);
    double scale = 0;
    for (float x : raw) scale = std::max(scale, std::fabs(static_cast<double>(x)));
    // Decode (graph, GEMV) and teacher-forced prefill logits differ by up to ~2% of the
    // largest |logit| (the golden tests' bound); a penalty scales that by at most 2.
    logits_processors_test::expect_processed_argmax(e, g, ps[i], concat("r", i), 0.08 * scale);
  }
}

}  // namespace
}  // namespace fk::engine
