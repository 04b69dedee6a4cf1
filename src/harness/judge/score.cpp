#include "harness/judge/score.h"

#include <cmath>

namespace fk::bench {

double weighted_geomean(const std::vector<std::pair<double, double>>& vw) {
  double ws = 0, ls = 0;
  for (auto [v, w] : vw) {
    if (v <= 0 || w <= 0) continue;
    ws += w;
    ls += w * std::log(v);
  }
  return ws > 0 ? std::exp(ls / ws) : 0;
}

std::vector<std::pair<double, double>> fast_p_curve(const std::vector<TaskScore>& scores,
                                                    const std::vector<double>& ps) {
  std::vector<std::pair<double, double>> out;
  for (double p : ps) {
    int n = 0;
    for (const auto& s : scores)
      if (s.correct() && (p == 0 || s.speedup > p)) ++n;
    out.emplace_back(p, scores.empty() ? 0.0 : static_cast<double>(n) / static_cast<double>(scores.size()));
  }
  return out;
}

Aggregate aggregate_of(const std::vector<std::pair<bool, double>>& correct_speedup) {
  Aggregate a;
  std::vector<std::pair<double, double>> vw;
  for (const auto& [correct, speedup] : correct_speedup) {
    ++a.tasks;
    if (!correct) continue;
    ++a.correct;
    vw.emplace_back(speedup, 1.0);
  }
  a.geomean_speedup = weighted_geomean(vw);
  return a;
}

std::map<std::string, Aggregate> aggregate(const std::vector<TaskScore>& scores) {
  std::map<std::string, std::vector<std::pair<bool, double>>> groups;
  for (const auto& s : scores)
    for (const std::string& key : {std::string("overall"), "level:" + s.level, "category:" + s.category})
      groups[key].emplace_back(s.correct(), s.speedup);
  std::map<std::string, Aggregate> out;
  for (const auto& [key, members] : groups) out[key] = aggregate_of(members);
  return out;
}

TaskScore score_of(const Task& task, const EvalResult& r) {
  TaskScore s;
  s.task = task.id;
  s.level = task.level;
  s.category = task.category;
  s.verdict = r.verdict;
  s.speedup = r.speedup;
  s.sol = r.sol_candidate;
  return s;
}

Json scores_to_json(const std::vector<TaskScore>& scores) {
  Json curve = Json::array();
  for (auto [p, f] : fast_p_curve(scores)) curve.push_back({{"p", p}, {"fast_p", f}});
  Json agg = Json::object();
  for (const auto& [k, a] : aggregate(scores))
    agg[k] = {{"tasks", a.tasks}, {"correct", a.correct}, {"geomean_speedup", a.geomean_speedup}};
  return {{"fast_p", curve}, {"aggregates", agg}};
}

}  // namespace fk::bench
