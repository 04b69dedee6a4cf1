// The optional end-to-end reward: the best candidate of a task installed in the engine
// (harness/e2e/e2e_eval.h; the engine runs in worker processes), compared with the baseline
// engine run on the same workload: token agreement, logit drift, speedup and a verdict.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judge/task.h"

namespace fk::agent {

struct E2eOptions {
  std::string model;                    // empty: no end-to-end check
  std::string workload = "tiny";
  std::vector<std::string> extra_args;  // engine options of both sides' runs (--device cpu ...)
  double timeout_s = 3600;
  std::string fk_executable;            // the fk that runs the engine workers; empty: this executable
  std::filesystem::path results_db;     // where the run is stored; empty: not stored
};

// Runs the e2e evaluation with the candidate installed as the task's op; writes
// out_dir/e2e/<task>.json and returns {verdict, reason, report, seconds}.
nlohmann::json e2e_check(const E2eOptions& options, const bench::Task& task, const std::filesystem::path& candidate,
                         const std::filesystem::path& out_dir);

}  // namespace fk::agent
