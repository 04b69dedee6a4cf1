// Shared by the engine logits-processor tests (CPU and GPU): vLLM's processing of a row of
// logits in double, and the check that greedy outputs are the argmax of the processed
// teacher-forced logits.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "serving/generate/engine.h"
#include "serving/generate/logprobs_test_util.h"

namespace fk::engine::logits_processors_test {

// vLLM's processing of one row, in double: bad words, min_tokens' bans, logit_bias, penalties.
inline std::vector<double> process(const float* raw, int64_t V, const SamplingParams& p, const std::vector<int64_t>& prompt,
                            const std::vector<int64_t>& outputs, const std::vector<int64_t>& eos) {
  std::vector<double> x(raw, raw + V);
  const double inf = INFINITY;
  for (const auto& w : p.bad_words) {
    const size_t prefix = w.size() - 1;
    if (prefix <= outputs.size() && std::equal(w.begin(), w.end() - 1, outputs.end() - static_cast<long>(prefix)))
      x[static_cast<size_t>(w.back())] = -inf;
  }
  if (static_cast<int64_t>(outputs.size()) < p.min_tokens) {
    if (!p.ignore_eos)
      for (int64_t t : eos) x[static_cast<size_t>(t)] = -inf;
    for (int64_t t : p.stop_token_ids) x[static_cast<size_t>(t)] = -inf;
  }
  for (const auto& [id, b] : p.logit_bias) x[static_cast<size_t>(id)] += b;
  std::map<int64_t, int64_t> count;
  std::set<int64_t> seen(prompt.begin(), prompt.end());
  for (int64_t t : outputs) {
    ++count[t];
    seen.insert(t);
  }
  for (int64_t t : seen) {
    double& v = x[static_cast<size_t>(t)];
    v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    const int64_t c = count.count(t) ? count[t] : 0;
    v -= p.frequency_penalty * static_cast<double>(c) + (c > 0 ? p.presence_penalty : 0.0);
  }
  return x;
}

// Every output token is the argmax of the processed teacher-forced logits, or within `slack`
// of it (float rounding; on the GPU, the decode and prefill kernels' rounding).
inline void expect_processed_argmax(Engine& e, const GenerationResult& g, const SamplingParams& p, const std::string& what,
                                    double slack = 1e-3) {
  const int64_t V = e.spec().config.vocab_size;
  const std::vector<float> logits = logprobs_test::teacher_forced_logits(e, g);
  for (size_t j = 0; j < g.output_tokens.size(); ++j) {
    const std::vector<int64_t> before(g.output_tokens.begin(), g.output_tokens.begin() + static_cast<long>(j));
    const std::vector<double> x =
        process(logits.data() + static_cast<int64_t>(j) * V, V, p, g.prompt_tokens, before,
                e.spec().config.eos_token_ids);
    const double best = *std::max_element(x.begin(), x.end());
    EXPECT_GE(x[static_cast<size_t>(g.output_tokens[j])], best - slack) << what << " token " << j;
  }
}

}  // namespace fk::engine::logits_processors_test
