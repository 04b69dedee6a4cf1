// The run's shared budgets: tokens (prompt + completion, over every model call, including
// calls replayed from the log of an interrupted run), wall time (of this invocation) and a
// stop request (SIGINT/SIGTERM). Checked before each model call; calls in flight finish, so
// the token budget can be overshot by at most the calls running at once.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace fk::agent {

class Budget {
 public:
  Budget(int64_t max_tokens, double max_wall_s);  // 0: no limit

  void add_tokens(int64_t n) { tokens_ += n; }
  int64_t tokens() const { return tokens_; }
  double elapsed_s() const;
  // Why no new model call may start ("max_tokens: 1200 of 1000 spent", "max_wall_time: ...",
  // "interrupted"), or "" while the budget lasts.
  std::string exhausted() const;

  // Asks every running budget to stop (async-signal-safe).
  static void request_stop() { stop_requested_ = true; }
  static void clear_stop() { stop_requested_ = false; }

 private:
  int64_t max_tokens_;
  double max_wall_s_;
  std::atomic<int64_t> tokens_{0};
  std::chrono::steady_clock::time_point start_;
  static inline std::atomic<bool> stop_requested_{false};
};

}  // namespace fk::agent
