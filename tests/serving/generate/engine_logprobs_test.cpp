// Logprobs through the engine (CPU backend, tiny models): every output token's logprob is
// log_softmax of the teacher-forced logits at its position (raw: after Gemma-2's final
// soft-capping, before temperature and filters), the alternatives are that row's most
// likely tokens, requests that do not ask get nothing, and the op does not run for them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "serving/generate/engine.h"
#include "fk/op_registry.h"
#include "fk/ops/logprobs.h"
#include "fk/status.h"
#include "serving/generate/logprobs_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

EngineConfig tiny(const std::string& model) {
  EngineConfig c;
  c.model = model;
  c.backend = DeviceType::cpu;
  c.num_pages = 64;
  c.max_num_batched_tokens = 256;
  c.max_num_seqs = 16;
  c.max_model_len = 256;
  return c;
}

using logprobs_test::log_softmax;

TEST(EngineLogprobs, SampledLogprobIsLogSoftmaxOfTheTeacherForcedLogits) {
  const uint64_t seed = test::seed_for("EngineLogprobs.TeacherForced");
  for (const char* model : {"tiny-llama", "tiny-gemma2"}) {
    Engine e(tiny(model));
    const int64_t V = e.spec().config.vocab_size;
    // Sampled at temperature 0.8 with top-k: logprobs are still of the raw distribution.
    SamplingParams sp;
    sp.temperature = 0.8f;
    sp.top_k = 40;
    sp.seed = seed;
    sp.max_tokens = 12;
    sp.ignore_eos = true;
    // Different K in one batch: with and without alternatives, and a request without logprobs.
    const std::vector<std::vector<int64_t>> prompts = {{5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15, 16}, {17, 18}};
    const std::vector<std::optional<int32_t>> ks = {5, 0, 20, std::nullopt};
    const std::map<std::string, GenerationResult> done = logprobs_test::run_with_logprobs(e, prompts, ks, sp);

    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult& g = done.at(concat("r", i));
      ASSERT_EQ(g.output_tokens.size(), 12u);
      if (!ks[i]) {
        EXPECT_TRUE(g.output_logprobs.empty()) << model;
        continue;
      }
      ASSERT_EQ(g.output_logprobs.size(), g.output_tokens.size()) << model;
      const int64_t n = static_cast<int64_t>(g.output_tokens.size());
      const std::vector<float> logits = logprobs_test::teacher_forced_logits(e, g);
      for (int64_t j = 0; j < n; ++j) {
        const std::vector<double> ref = log_softmax(logits.data() + j * V, V);
        const TokenLogprobs& lp = g.output_logprobs[static_cast<size_t>(j)];
        EXPECT_NEAR(lp.logprob, ref[static_cast<size_t>(g.output_tokens[static_cast<size_t>(j)])], 1e-4)
            << model << " request " << i << " token " << j;
        ASSERT_EQ(lp.top_ids.size(), static_cast<size_t>(*ks[i]));
        std::vector<int64_t> order(static_cast<size_t>(V));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return ref[static_cast<size_t>(a)] > ref[static_cast<size_t>(b)]; });
        for (size_t k = 0; k < lp.top_ids.size(); ++k) {
          EXPECT_EQ(lp.top_ids[k], order[k]) << model << " request " << i << " token " << j << " rank " << k;
          EXPECT_NEAR(lp.top_logprobs[k], ref[static_cast<size_t>(order[k])], 1e-4);
        }
      }
    }
  }
}

TEST(EngineLogprobs, StepTokensCarryLogprobsOnlyForRequestsThatAsked) {
  Engine e(tiny("tiny-llama"));
  SamplingParams with, without;
  with.temperature = without.temperature = 0;
  with.max_tokens = without.max_tokens = 4;
  with.ignore_eos = without.ignore_eos = true;
  with.logprobs = 3;
  e.add_request({1, 2, 3}, with, "with");
  e.add_request({4, 5, 6}, without, "without");
  std::vector<StepToken> tokens;
  int seen_with = 0, seen_without = 0;
  while (e.has_unfinished()) {
    e.step(&tokens);
    for (const StepToken& t : tokens) {
      if (t.id == "with") {
        ++seen_with;
        ASSERT_TRUE(t.logprobs.has_value());
        ASSERT_EQ(t.logprobs->top_ids.size(), 3u);
        EXPECT_EQ(t.logprobs->top_ids[0], t.token) << "greedy: the sampled token is the most likely";
        EXPECT_FLOAT_EQ(t.logprobs->logprob, t.logprobs->top_logprobs[0]);
      } else {
        ++seen_without;
        EXPECT_FALSE(t.logprobs.has_value());
      }
    }
  }
  EXPECT_EQ(seen_with, 4);
  EXPECT_EQ(seen_without, 4);
}

TEST(EngineLogprobs, TheOpRunsOnlyWhenARequestAsks) {
  Engine e(tiny("tiny-llama"));
  int calls = 0;
  int64_t rows = 0;
  OpRegistry::global().set_call_observer([&](const OpDef& d, DeviceType, const void* args, double) {
    if (d.name != "compute_logprobs") return;
    ++calls;
    rows += static_cast<const ops::ComputeLogprobsArgs*>(args)->logits.shape[0];
  });
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = 3;
  sp.ignore_eos = true;
  e.generate({{1, 2, 3}, {4, 5}}, sp);
  EXPECT_EQ(calls, 0);
  sp.logprobs = 2;
  e.add_request({7, 8, 9}, sp, "asks");
  SamplingParams quiet = sp;
  quiet.logprobs.reset();
  e.add_request({10, 11}, quiet, "quiet");
  while (e.has_unfinished()) e.step();
  OpRegistry::global().set_call_observer(nullptr);
  EXPECT_EQ(calls, 3) << "one call per step of the request that asked";
  EXPECT_EQ(rows, 3) << "only its row of the logits";
}

TEST(EngineLogprobs, OutOfRangeRequestsAreRefused) {
  Engine e(tiny("tiny-llama"));
  SamplingParams sp;
  sp.logprobs = 21;
  EXPECT_THROW(e.add_request({1, 2}, sp), Error);
  sp.logprobs = -1;
  EXPECT_THROW(e.add_request({1, 2}, sp), Error);
}

}  // namespace
}  // namespace fk::engine
