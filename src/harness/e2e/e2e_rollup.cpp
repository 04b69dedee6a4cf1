#include "harness/e2e/e2e_rollup.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "harness/judge/html.h"
#include "harness/judge/score.h"
#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

std::vector<E2eRecord> latest_per_key(const std::vector<E2eRecord>& runs) {
  std::map<std::tuple<std::string, std::string, std::string>, const E2eRecord*> latest;
  for (const E2eRecord& r : runs) {
    const E2eRecord*& slot = latest[{r.model, r.workload, r.candidate_set()}];
    if (!slot || r.id > slot->id) slot = &r;  // ids grow with insertion: the larger is the newer
  }
  std::vector<E2eRecord> out;
  for (const auto& [key, r] : latest) out.push_back(*r);
  return out;
}

RunSelection select_runs(E2eStore& store, const std::string& model, const std::string& batch) {
  const std::string db = store.path().string();
  RunSelection sel;
  if (batch.empty()) {
    sel.runs = latest_per_key(store.list(model));
    sel.description = "the latest run of every model x workload x candidate set";
  } else {
    sel.runs = store.batch(batch);
    FK_CHECK(!sel.runs.empty() || store.models().empty(), "no end-to-end runs of batch '", batch, "' in ", db);
    std::erase_if(sel.runs, [&](const E2eRecord& r) { return !model.empty() && r.model != model; });
    sel.description = "every run of batch " + batch;
  }
  if (!model.empty()) sel.description += ", model " + model;
  if (sel.runs.empty()) {
    const auto models = store.models();
    FK_CHECK(!models.empty(), "no end-to-end runs in ", db, " (fk e2e eval stores them)");
    std::string known;
    for (const auto& m : models) known += (known.empty() ? "" : ", ") + m;
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "no end-to-end runs of model '", model, "' in ", db, " (models stored: ", known,
            ")");
  }
  return sel;
}

json rollup(const std::vector<E2eRecord>& runs) {
  FK_CHECK(!runs.empty(), "e2e roll-up: no runs to score");
  struct Members {
    std::vector<std::pair<bool, double>> throughput, latency;
    std::map<std::string, int> failures;
  };
  std::map<std::string, Members> groups;
  for (const E2eRecord& r : runs)
    for (const std::string& key : {std::string("overall"), "category:" + r.category, "model:" + r.model}) {
      Members& m = groups[key];
      m.throughput.emplace_back(r.passed(), r.throughput_speedup.value_or(0));
      m.latency.emplace_back(r.passed(), r.latency_speedup.value_or(0));
      if (!r.passed()) ++m.failures[r.verdict];
    }
  json out = {{"rule",
               "geometric means over PASSED runs; a run with another verdict counts in runs and failures and is "
               "left out of the means (as the op-level geomean leaves out incorrect tasks)"},
              {"groups", json::object()},
              {"runs", json::array()}};
  for (const auto& [key, m] : groups) {
    const bench::Aggregate tp = bench::aggregate_of(m.throughput), lat = bench::aggregate_of(m.latency);
    out["groups"][key] = {{"runs", tp.tasks},
                          {"passed", tp.correct},
                          {"failures", m.failures},
                          {"geomean_throughput_speedup", tp.geomean_speedup},
                          {"geomean_latency_speedup", lat.geomean_speedup}};
  }
  for (const E2eRecord& r : runs) out["runs"].push_back(to_json(r));
  return out;
}

namespace {

std::string speedup_or_dash(const json& v) {
  return v.is_number() && v.get<double>() > 0 ? bench::format_fixed(v.get<double>()) : "-";
}

std::string failures_text(const json& failures) {
  std::string s;
  for (const auto& [verdict, n] : failures.items()) s += (s.empty() ? "" : ", ") + verdict + " " + n.dump();
  return s.empty() ? "-" : s;
}

}  // namespace

std::string rollup_text(const json& r) {
  std::ostringstream s;
  char line[512];
  size_t width = 24;  // the group column fits the longest key (a checkpoint path can be long)
  for (const auto& [key, g] : r["groups"].items()) width = std::max(width, key.size());
  auto padded = [&](const std::string& key) { return key + std::string(width - key.size(), ' '); };
  s << padded("group");
  std::snprintf(line, sizeof line, " %5s %7s %11s %9s  %s\n", "runs", "passed", "throughput", "latency", "failures");
  s << line;
  auto group_line = [&](const std::string& key, const json& g) {
    std::snprintf(line, sizeof line, " %5d %7d %11s %9s  ", g["runs"].get<int>(), g["passed"].get<int>(),
                  speedup_or_dash(g["geomean_throughput_speedup"]).c_str(),
                  speedup_or_dash(g["geomean_latency_speedup"]).c_str());
    s << padded(key) << line << failures_text(g["failures"]) << "\n";
  };
  group_line("overall", r["groups"]["overall"]);
  for (const auto& [key, g] : r["groups"].items())
    if (key != "overall") group_line(key, g);
  s << "(" << r["rule"].get<std::string>() << ")\n\n";
  std::snprintf(line, sizeof line, "%-6s %-21s %-14s %-12s %-24s %11s %9s %7s  %s\n", "id", "created", "verdict",
                "workload", "candidates", "throughput", "latency", "match", "model");
  s << line;
  for (const json& run : r["runs"]) {
    const json& m = run["exact_match_rate"];
    std::snprintf(line, sizeof line, "%-6lld %-21s %-14s %-12s %-24s %11s %9s %7s  ",
                  static_cast<long long>(run["id"].get<int64_t>()), run["created"].get<std::string>().c_str(),
                  run["verdict"].get<std::string>().c_str(), run["workload"].get<std::string>().c_str(),
                  run["candidate_set"].get<std::string>().c_str(), speedup_or_dash(run["throughput_speedup"]).c_str(),
                  speedup_or_dash(run["latency_speedup"]).c_str(),
                  m.is_number() ? bench::format_fixed(m.get<double>(), 2).c_str() : "-");
    s << line << run["model"].get<std::string>() << "\n";
  }
  return s.str();
}

}  // namespace fk::e2e
