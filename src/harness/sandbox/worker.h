// Each evaluation runs in a worker process (`fk kernels worker`) with its own CUDA
// context and a wall-clock limit: a crash, hang, illegal memory access or out-of-memory
// becomes a verdict, and the harness goes on with the next candidate. On the CPU backend the
// worker loads no candidate code: the candidate and the baseline run in runner processes of
// their own (runner_process.h), and the worker judges them from outside.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

#include "harness/judge/evaluate.h"

namespace fk::bench {

struct WorkerRequest {
  Task task;
  std::filesystem::path library;  // empty or "baseline": evaluate the baseline against itself
  EvalConfig config;
};

// Parent side: runs the request in a fresh worker process, limited to timeout_s.
// on_progress (may be empty) hears the worker's current workload and phase as it changes
// ("workload i/n (label): phase", EvalConfig::on_progress), polled while the worker runs.
EvalResult run_in_worker(const WorkerRequest& req, double timeout_s,
                         const std::function<void(const std::string&)>& on_progress = {});

// Child side: reads the request file, evaluates, writes the result file. Returns the
// process exit code.
int worker_main(const std::filesystem::path& request_file, const std::filesystem::path& result_file);

Json request_to_json(const WorkerRequest& r);
WorkerRequest request_from_json(const Json& j);

}  // namespace fk::bench
