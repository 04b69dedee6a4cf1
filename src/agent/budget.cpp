#include "agent/budget.h"

#include "fk/status.h"

namespace fk::agent {

Budget::Budget(int64_t max_tokens, double max_wall_s)
    : max_tokens_(max_tokens), max_wall_s_(max_wall_s), start_(std::chrono::steady_clock::now()) {}

double Budget::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Budget::exhausted() const {
  if (stop_requested_) return "interrupted";
  if (max_tokens_ > 0 && tokens_ >= max_tokens_)
    return concat("max_tokens: ", tokens_.load(), " of ", max_tokens_, " spent");
  if (max_wall_s_ > 0 && elapsed_s() >= max_wall_s_) return concat("max_wall_time: ", max_wall_s_, " s passed");
  return "";
}

}  // namespace fk::agent
