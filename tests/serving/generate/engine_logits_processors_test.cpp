// logit_bias, min_tokens, bad_words and the penalties through the engine (CPU backend, tiny
// model, greedy): each changes the tokens as vLLM's would — every output token is the argmax
// of the teacher-forced logits with vLLM's processing applied — with synchronous and
// asynchronous scheduling (a pending output token filled in on the device), in batches with
// requests that use none of them (whose tokens do not change), and the ops run only for
// steps where some request uses them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "fk/op_registry.h"
#include "fk/philox.h"
#include "fk/status.h"
#include "serving/generate/engine.h"
#include "serving/generate/logits_processors_test_util.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

EngineConfig tiny(bool async) {
  EngineConfig c;
  c.model = "tiny-llama";
  c.backend = DeviceType::cpu;
  c.num_pages = 64;
  c.max_num_batched_tokens = 256;
  c.max_num_seqs = 16;
  c.max_model_len = 256;
  c.async_scheduling = async;
  return c;
}

SamplingParams greedy(int64_t max_tokens) {
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = max_tokens;
  sp.ignore_eos = true;
  return sp;
}

std::vector<int64_t> random_prompt(uint64_t seed, int64_t V, int64_t n) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < n; ++i) p.push_back(philox_int(seed, 1, static_cast<uint64_t>(i), 0, V));
  return p;
}

// Runs the requests together; results by id.
std::map<std::string, GenerationResult> run(Engine& e, const std::vector<std::vector<int64_t>>& prompts,
                                            const std::vector<SamplingParams>& params) {
  for (size_t i = 0; i < prompts.size(); ++i) e.add_request(prompts[i], params[i], concat("r", i));
  std::map<std::string, GenerationResult> done;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) done[g.id] = std::move(g);
  return done;
}

class EngineLogitsProcessors : public ::testing::TestWithParam<bool> {};

TEST_P(EngineLogitsProcessors, AHugeLogitBiasForcesATokenAndANegativeOneBansIt) {
  Engine e(tiny(GetParam()));
  const int64_t V = e.spec().config.vocab_size;
  const std::vector<int64_t> prompt = random_prompt(test::seed_for("bias"), V, 6);
  const GenerationResult plain = e.generate({prompt}, greedy(8))[0];
  SamplingParams forced = greedy(8);
  forced.logit_bias = {{V - 1, 100.f}};
  SamplingParams banned = greedy(8);
  banned.logit_bias = {{plain.output_tokens[0], -100.f}};
  const auto done = run(e, {prompt, prompt, prompt}, {forced, banned, greedy(8)});
  EXPECT_EQ(done.at("r0").output_tokens, std::vector<int64_t>(8, V - 1));
  EXPECT_NE(done.at("r1").output_tokens[0], plain.output_tokens[0]);
  EXPECT_EQ(done.at("r2").output_tokens, plain.output_tokens) << "a request without processors is unchanged";
  logits_processors_test::expect_processed_argmax(e, done.at("r1"), banned, "banned");
}

TEST_P(EngineLogitsProcessors, PenaltiesFollowVllmAndAHugeRepetitionPenaltyStopsRepeats) {
  Engine e(tiny(GetParam()));
  const int64_t V = e.spec().config.vocab_size;
  const uint64_t seed = test::seed_for("penalties");
  const std::vector<int64_t> prompt = random_prompt(seed, V, 5);
  std::vector<SamplingParams> ps(4, greedy(16));
  ps[0].repetition_penalty = 1.7f;
  ps[1].frequency_penalty = 1.5f;
  ps[2].presence_penalty = -2.f;  // encourages repeats
  ps[3].repetition_penalty = 0.6f;
  ps[3].frequency_penalty = -0.5f;
  ps[3].presence_penalty = 2.f;
  const auto done = run(e, {prompt, prompt, prompt, prompt}, ps);
  for (size_t i = 0; i < ps.size(); ++i) logits_processors_test::expect_processed_argmax(e, done.at(concat("r", i)), ps[i], concat("r", i));

  // A huge repetition penalty with a bias that makes every logit positive: a seen token's
  // logit falls to about zero, so no token is drawn twice (prompt tokens not at all).
  SamplingParams no_repeats = greedy(12);
  no_repeats.repetition_penalty = 1e6f;
  for (int64_t v = 0; v < V; ++v) no_repeats.logit_bias.emplace_back(v, 50.f);
  const GenerationResult g = run(e, {prompt}, {no_repeats}).at("r0");
  std::set<int64_t> seen(prompt.begin(), prompt.end());
  for (int64_t t : g.output_tokens) EXPECT_TRUE(seen.insert(t).second) << "token " << t << " repeated";
}

