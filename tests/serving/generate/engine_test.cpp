// The engine end to end on the CPU backend (tiny built-in models, random weights): batch
// invariance under chunked prefill, preemption and prefix caching; seeded sampling; stop
// rules; bad requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "serving/generate/engine.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

EngineConfig tiny(const std::string& model, int64_t pages, int64_t budget) {
  EngineConfig c;
  c.model = model;
  c.backend = DeviceType::cpu;
  c.num_pages = pages;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 64;
  c.max_model_len = 256;
  return c;
}

std::vector<std::vector<int64_t>> random_prompts(uint64_t seed, int n, int64_t vocab, bool shared_prefix) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> len(1, 60), tok(3, vocab - 1);
  std::vector<int64_t> prefix;
  for (int i = 0; i < 40; ++i) prefix.push_back(tok(rng));
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int64_t> p;
    if (shared_prefix && i % 3 == 0) p.assign(prefix.begin(), prefix.begin() + 17 + i % 20);
    const int64_t n_own = len(rng);
    for (int64_t k = 0; k < n_own; ++k) p.push_back(tok(rng));
    out.push_back(p);
  }
  return out;
}

// The tokens of each prompt run alone in a roomy engine.
std::vector<std::vector<int64_t>> solo(const std::string& model, const std::vector<std::vector<int64_t>>& prompts,
                                       const SamplingParams& sp) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& p : prompts) {
    Engine e(tiny(model, 64, 512));
    out.push_back(e.generate({p}, sp)[0].output_tokens);
  }
  return out;
}

TEST(Engine, BatchOf64WithChunkingPreemptionAndPrefixCachingMatchesSoloRuns) {
  const uint64_t seed = test::seed_for("Engine.BatchInvariance");
  for (const char* model : {"tiny-llama", "tiny-gemma2"}) {
    const auto prompts = random_prompts(seed, 64, 256, /*shared_prefix=*/true);
    SamplingParams greedy;
    greedy.temperature = 0;
    greedy.max_tokens = 16;
    greedy.ignore_eos = true;
    SamplingParams seeded = greedy;
    seeded.temperature = 1.0f;
    seeded.top_p = 0.9f;
    seeded.seed = 1234;
    for (const SamplingParams& sp : {greedy, seeded}) {
      const auto want = solo(model, prompts, sp);
      // 12 pages of 16 tokens hold a few requests at once: preemption is forced;
      // a budget of 48 tokens splits most prompts across steps.
      Engine e(tiny(model, 12, 48));
      const auto got = e.generate(prompts, sp);
      for (size_t i = 0; i < prompts.size(); ++i)
        EXPECT_EQ(got[i].output_tokens, want[i]) << model << " prompt " << i << " seed " << seed;
      EXPECT_GT(e.stats().preemptions, 0) << model << ": the test means to force preemption";
      EXPECT_GT(e.stats().mixed_steps, 0) << model << ": decodes beside prefill chunks take the split path";
      int64_t cached = 0;
      for (const auto& r : got) cached += r.num_cached_tokens;
      EXPECT_GT(cached, 0) << model << ": shared prefixes should hit the prefix cache";
    }
  }
}

// Mixture-of-experts models: a token's routing and expert outputs must not depend on which
// other tokens share its step.
TEST(Engine, MoeModelsInABatchWithChunkingAndPreemptionMatchSoloRuns) {
  const uint64_t seed = test::seed_for("Engine.MoeBatchInvariance");
  for (const char* model : {"tiny-qwen3-moe", "tiny-mixtral", "tiny-olmoe", "tiny-qwen2-moe"}) {
    const auto prompts = random_prompts(seed, 12, 256, /*shared_prefix=*/true);
    SamplingParams greedy;
    greedy.temperature = 0;
    greedy.max_tokens = 8;
    greedy.ignore_eos = true;
    const auto want = solo(model, prompts, greedy);
    Engine e(tiny(model, 8, 48));
    const auto got = e.generate(prompts, greedy);
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(got[i].output_tokens, want[i]) << model << " prompt " << i << " seed " << seed;
    EXPECT_GT(e.stats().preemptions, 0) << model << ": the test means to force preemption";
  }
}

