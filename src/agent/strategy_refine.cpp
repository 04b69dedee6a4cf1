// Iterative refinement: one conversation; each turn sends the history (trimmed to the
// character budget: the contract and the latest turns stay) and appends the answer and
// the harness's feedback on it. A failed model call adds nothing to the history, so the
// next turn asks again.
#include "agent/prompts.h"
#include "agent/strategy.h"
#include "fk/status.h"

namespace fk::agent {

StrategyResult run_refine(TaskSession& s, int turns, size_t history_chars) {
  FK_CHECK(turns >= 1, "refine needs --turns >= 1, got ", turns);
  StrategyResult r;
  std::vector<ChatMessage> history = initial_messages(s.contract(), s.backend());
  for (int t = 0; t < turns; ++t) {
    const Attempt a = s.run({concat("t", t), t == 0 ? "sample" : "refine", {}, trim_history(history, history_chars)});
    r.attempts.push_back(a);
    if (should_stop({a})) break;
    if (a.outcome == Outcome::endpoint_error) continue;
    history.push_back({"assistant", a.response});
    history.push_back({"user", refine_turn(a.step, a.feedback)});
  }
  note_stop(r);
  return r;
}

}  // namespace fk::agent
