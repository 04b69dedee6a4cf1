#include "agent/strategy.h"

#include "agent/prompts.h"
#include "fk/status.h"

namespace fk::agent {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"single", "best-of-n", "refine", "evolve"};
  return names;
}

StrategyResult run_strategy(TaskSession& s, const std::string& name, const StrategyOptions& o) {
  if (name == "single") return run_single(s);
  if (name == "best-of-n") return run_best_of_n(s, o.samples);
  if (name == "refine") return run_refine(s, o.turns, o.history_chars);
  if (name == "evolve") return run_evolve(s, o);
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown strategy '", name, "' (single, best-of-n, refine, evolve)");
}

const Attempt* best_attempt(const std::vector<Attempt>& attempts) {
  const Attempt* best = nullptr;
  for (const auto& a : attempts)
    if (a.passed() && (!best || a.speedup > best->speedup)) best = &a;
  return best;
}

bool should_stop(const std::vector<Attempt>& batch) {
  for (const auto& a : batch)
    if (a.outcome == Outcome::not_run || a.fatal) return true;
  return false;
}

void note_stop(StrategyResult& r) {
  for (const auto& a : r.attempts)
    if (!a.stop_reason.empty()) {
      r.stop_reason = a.stop_reason;
      return;
    }
}

StrategyResult run_single(TaskSession& s) {
  StrategyResult r;
  r.attempts.push_back(s.run({"s0", "sample", {}, initial_messages(s.contract(), s.backend())}));
  note_stop(r);
  return r;
}

StrategyResult run_best_of_n(TaskSession& s, int n) {
  FK_CHECK(n >= 1, "best-of-n needs --samples >= 1, got ", n);
  std::vector<AttemptRequest> reqs;
  const auto messages = initial_messages(s.contract(), s.backend());
  for (int i = 0; i < n; ++i) reqs.push_back({concat("s", i), "sample", {}, messages});
  StrategyResult r;
  r.attempts = s.run_parallel(reqs);
  note_stop(r);
  return r;
}

}  // namespace fk::agent