// Runs every prompt with its own parameters through step(), aborting `abort_id` after
// `abort_after` steps; returns the results by id, and checks that the tokens step()
// reported are exactly each result's outputs (nothing computed past a stop is streamed).
std::map<std::string, GenerationResult> run_stepwise(Engine& e, const std::vector<std::vector<int64_t>>& prompts,
                                                     const std::vector<SamplingParams>& params,
                                                     const std::string& abort_id, int abort_after) {
  for (size_t i = 0; i < prompts.size(); ++i) e.add_request(prompts[i], params[i], "r" + std::to_string(i));
  std::map<std::string, GenerationResult> done;
  std::map<std::string, std::vector<int64_t>> streamed;
  for (int step = 0; e.has_unfinished(); ++step) {
    if (step == abort_after) e.abort(abort_id);
    std::vector<StepToken> toks;
    for (auto& r : e.step(&toks)) done[r.id] = std::move(r);
    for (const auto& t : toks) streamed[t.id].push_back(t.token);
  }
  for (const auto& [id, r] : done) EXPECT_EQ(streamed[id], r.output_tokens) << id;
  return done;
}

TEST(Engine, AsynchronousSchedulingGivesTheTokensOfSynchronousScheduling) {
  const uint64_t seed = test::seed_for("Engine.AsyncScheduling");
  const auto prompts = random_prompts(seed, 24, 256, /*shared_prefix=*/true);
  // Stop tokens that each request meets after a few outputs, so that many finish while
  // the next step (already scheduled) runs; sampled and greedy requests, some with logprobs.
  std::vector<SamplingParams> params(prompts.size());
  {
    SamplingParams free;
    free.temperature = 0;
    free.max_tokens = 12;
    free.ignore_eos = true;
    const auto runs = solo("tiny-llama", prompts, free);
    for (size_t i = 0; i < prompts.size(); ++i) {
      SamplingParams& p = params[i];
      p.temperature = i % 3 == 0 ? 0.8f : 0.0f;
      p.seed = 100 + i;
      p.max_tokens = 4 + static_cast<int64_t>(i % 9);
      p.ignore_eos = true;
      if (i % 2 == 0) p.stop_token_ids = {runs[i][i % 5]};
      if (i % 4 == 1) p.logprobs = 2;
    }
  }
  std::map<std::string, GenerationResult> got[2];
  for (bool async : {false, true}) {
    // Preemption and chunked prefill. 8 pages of 16 tokens: the longest request (a
    // 36-token prefix, 60 own tokens, 12 outputs) still fits alone, and with 12 pages some
    // random prompts (the seed varies per run) never ran out of pages.
    EngineConfig c = tiny("tiny-llama", 8, 48);
    c.async_scheduling = async;
    Engine e(c);
    got[async] = run_stepwise(e, prompts, params, "r5", 6);
    EXPECT_GT(e.stats().preemptions, 0) << "async " << async << ": the test means to force preemption";
  }
  ASSERT_EQ(got[0].size(), prompts.size());
  ASSERT_EQ(got[1].size(), prompts.size());
  int stopped = 0;
  for (const auto& [id, sync] : got[0]) {
    const GenerationResult& async = got[1].at(id);
    if (id == "r5") {
      // Aborted after the same number of step() calls, which is a step further along with
      // asynchronous scheduling: both keep a prefix of the same tokens.
      EXPECT_EQ(async.finish_reason, FinishReason::abort);
      const size_t n = std::min(async.output_tokens.size(), sync.output_tokens.size());
      EXPECT_TRUE(std::equal(async.output_tokens.begin(), async.output_tokens.begin() + n, sync.output_tokens.begin()));
      continue;
    }
    EXPECT_EQ(async.output_tokens, sync.output_tokens) << id << " seed " << seed;
    EXPECT_EQ(async.finish_reason, sync.finish_reason) << id;
    stopped += sync.finish_reason == FinishReason::stop;
    ASSERT_EQ(async.output_logprobs.size(), sync.output_logprobs.size()) << id;
    for (size_t k = 0; k < sync.output_logprobs.size(); ++k) {
      EXPECT_EQ(async.output_logprobs[k].logprob, sync.output_logprobs[k].logprob) << id << " token " << k;
      EXPECT_EQ(async.output_logprobs[k].top_ids, sync.output_logprobs[k].top_ids) << id << " token " << k;
    }
  }
  EXPECT_EQ(got[0].at("r5").finish_reason, FinishReason::abort);
  EXPECT_GT(stopped, 3) << "the test means to stop requests by stop token";
}

