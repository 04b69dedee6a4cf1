// Shared by the engine logprobs tests (CPU and GPU): requests with a per-request logprobs
// setting run to completion, and the log-softmax the reported logprobs are checked against.
#pragma once
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "serving/generate/engine.h"
#include "fk/status.h"

namespace fk::engine::logprobs_test {

// Adds prompt i as request "r<i>" with `params` and logprobs ks[i], runs the engine until
// every request finished, and returns the results by id.
inline std::map<std::string, GenerationResult> run_with_logprobs(Engine& e,
                                                                 const std::vector<std::vector<int64_t>>& prompts,
                                                                 const std::vector<std::optional<int32_t>>& ks,
                                                                 const SamplingParams& params) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    SamplingParams p = params;
    p.logprobs = ks[i];
    e.add_request(prompts[i], p, concat("r", i));
  }
  std::map<std::string, GenerationResult> done;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) done[g.id] = std::move(g);
  return done;
}

// Teacher forcing: the logits [n, V] of the positions that predicted g's n output tokens
// (row j predicts output token j), from one prefill of the prompt and the outputs but the last.
inline std::vector<float> teacher_forced_logits(Engine& e, const GenerationResult& g) {
  std::vector<int64_t> seq = g.prompt_tokens;
  seq.insert(seq.end(), g.output_tokens.begin(), g.output_tokens.end() - 1);
  return e.prefill_logits(seq, static_cast<int64_t>(g.output_tokens.size()));
}

// log_softmax of one row of V logits, in double.
inline std::vector<double> log_softmax(const float* row, int64_t V) {
  double m = -INFINITY;
  for (int64_t v = 0; v < V; ++v) m = std::max<double>(m, row[v]);
  double s = 0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - m);
  std::vector<double> out(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) out[static_cast<size_t>(v)] = row[v] - m - std::log(s);
  return out;
}

}  // namespace fk::engine::logprobs_test
