// Scores over a set of evaluated tasks: the fast_p curve (fraction of tasks whose
// candidate is correct and more than p times faster than the baseline) and geometric-mean
// speedups per level, per category and overall.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/judge/task.h"
#include "harness/judge/verdict.h"

namespace fk::bench {

struct TaskScore {
  std::string task, level, category;
  Verdict verdict = Verdict::RUNTIME_ERROR;
  double speedup = 0;   // call-weighted geometric mean over the task's workloads
  double sol = 0;       // fraction of speed of light reached (0 = unknown)
  bool correct() const { return verdict == Verdict::PASSED; }
};

inline const std::vector<double> kFastPThresholds = {0, 0.5, 0.8, 1, 1.2, 1.5, 2, 3};

// fast_p for each threshold p: (#tasks correct with speedup > p, or correct at p = 0) / #tasks.
std::vector<std::pair<double, double>> fast_p_curve(const std::vector<TaskScore>& scores,
                                                    const std::vector<double>& ps = kFastPThresholds);

struct Aggregate {
  int tasks = 0, correct = 0;
  double geomean_speedup = 0;  // over correct tasks (0 when none)
};
// The rule every score follows, given (correct, speedup) per task or run: all count in
// `tasks`; only correct ones count in `correct` and in the geometric mean. A failure is
// excluded from the mean, not averaged in as a speedup of 0 (which would zero it); fast_p
// is where failures cost.
Aggregate aggregate_of(const std::vector<std::pair<bool, double>>& correct_speedup);
// Keys: "overall", "level:L1", "category:dense-llm", ...
std::map<std::string, Aggregate> aggregate(const std::vector<TaskScore>& scores);

// Call-count-weighted geometric mean of (value, weight) pairs; 0 when empty.
double weighted_geomean(const std::vector<std::pair<double, double>>& value_weight);

TaskScore score_of(const Task& task, const EvalResult& r);
Json scores_to_json(const std::vector<TaskScore>& scores);

}  // namespace fk::bench
