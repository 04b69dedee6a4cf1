// From candidate source to verdict: compile with the engine's toolchain, evaluate in a
// worker process, score. What `fk kernels eval` runs.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "harness/sandbox/compile.h"
#include "harness/judge/score.h"
#include "harness/sandbox/worker.h"

namespace fk::bench {

struct PipelineOptions {
  DeviceType backend = DeviceType::cuda;
  int rounds = 3;                 // public rounds (>= 3), plus one secret round
  double worker_timeout_s = 600;
  CompileOptions compile;
  EvalConfig eval;                // seeds are filled in per run
  std::function<void(const std::string&)> progress;  // one line per step (may be null)
  // The worker's workload and phase as they change, for a progress line (may be null).
  std::function<void(const std::string&)> worker_progress;
};

struct CandidateRun {
  std::string task;
  std::filesystem::path candidate;  // "baseline" for the baseline against itself
  CompileResult compile;
  EvalResult result;
};

// Fresh random seeds (std::random_device).
uint64_t fresh_seed();

CandidateRun evaluate_candidate(const Task& task, const std::filesystem::path& candidate, const PipelineOptions& opts);

// Pairs each candidate in a folder with its task by name: <dir>/<task-id>.cu|.cpp or a
// folder <dir>/<task-id>/. Unknown names are an error naming the file.
std::vector<std::pair<Task, std::filesystem::path>> match_candidates(const std::vector<Task>& tasks,
                                                                     const std::filesystem::path& dir);

Json run_to_json(const CandidateRun& run);

}  // namespace fk::bench
