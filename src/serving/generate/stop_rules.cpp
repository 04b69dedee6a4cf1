#include "serving/generate/stop_rules.h"

#include <algorithm>

namespace fk::engine {

namespace {
bool contains(const std::vector<int64_t>& ids, int64_t token) {
  return std::find(ids.begin(), ids.end(), token) != ids.end();
}
}  // namespace

FinishReason stop_reason(const Request& r) {
  if (r.output_tokens.empty()) return FinishReason::none;
  const auto num_outputs = static_cast<int64_t>(r.output_tokens.size());
  const int64_t last = r.output_tokens.back();
  if (num_outputs >= r.params.min_tokens) {
    if (!r.params.ignore_eos && contains(r.eos_token_ids, last)) return FinishReason::stop;
    if (contains(r.params.stop_token_ids, last)) return FinishReason::stop;
  }
  if (num_outputs >= r.params.max_tokens) return FinishReason::length;
  if (r.max_model_len > 0 && r.known_tokens() >= r.max_model_len) return FinishReason::length;
  return FinishReason::none;
}

}  // namespace fk::engine
