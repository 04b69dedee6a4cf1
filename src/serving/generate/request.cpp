#include "serving/generate/request.h"

#include <cmath>

#include "fk/ops/logprobs.h"
#include "fk/status.h"

namespace fk::engine {

void SamplingParams::validate() const {
  FK_CHECK(std::isfinite(temperature) && temperature >= 0, "temperature must be finite and >= 0, got ", temperature);
  FK_CHECK(top_k >= 0, "top_k must be >= 0 (0 = off), got ", top_k);
  FK_CHECK(top_p > 0 && top_p <= 1, "top_p must be in (0, 1], got ", top_p);
  FK_CHECK(min_p >= 0 && min_p <= 1, "min_p must be in [0, 1], got ", min_p);
  FK_CHECK(max_tokens >= 1, "max_tokens must be >= 1, got ", max_tokens);
  FK_CHECK(min_tokens >= 0 && min_tokens <= max_tokens, "min_tokens must be in [0, max_tokens], got ", min_tokens);
  for (int64_t t : stop_token_ids) FK_CHECK(t >= 0, "stop_token_ids must be >= 0, got ", t);
  FK_CHECK(!logprobs || (*logprobs >= 0 && *logprobs <= ops::kMaxTopLogprobs), "logprobs must be in [0, ",
           ops::kMaxTopLogprobs, "], got ", logprobs.value_or(0));
  FK_CHECK(presence_penalty >= -2 && presence_penalty <= 2, "presence_penalty must be in [-2, 2], got ",
           presence_penalty);
  FK_CHECK(frequency_penalty >= -2 && frequency_penalty <= 2, "frequency_penalty must be in [-2, 2], got ",
           frequency_penalty);
  FK_CHECK(std::isfinite(repetition_penalty) && repetition_penalty > 0,
           "repetition_penalty must be finite and > 0, got ", repetition_penalty);
  for (const auto& [id, bias] : logit_bias)
    FK_CHECK(bias >= -100 && bias <= 100, "logit_bias of token ", id, " must be in [-100, 100], got ", bias);
  for (const auto& w : bad_words) FK_CHECK(!w.empty(), "bad_words must not contain an empty word");
}

void SamplingParams::validate_token_ids(int64_t vocab_size) const {
  auto check = [&](const char* field, int64_t id) {
    FK_CHECK(id >= 0 && id < vocab_size, field, " token id ", id, " is outside the vocabulary [0, ", vocab_size, ")");
  };
  for (const auto& [id, bias] : logit_bias) check("logit_bias", id);
  for (const auto& w : bad_words)
    for (int64_t id : w) check("bad_words", id);
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::none: break;
  }
  return "none";
}

}  // namespace fk::engine
