// Evolutionary search. Fitness is the reward (0 unless PASSED, then the speedup); among
// failing candidates the one that came closest ranks higher (see `better`), so mutation
// works on a candidate that compiles before one that does not. Survivors: the best
// `population` of parents and children ((mu + lambda), so the best is never lost).
#include <algorithm>
#include <random>

#include "agent/prompts.h"
#include "agent/strategy.h"
#include "fk/status.h"

namespace fk::agent {

namespace {

std::vector<Attempt> survivors(std::vector<Attempt> pool, int population) {
  std::erase_if(pool, [](const Attempt& a) { return !a.has_code(); });
  std::stable_sort(pool.begin(), pool.end(), better);
  if (pool.size() > static_cast<size_t>(population)) pool.resize(static_cast<size_t>(population));
  return pool;
}

// k draws with replacement; the best drawn wins (pool is sorted best first, so the lowest index).
const Attempt& tournament(const std::vector<const Attempt*>& pool, int k, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  size_t best = pick(rng);
  for (int i = 1; i < k; ++i) best = std::min(best, pick(rng));
  return *pool[best];
}

ParentView view(const Attempt& a) { return {a.step, a.code, a.feedback}; }

}  // namespace

StrategyResult run_evolve(TaskSession& s, const StrategyOptions& o) {
  FK_CHECK(o.population >= 1, "evolve needs --population >= 1, got ", o.population);
  FK_CHECK(o.generations >= 0, "evolve needs --generations >= 0, got ", o.generations);
  FK_CHECK(o.crossover_rate >= 0 && o.crossover_rate <= 1, "--crossover must be in [0, 1], got ", o.crossover_rate);
  FK_CHECK(o.tournament >= 1, "--tournament must be >= 1, got ", o.tournament);
  std::mt19937_64 rng(s.seed(o.seed));
  StrategyResult r;
  const auto first = initial_messages(s.contract(), s.backend());

  std::vector<AttemptRequest> reqs;
  for (int i = 0; i < o.population; ++i) reqs.push_back({concat("g0-", i), "sample", {}, first});
  std::vector<Attempt> batch = s.run_parallel(reqs);
  r.attempts = batch;
  std::vector<Attempt> population = survivors(batch, o.population);

  for (int g = 1; g <= o.generations && !should_stop(batch); ++g) {
    std::vector<const Attempt*> all, passing;
    for (const auto& a : population) {
      all.push_back(&a);
      if (a.passed()) passing.push_back(&a);
    }
    reqs.clear();
    for (int i = 0; i < o.population; ++i) {
      const std::string step = concat("g", g, "-", i);
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      if (all.empty()) {  // nothing compiled yet: sample afresh
        reqs.push_back({step, "sample", {}, first});
      } else if (u < o.crossover_rate && passing.size() >= 2) {
        const Attempt& a = *passing[0];
        const std::vector<const Attempt*> rest(passing.begin() + 1, passing.end());
        const Attempt& b = tournament(rest, o.tournament, rng);
        reqs.push_back({step, "crossover", {a.step, b.step}, crossover_messages(s.contract(), s.backend(), view(a), view(b))});
      } else {
        const Attempt& p = tournament(all, o.tournament, rng);
        reqs.push_back({step, "mutation", {p.step}, mutation_messages(s.contract(), s.backend(), view(p))});
      }
    }
    batch = s.run_parallel(reqs);
    r.attempts.insert(r.attempts.end(), batch.begin(), batch.end());
    std::vector<Attempt> pool = population;
    pool.insert(pool.end(), batch.begin(), batch.end());
    population = survivors(std::move(pool), o.population);
  }
  note_stop(r);
  return r;
}

}  // namespace fk::agent
