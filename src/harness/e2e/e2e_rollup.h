// End-to-end scores over stored runs: per model, per category and overall, the geometric
// means of the throughput and latency speedups with counts of runs and of failures by
// verdict. Failures follow the op-level rule (bench::aggregate_of): a run that did not pass
// counts in `runs` and in its verdict's count but is left out of the means, not averaged in
// as a speedup of 0.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/e2e/e2e_store.h"

namespace fk::e2e {

// The latest run of every model × workload × candidate set (runs in any order): a re-run
// replaces the earlier one, so the roll-up scores what each candidate set does now.
std::vector<E2eRecord> latest_per_key(const std::vector<E2eRecord>& runs);

struct RunSelection {
  std::vector<E2eRecord> runs;
  std::string description;  // which runs, in words, for the report's header
};
// The stored runs a roll-up covers: every run of `batch`, or (batch "") the latest per
// model × workload × candidate set; only those of `model` (a model_id) unless it is "".
// Throws naming what was asked for when nothing matches (and the models stored).
RunSelection select_runs(E2eStore& store, const std::string& model, const std::string& batch);

// {"rule", "groups": {"overall" | "category:C" | "model:M": {runs, passed, failures: {verdict:
// count}, geomean_throughput_speedup, geomean_latency_speedup}}, "runs": [to_json(run)...]}.
// Throws when `runs` is empty (there is nothing to score).
nlohmann::json rollup(const std::vector<E2eRecord>& runs);

// The roll-up as plain text: the groups (overall first), then one line per run.
std::string rollup_text(const nlohmann::json& rollup);

}  // namespace fk::e2e
