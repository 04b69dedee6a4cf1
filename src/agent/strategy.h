// The search strategies, each a loop over TaskSession::run with the benchmark's verdict
// as the reward (0 unless PASSED, then the speedup):
//   single      one sample of the first prompt;
//   best-of-n   n independent samples, requested, compiled and evaluated in parallel;
//   refine      one conversation: every turn carries the previous candidate's feedback,
//               the history trimmed to a character budget;
//   evolve      a population scored by the benchmark: generation 0 samples the first
//               prompt, later generations mutate tournament-chosen parents (their code and
//               feedback) or cross over two of the best (combine their ideas), and the
//               best `population` of parents and children survive.
// Step ids are deterministic ("s3", "t2", "g1-0"), so a resumed run replays the log.
#pragma once
#include <string>
#include <vector>

#include "agent/session.h"

namespace fk::agent {

struct StrategyOptions {
  int samples = 4;                // best-of-n
  int turns = 4;                  // refine
  int population = 4;             // evolve
  int generations = 3;            // evolve, after generation 0
  double crossover_rate = 0.3;    // evolve: share of children made by crossover (when two parents pass)
  int tournament = 2;             // evolve: candidates per tournament
  size_t history_chars = 200000;  // refine: prompt budget (0: unlimited)
  uint64_t seed = 0;              // evolve: parent selection (recorded per task, reused on resume)
};

struct StrategyResult {
  std::vector<Attempt> attempts;
  std::string stop_reason = "completed";  // or the budget that ran out, or the endpoint's refusal
};

StrategyResult run_single(TaskSession& s);
StrategyResult run_best_of_n(TaskSession& s, int n);
StrategyResult run_refine(TaskSession& s, int turns, size_t history_chars);
StrategyResult run_evolve(TaskSession& s, const StrategyOptions& o);
// By name: "single", "best-of-n", "refine", "evolve" (throws fk::Error naming the known ones).
StrategyResult run_strategy(TaskSession& s, const std::string& name, const StrategyOptions& o);
const std::vector<std::string>& strategy_names();

// The passing attempt with the highest speedup (the earliest on ties); null when none passed.
const Attempt* best_attempt(const std::vector<Attempt>& attempts);
// Fills result.stop_reason from the first attempt that stopped (budget or refusal).
void note_stop(StrategyResult& result);
// True when the loop should start nothing more (a budget spent or the endpoint refused).
bool should_stop(const std::vector<Attempt>& batch);

}  // namespace fk::agent
