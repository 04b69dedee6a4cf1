// Shared by the Qwen3-Next engine tests (CPU and GPU): tiny-qwen3-next engines, random
// prompts, greedy parameters, and the teacher-forcing oracle (engine_qwen3_next_test.cpp
// says why it is one).
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fk/status.h"
#include "models/llm/model_config.h"
#include "serving/generate/engine.h"
#include "serving/generate/logprobs_test_util.h"

namespace fk::engine::qwen3_next_test {

inline constexpr const char* kModel = "tiny-qwen3-next";
inline constexpr double kLogprobTol = 0.08;

inline EngineConfig tiny(int64_t budget, int64_t pages = 64, int64_t max_seqs = 32,
                         DeviceType backend = DeviceType::cpu) {
  EngineConfig c;
  c.model = kModel;
  c.backend = backend;
  c.num_pages = pages;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.max_model_len = 256;
  return c;
}

// tiny-qwen3-next with a dense MLP in every layer (mlp_only_layers: all): no router. Two
// computations that round differently (CPU and GPU, a packed batch and a solo run on the
// GPU) can see two of the 4 random experts' router logits swap at a near-tie; the token
// then goes to another expert, a different function rather than a rounding difference,
// and its logits move by tenths of a nat. Tests of the recurrent state compare runs that
// may round differently, so they run without the router (the MoE path has its own tests).
inline EngineConfig dense(EngineConfig c) {
  static const std::string dir = [] {
    nlohmann::json config = nlohmann::json::parse(model_config_json_by_name(kModel));
    config["mlp_only_layers"] = nlohmann::json::array();
    for (int64_t l = 0; l < config["num_hidden_layers"].get<int64_t>(); ++l) config["mlp_only_layers"].push_back(l);
    const std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("fk-tiny-qwen3-next-dense-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    std::ofstream(d / "config.json") << config.dump();
    static const std::filesystem::path remove_at_exit = d;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(remove_at_exit, ignored);
    });
    return d.string();
  }();
  c.model = dir;
  c.dummy_weights = true;
  return c;
}

inline std::vector<std::vector<int64_t>> random_prompts(uint64_t seed, int n, int64_t min_len, int64_t max_len) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> len(min_len, max_len), tok(3, 255);
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int64_t> p(static_cast<size_t>(len(rng)));
    for (int64_t& t : p) t = tok(rng);
    out.push_back(p);
  }
  return out;
}

inline SamplingParams greedy(int64_t max_tokens, std::optional<int32_t> logprobs = std::nullopt) {
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = max_tokens;
  sp.ignore_eos = true;
  sp.logprobs = logprobs;
  return sp;
}

// g's greedy outputs against teacher forcing in `oracle` (an idle engine): each output is
// the argmax up to kLogprobTol, and, where g has logprobs, each equals the teacher-forced one.
inline void expect_teacher_forced(Engine& oracle, const GenerationResult& g, const std::string& what) {
  ASSERT_FALSE(g.output_tokens.empty()) << what;
  const int64_t V = oracle.spec().config.vocab_size;
  const std::vector<float> logits = logprobs_test::teacher_forced_logits(oracle, g);
  for (size_t j = 0; j < g.output_tokens.size(); ++j) {
    const std::vector<double> lp = logprobs_test::log_softmax(&logits[j * static_cast<size_t>(V)], V);
    const double best = *std::max_element(lp.begin(), lp.end());
    const double chosen = lp[static_cast<size_t>(g.output_tokens[j])];
    EXPECT_NEAR(chosen, best, kLogprobTol) << what << ": output " << j << " is not the teacher-forced argmax";
    if (!g.output_logprobs.empty())
      EXPECT_NEAR(g.output_logprobs[j].logprob, chosen, kLogprobTol) << what << ": logprob of output " << j;
  }
}

}  // namespace fk::engine::qwen3_next_test
