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
