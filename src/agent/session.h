// Runs attempts for one task and strategy: the model call (replayed from the trajectory
// log when an interrupted run already made it with the same prompt), code extraction, the
// candidate file, compilation and evaluation (replayed likewise), feedback and reward.
// Parallel attempts share the run's limits on requests, compiles and evaluations in flight.
#pragma once
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "agent/attempt.h"
#include "agent/budget.h"
#include "agent/endpoint_client.h"
#include "agent/trajectory.h"
#include "harness/judge/eval_pipeline.h"

namespace fk::agent {

// At most n holders at once.
class Limiter {
 public:
  explicit Limiter(int n) : free_(n < 1 ? 1 : n) {}
  void acquire();
  void release();
  struct Hold {
    explicit Hold(Limiter& l) : l_(l) { l_.acquire(); }
    ~Hold() { l_.release(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Limiter& l_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

// What every task's session shares.
struct RunContext {
  const ChatClient* client = nullptr;
  Trajectory* log = nullptr;
  Budget* budget = nullptr;
  DeviceType backend = DeviceType::cuda;
  std::filesystem::path out_dir;
  // Compile + evaluate a candidate (the harness's evaluate_candidate in `fk agent`).
  std::function<bench::CandidateRun(const bench::Task&, const std::filesystem::path&)> evaluate;
  // Optional: compile ahead (fills the compile cache) so compiles run wider than evaluations.
  std::function<void(const std::filesystem::path&)> precompile;
  // Optional: a profiler summary of a passing candidate.
  std::function<std::string(const bench::Task&, const bench::CandidateRun&)> profile;
  // Optional: store a fresh evaluation (the results database).
  std::function<void(const bench::CandidateRun&)> store;
  std::function<void(const std::string&)> progress;  // one line per event (may be empty)
  Limiter* requests = nullptr;
  Limiter* compiles = nullptr;
  Limiter* evaluations = nullptr;
};

struct AttemptRequest {
  std::string step, kind;
  std::vector<std::string> parents;
  std::vector<ChatMessage> messages;
};

class TaskSession {
 public:
  TaskSession(RunContext& ctx, const bench::Task& task, std::string strategy, std::string contract);

  Attempt run(const AttemptRequest& request);
  // Each request on its own thread (bounded by the run's limiters); results in request order.
  std::vector<Attempt> run_parallel(const std::vector<AttemptRequest>& requests);

  // A per-task random seed, recorded in the log on first use so a resumed run draws the same.
  uint64_t seed(uint64_t wanted);

  const bench::Task& task() const { return task_; }
  const std::string& strategy() const { return strategy_; }
  const std::string& contract() const { return contract_; }
  DeviceType backend() const { return ctx_.backend; }
  Budget& budget() { return *ctx_.budget; }

 private:
  void say(const std::string& s) const;
  void evaluate(Attempt& a, const std::string& code_hash);
  RunContext& ctx_;
  const bench::Task& task_;
  std::string strategy_, contract_;
};

}  // namespace fk::agent
