// A generation request as the engine tracks it: its tokens, sampling parameters, stop
// conditions and where it stands (how many of its tokens have KV in the cache, which
// cache blocks hold them). Owned by the scheduler from `add` until it finishes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/state/kv_sequence.h"
#include "serving/generate/request_images.h"

namespace fk::engine {

// Per-request sampling (the semantics of the `sample` op, fk/ops/sampling.h) and stop rules.
struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  std::optional<uint64_t> seed;  // unset: the engine derives one from its own seed and the request's number
  int64_t max_tokens = 16;       // output tokens at most (>= 1)
  int64_t min_tokens = 0;        // EOS and stop tokens are ignored before this many outputs
  std::vector<int64_t> stop_token_ids;  // finish (reason stop) after emitting any of these
  bool ignore_eos = false;              // keep generating past the model's EOS tokens
  // Set: every output token comes with its logprob and this many (0..20) most likely
  // alternatives (TokenLogprobs), of the raw distribution (fk/ops/logprobs.h).
  std::optional<int32_t> logprobs;
  // Logits processors (vLLM's semantics; the ops of fk/ops/sampling.h), applied before
  // temperature and the filters: repetition over prompt and output tokens, frequency and
  // presence over output tokens; biases added to token ids' logits; the last token of a bad
  // word banned while the output ends with the rest of it. min_tokens also bans EOS and the
  // stop ids (a -inf bias) until the request has that many outputs.
  float presence_penalty = 0.0f;    // [-2, 2]; 0 = off
  float frequency_penalty = 0.0f;   // [-2, 2]; 0 = off
  float repetition_penalty = 1.0f;  // > 0; 1 = off
  std::vector<std::pair<int64_t, float>> logit_bias;  // (token id, bias in [-100, 100])
  std::vector<std::vector<int64_t>> bad_words;        // token sequences, none empty

  // Whether a step sampling for this request must run the logits processors.
  bool uses_logits_processors() const {
    return presence_penalty != 0 || frequency_penalty != 0 || repetition_penalty != 1 || !logit_bias.empty() ||
           !bad_words.empty() || min_tokens > 0;
  }

  // Throws fk::Error (FK_ERR_INVALID_ARGUMENT) naming the first field out of range.
  void validate() const;
  // Throws fk::Error naming the first token id of logit_bias or bad_words outside the vocabulary [0, vocab_size).
  void validate_token_ids(int64_t vocab_size) const;
};

// Log-probabilities of one output token under the model's raw distribution: log_softmax of
// the logits after soft-capping, before temperature, top-k, top-p and min-p.
struct TokenLogprobs {
  float logprob = 0;                // of the sampled token
  std::vector<int32_t> top_ids;     // the most likely tokens, best first (ties: lower id)
  std::vector<float> top_logprobs;  // theirs
};

enum class RequestState : uint8_t { waiting, running, finished };
enum class FinishReason : uint8_t { none, stop, length, abort };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "none"

struct Request {
  std::string id;
  int64_t arrival = 0;  // admission order (FCFS), set by the scheduler
  std::vector<int64_t> prompt_tokens;
  std::vector<int64_t> output_tokens;
  std::vector<TokenLogprobs> output_logprobs;  // one per output token when params.logprobs is set
  SamplingParams params;
  uint64_t seed = 0;                  // Philox key for this request's draws (offset = output index)
  std::vector<int64_t> eos_token_ids;  // the model's, unless params.ignore_eos
  int64_t max_model_len = 0;           // 0 = no limit; else finish (length) at this many tokens
  // The request's images (models that read them: Qwen3-VL), or null for a text prompt.
  std::shared_ptr<RequestImages> images;

  RequestState state = RequestState::waiting;
  FinishReason finish_reason = FinishReason::none;
  // Tokens (prompt then outputs) whose K/V are in the cache. Prefill and decode are the
  // same thing: each step computes the next tokens until this catches up with
  // total_tokens(); the step that computes the last token samples the next one.
  int64_t num_computed_tokens = 0;
  int64_t num_cached_tokens = 0;  // of those, found in the prefix cache at the last admission
  KvBlockTable block_ids;  // KV-cache blocks (pages), in token order
  // Models with recurrent state (scheduler.h): the request's slot in the recurrent state
  // pool while it runs, -1 otherwise. A step that starts at position 0 ignores the slot's
  // contents (no initial state); a later one continues from them.
  int32_t state_slot = -1;
  int64_t num_preemptions = 0;
  // Asynchronous scheduling (scheduler.h): output tokens that scheduled steps will sample
  // but whose ids are not known yet. They follow output_tokens; a step that computes one
  // takes its id from the device, where the step before sampled it.
  int64_t num_pending_tokens = 0;
  int64_t num_steps_in_flight = 0;  // scheduled steps not yet applied that include this request

  // Prompt, outputs and pending outputs: the positions the request has or will have.
  int64_t total_tokens() const { return known_tokens() + num_pending_tokens; }
  // Prompt and outputs whose ids are known.
  int64_t known_tokens() const { return static_cast<int64_t>(prompt_tokens.size() + output_tokens.size()); }
  // The id at position i, or kPendingToken for a pending output.
  static constexpr int64_t kPendingToken = -1;
  int64_t token_at(int64_t i) const {
    const auto p = static_cast<int64_t>(prompt_tokens.size());
    if (i >= known_tokens()) return kPendingToken;
    return i < p ? prompt_tokens[static_cast<size_t>(i)] : output_tokens[static_cast<size_t>(i - p)];
  }
  // The output index of the token a step that samples now draws (its Philox offset): the
  // last pending one.
  int64_t sampled_output_index() const {
    return static_cast<int64_t>(output_tokens.size()) + num_pending_tokens - 1;
  }
  bool finished() const { return state == RequestState::finished; }

  // Its tokens, and the request as the KV cache manager takes it (views of its own fields).
  SequenceTokens tokens() const { return {prompt_tokens, output_tokens, num_pending_tokens}; }
  KvSequence kv_sequence() { return {id, tokens(), num_computed_tokens, num_cached_tokens, block_ids}; }
};

}  // namespace fk::engine