TEST_P(EngineLogitsProcessors, BadWordsNeverEmitTheBannedSequence) {
  Engine e(tiny(GetParam()));
  const int64_t V = e.spec().config.vocab_size;
  const std::vector<int64_t> prompt = random_prompt(test::seed_for("bad_words"), V, 7);
  const GenerationResult plain = e.generate({prompt}, greedy(10))[0];
  const int64_t a = plain.output_tokens[0], b = plain.output_tokens[1];
  SamplingParams pair = greedy(10), single = greedy(10);
  pair.bad_words = {{a, b}};
  single.bad_words = {{a}};
  const auto done = run(e, {prompt, prompt}, {pair, single});
  const auto& p = done.at("r0").output_tokens;
  EXPECT_EQ(p[0], a) << "the word's first token alone is allowed";
  for (size_t j = 0; j + 1 < p.size(); ++j) EXPECT_FALSE(p[j] == a && p[j + 1] == b) << "at " << j;
  for (int64_t t : done.at("r1").output_tokens) EXPECT_NE(t, a);
  logits_processors_test::expect_processed_argmax(e, done.at("r0"), pair, "pair");
  logits_processors_test::expect_processed_argmax(e, done.at("r1"), single, "single");
}

TEST_P(EngineLogitsProcessors, MinTokensMasksEosAndStopTokensUntilTheMinimum) {
  Engine e(tiny(GetParam()));
  const int64_t V = e.spec().config.vocab_size;
  ASSERT_FALSE(e.spec().config.eos_token_ids.empty());
  const int64_t eos = e.spec().config.eos_token_ids[0];
  const std::vector<int64_t> prompt = random_prompt(test::seed_for("min_tokens"), V, 4);
  // A bias that makes EOS (or a stop id) the greedy token every step.
  SamplingParams eager = greedy(20);
  eager.ignore_eos = false;
  eager.logit_bias = {{eos, 100.f}};
  SamplingParams held = eager;
  held.min_tokens = 5;
  const int64_t stop = (eos + 1) % V;
  SamplingParams stop_held = greedy(20);
  stop_held.stop_token_ids = {stop};
  stop_held.logit_bias = {{stop, 100.f}};
  stop_held.min_tokens = 3;
  const auto done = run(e, {prompt, prompt, prompt}, {eager, held, stop_held});
  EXPECT_EQ(done.at("r0").output_tokens, std::vector<int64_t>{eos});
  const auto& h = done.at("r1").output_tokens;
  ASSERT_EQ(h.size(), 6u) << "five tokens that are not EOS, then EOS";
  for (size_t j = 0; j < 5; ++j) EXPECT_NE(h[j], eos) << j;
  EXPECT_EQ(h[5], eos);
  EXPECT_EQ(done.at("r1").finish_reason, FinishReason::stop);
  const auto& s = done.at("r2").output_tokens;
  ASSERT_EQ(s.size(), 4u);
  for (size_t j = 0; j < 3; ++j) EXPECT_NE(s[j], stop) << j;
  EXPECT_EQ(s[3], stop);
  logits_processors_test::expect_processed_argmax(e, done.at("r1"), held, "held");
}

TEST_P(EngineLogitsProcessors, TheOpsRunOnlyForStepsWhereARequestUsesThem) {
  Engine e(tiny(GetParam()));
  std::map<std::string, int> calls;
  OpRegistry::global().set_call_observer([&](const OpDef& d, DeviceType, const void*, double) {
    if (d.name.rfind("apply_", 0) == 0) ++calls[d.name];
  });
  e.generate({{1, 2, 3}, {4, 5}}, greedy(4));
  EXPECT_TRUE(calls.empty());
  SamplingParams bias = greedy(3);
  bias.logit_bias = {{7, 1.f}};
  e.generate({{1, 2, 3}}, bias);
  SamplingParams pen = greedy(3);
  pen.presence_penalty = 0.5f;
  pen.bad_words = {{3, 4}};
  e.generate({{1, 2, 3}}, pen);
  OpRegistry::global().set_call_observer(nullptr);
  EXPECT_EQ(calls["apply_logit_bias"], 6) << "one per sampling step, the copy for the others";
  EXPECT_EQ(calls["apply_bad_words"], 3);
  EXPECT_EQ(calls["apply_penalties"], 3);
}

TEST(EngineLogitsProcessorsErrors, OutOfVocabularyIdsAndBadRangesAreNamed) {
  SamplingParams p = greedy(4);
  p.presence_penalty = 2.5f;
  EXPECT_THROW(p.validate(), Error);
  p = greedy(4);
  p.repetition_penalty = 0;
  EXPECT_THROW(p.validate(), Error);
  p = greedy(4);
  p.bad_words = {{}};
  EXPECT_THROW(p.validate(), Error);
  p = greedy(4);
  p.logit_bias = {{1000, 1.f}};
  try {
    p.validate_token_ids(1000);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logit_bias token id 1000 is outside the vocabulary [0, 1000)"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Scheduling, EngineLogitsProcessors, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "async" : "sync"; });

}  // namespace
}  // namespace fk::engine