TEST(Engine, SeedsMakeSamplingReproducibleAndDistinct) {
  Engine e(tiny("tiny-qwen3", 64, 128));
  SamplingParams sp;
  sp.temperature = 1.0f;
  sp.max_tokens = 16;
  sp.ignore_eos = true;
  sp.seed = 7;
  const std::vector<int64_t> prompt = {5, 6, 7, 8};
  const auto a = e.generate({prompt}, sp)[0].output_tokens;
  const auto b = e.generate({prompt}, sp)[0].output_tokens;
  EXPECT_EQ(a, b);
  sp.seed = 8;
  EXPECT_NE(e.generate({prompt}, sp)[0].output_tokens, a);
}

TEST(Engine, StopTokensAndMaxTokensFinishRequests) {
  Engine e(tiny("tiny-llama", 64, 128));
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = 10;
  sp.ignore_eos = true;
  const std::vector<int64_t> prompt = {9, 10, 11};
  const auto free_run = e.generate({prompt}, sp)[0];
  EXPECT_EQ(free_run.finish_reason, FinishReason::length);
  ASSERT_EQ(free_run.output_tokens.size(), 10u);
  sp.stop_token_ids = {free_run.output_tokens[3]};
  const auto stopped = e.generate({prompt}, sp)[0];
  EXPECT_EQ(stopped.finish_reason, FinishReason::stop);
  // It stops at the first occurrence of the stop token, which it keeps.
  const auto first = std::find(free_run.output_tokens.begin(), free_run.output_tokens.end(), sp.stop_token_ids[0]);
  EXPECT_EQ(stopped.output_tokens, std::vector<int64_t>(free_run.output_tokens.begin(), first + 1));
}

TEST(Engine, StepReportsTokensAsTheyAreProduced) {
  Engine e(tiny("tiny-mistral", 64, 128));
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = 3;
  sp.ignore_eos = true;
  const std::string id = e.add_request({1, 2, 3}, sp, "mine");
  std::vector<int64_t> streamed;
  std::vector<GenerationResult> done;
  while (e.has_unfinished()) {
    std::vector<StepToken> toks;
    for (auto& r : e.step(&toks)) done.push_back(std::move(r));
    for (const auto& t : toks) {
      EXPECT_EQ(t.id, id);
      streamed.push_back(t.token);
    }
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].output_tokens, streamed);
  EXPECT_GE(done[0].finished_s, done[0].first_token_s);
  EXPECT_GT(done[0].first_token_s, 0);
}

TEST(Engine, AbortedRequestComesBackWithReasonAbort) {
  Engine e(tiny("tiny-llama", 64, 128));
  SamplingParams sp;
  sp.max_tokens = 50;
  sp.ignore_eos = true;
  e.add_request({1, 2, 3}, sp, "a");
  e.step();
  EXPECT_TRUE(e.abort("a"));
  EXPECT_FALSE(e.abort("unknown"));
  std::vector<GenerationResult> done;
  while (e.has_unfinished())
    for (auto& r : e.step()) done.push_back(std::move(r));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].finish_reason, FinishReason::abort);
}

TEST(Engine, BadRequestsAreClearErrors) {
  Engine e(tiny("tiny-llama", 64, 128));
  SamplingParams sp;
  auto message = [&](std::vector<int64_t> prompt, SamplingParams p) {
    try {
      e.add_request(std::move(prompt), p);
    } catch (const Error& err) {
      return std::string(err.what());
    }
    return std::string();
  };
  EXPECT_NE(message({}, sp).find("empty prompt"), std::string::npos);
  EXPECT_NE(message({1, 256}, sp).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(message(std::vector<int64_t>(300, 1), sp).find("max_model_len"), std::string::npos);
  SamplingParams bad = sp;
  bad.top_p = 0;
  EXPECT_NE(message({1}, bad).find("top_p"), std::string::npos);
  EXPECT_FALSE(e.has_unfinished()) << "a refused request must leave nothing behind";
}

TEST(Engine, BadConfigsAreClearErrors) {
  EngineConfig c = tiny("no-such-model", 64, 128);
  EXPECT_THROW({ Engine e(c); }, Error);
  c = tiny("tiny-llama", 64, 128);
  c.page_size = 0;
  EXPECT_THROW({ Engine e(c); }, Error);
  c = tiny("tiny-llama", 64, 128);
  c.decode_graph_grid = 4;
  try {
    Engine e(c);
    ADD_FAILURE() << "decode_graph_grid 4 was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("decode_graph_grid must be 0 (per step) or a class in [1, 3], got 4"),
              std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace fk::engine
