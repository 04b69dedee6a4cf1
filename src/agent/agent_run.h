// `fk agent`: runs a strategy on each selected task against a chat endpoint and keeps
// the records. In the output folder:
//   trajectory.jsonl             every model call (prompt, response, extracted code path,
//                                token usage, durations) and every evaluation (verdict,
//                                message, timings, speedup, feedback), one JSON per line;
//                                read back on a rerun, which resumes where it stopped
//   candidates/<task>/<step>.cu  every extracted candidate (.cpp on the CPU backend)
//   best/<task>.cu               the fastest passing candidate per task: a folder that
//                                `fk kernels eval --dir` and `fk e2e eval --candidates`
//                                accept (task ids are op names)
//   e2e/<task>.json              the optional end-to-end check of the best candidate
//   summary.json                 budgets, stop reasons, attempts, bests, tokens, scores
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/e2e_check.h"
#include "agent/endpoint_client.h"
#include "agent/profiler.h"
#include "agent/strategy.h"
#include "harness/judge/eval_pipeline.h"

namespace fk::agent {

struct AgentOptions {
  std::vector<bench::Task> tasks;
  std::string strategy = "single";
  StrategyOptions strategy_options;
  EndpointOptions endpoint;
  std::filesystem::path out_dir = "agent-out";
  bench::PipelineOptions pipeline;  // backend, rounds, timed calls, timeouts, compile cache
  int concurrency = 4;              // model requests in flight
  int compile_jobs = 2;             // candidate compiles at once
  int eval_jobs = 1;                // evaluations at once (one GPU: 1 keeps timings clean)
  int64_t max_tokens = 0;           // prompt + completion over the run (0: no limit)
  double max_wall_s = 0;            // this invocation's wall time (0: no limit)
  bool measure_baseline = true;     // time the baseline first: its times go into the prompt
  ProfileOptions profile;
  E2eOptions e2e;
  std::filesystem::path results_db;  // empty: no results database
  std::string command;               // how the run was invoked (recorded in the summary)
  std::function<void(const std::string&)> progress;
};

// Runs everything; writes and returns the summary.
nlohmann::json run_agent(const AgentOptions& options);

}  // namespace fk::agent
