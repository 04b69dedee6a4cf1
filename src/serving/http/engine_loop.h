// Runs an Engine on its own thread for a server: HTTP threads submit requests and read their
// tokens from per-request streams; the loop thread owns the engine (which is not
// thread-safe), adds submitted requests between steps, applies aborts (a client that went
// away frees its request and KV blocks) and steps while anything is unfinished.
#pragma once
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "serving/generate/engine.h"

namespace fk::serve {

// What one request produced so far; filled by the loop thread, read by its HTTP thread.
class TokenStream {
 public:
  // Blocks until new tokens arrived or the request finished; moves the new tokens into
  // `out` (and their logprobs into `logprobs`, when given and the request asked for them).
  // Returns false once the request is finished and every token was taken.
  bool wait_next(std::vector<int64_t>& out, std::vector<engine::TokenLogprobs>* logprobs = nullptr);
  // Waits at most `timeout` for new tokens or the finish: true when wait_next would not block.
  bool wait_ready(std::chrono::milliseconds timeout) const;
  engine::FinishReason finish_reason() const;
  std::string error() const;  // set when the request failed inside the engine
  int64_t num_cached_tokens() const;

  void push(int64_t token, const std::optional<engine::TokenLogprobs>& logprobs = {});  // loop thread
  void finish(engine::FinishReason why, int64_t cached, std::string error = {});  // loop thread

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<int64_t> pending_;
  std::vector<engine::TokenLogprobs> pending_logprobs_;  // beside pending_, for requests that asked
  bool finished_ = false;
  engine::FinishReason reason_ = engine::FinishReason::none;
  std::string error_;
  int64_t cached_ = 0;
};

struct LoopStats {
  int64_t running = 0;  // submitted and not finished
  int64_t queued = 0;   // submitted, not yet handed to the engine
  int64_t requests_finished = 0;
  // Finished requests by why they finished (stop, length, abort), indexed by FinishReason.
  std::array<int64_t, 4> finished_by_reason{};
  int64_t prompt_tokens = 0, generation_tokens = 0;
  double kv_usage = 0;  // fraction of KV pages in use (0 when unknown)
  // Where the loop thread's time goes (seconds since start): inside the engine's steps
  // (with the engine's own split of it), and between steps on the loop's own work (adding
  // submissions, applying aborts, handing tokens to the streams). Waiting for work while
  // idle is in neither.
  engine::EngineStats engine;
  double step_s = 0, loop_work_s = 0;
};

class EngineLoop {
 public:
  explicit EngineLoop(std::unique_ptr<engine::Engine> engine);
  ~EngineLoop();  // stops the thread; unfinished requests end with reason abort

  // Queues a request (validated here, on the caller's thread, so bad input is the caller's
  // error and never reaches the loop). Throws fk::Error naming the problem. `images`: the
  // request's own (models that read images), checked against the prompt when it is added.
  std::shared_ptr<TokenStream> submit(const std::string& id, std::vector<int64_t> prompt,
                                      const engine::SamplingParams& params,
                                      std::shared_ptr<engine::RequestImages> images = nullptr);
  // Ends a request early: its client went away, or (`counted_as` stop) a stop string ended
  // its text. `counted_as` is the finish reason the metrics count it under.
  void abort(const std::string& id, engine::FinishReason counted_as = engine::FinishReason::abort);
  // Shutting down: later submissions are refused, and every request in the loop (queued or
  // running) is aborted, its stream finishing with `reason` as its error. Returns how many
  // requests that ends.
  int64_t abort_all(const std::string& reason);
  // Stops taking submissions (they throw naming the shutdown) and lets the loop finish what
  // it holds; abort_all() ends the rest.
  void begin_shutdown();
  bool shutting_down() const;
  // Why the loop stopped serving (the engine threw, e.g. a device fault); "" while healthy.
  // submit() then throws at once instead of queueing work nobody would run.
  std::string failure() const;
  const engine::Engine& engine() const { return *engine_; }
  // Tokens of K/V the whole cache holds: one sequence can never grow past it.
  int64_t kv_capacity_tokens() const { return kv_capacity_tokens_; }
  LoopStats stats() const;

 private:
  void run();

  std::unique_ptr<engine::Engine> engine_;
  int64_t kv_capacity_tokens_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Submission {
    std::string id;
    std::vector<int64_t> prompt;
    engine::SamplingParams params;
    std::shared_ptr<TokenStream> stream;
    std::shared_ptr<engine::RequestImages> images;
  };
  std::deque<Submission> queue_;
  std::vector<std::pair<std::string, engine::FinishReason>> aborts_;
  std::map<std::string, engine::FinishReason> counted_as_;  // loop thread only: early ends not counted as abort
  bool shutting_down_ = false;
  std::string abort_all_reason_;  // set by abort_all(): the loop thread ends every request
  std::map<std::string, std::shared_ptr<TokenStream>> live_;  // loop thread only
  LoopStats stats_;
  bool stop_ = false;
  std::string failure_;
  std::thread thread_;
};

}  // namespace fk::serve
