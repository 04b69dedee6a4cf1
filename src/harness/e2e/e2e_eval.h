// An end-to-end evaluation as a library call (what `fk e2e eval` and the agent's e2e reward
// run): compile every candidate of a folder (<op>.cu / <op>.cpp / <op>/), run the workload
// in separate worker processes (`fk e2e run`) — the baseline, then with every candidate
// installed, in pairs of alternating order — compare them (e2e_compare.h) and optionally
// store the run (e2e_store.h). The engine runs in workers so that a candidate that crashes
// or corrupts memory takes down its own run, not the evaluation.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fk::e2e {

struct E2eEvalOptions {
  std::string model;                     // as the engine takes it (--model): names the run and its category
  std::string backend;                   // "cpu" or "cuda", recorded with the run; empty: the runs' own
  std::vector<std::string> engine_args;  // the engine options both sides' runs take, --model included
  std::string workload = "tiny";
  std::filesystem::path candidates;      // the folder of candidates
  double timeout_s = 1800;               // per engine run
  int repeats = 3;                       // engine runs per side (the timings are their medians)
  std::string tasks_dir;                 // where the candidates' task levels are read; empty: the default
  std::optional<std::filesystem::path> db;  // the results database to store the run in; none: not stored
  std::string batch;                     // the run's batch id in the store; empty: a new one
  std::string command;                   // the invocation, recorded with the run
  std::string worker_executable;         // the `fk` that runs `e2e run`; empty: this executable
};

// The folder's candidates by op name; throws naming a file whose stem is no op, or an
// empty folder.
std::vector<std::pair<std::string, std::filesystem::path>> find_candidates(const std::filesystem::path& dir);

// Runs the evaluation and returns its report: model, category, workload, backend, variants,
// candidates (with their task levels and compile results), verdict, reason, comparison and,
// when stored, {db, batch, id}. Bad options (no such folder, an unknown op) throw before
// any run; a failing baseline run throws too (the evaluation says nothing then); a failing
// candidate run is a verdict (COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, INCORRECT).
nlohmann::json evaluate_in_engine(const E2eEvalOptions& options);

}  // namespace fk::e2e
