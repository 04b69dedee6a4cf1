// The in-worker evaluation of one candidate on one task: correctness rounds against the
// f64 oracle, CPU or GPU (fresh seeds + one secret seed, poisoned outputs, fingerprinted inputs, a bound
// relative to the baseline's own error, buffer reuse to catch pointer caching, outputs
// re-read after the call to catch work left running, a repeated call whose outputs, when
// they differ, are checked too), then baseline and candidate timed interleaved on fresh
// inputs for every call (fresh_inputs.h), each timed output checked against the
// baseline's on the same inputs (all of them, or a secret sample for large outputs:
// timed_check_sample.h) and the inputs fingerprinted around every timed call, then edge
// rounds on inputs a random draw never gives (edge_inputs.h). Runs in the worker process
// only: a candidate in the same process (the CUDA backend) may crash it; one in a runner
// (Implementation::remote) is reached through its arena.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/judge/task.h"
#include "harness/judge/verdict.h"

namespace fk::bench {

struct Implementation;
struct RemoteImplementation;

struct EvalConfig {
  DeviceType backend = DeviceType::cuda;
  std::vector<uint64_t> seeds;  // public seeds, one per round (>= 3)
  uint64_t secret_seed = 0;     // one more round, never revealed to the candidate
  int warmup_calls = 3;
  int min_timed_calls = 50;
  int max_timed_calls = 1000;
  double min_timed_ms = 100;    // per implementation: short kernels get more calls
  // The CPU f64 oracle's budgets. Above either, a workload is checked against the op's GPU
  // reference (CUDA backend, ops that have one: linear, paged attention, fused_experts),
  // else against the baseline's outputs (reference_choice.h). The memory-bound ops' task
  // workloads fit: the largest, silu_and_mul at 16384 x 14336, moves 1.4e9 bytes.
  double oracle_flop_budget = 4e9;
  double oracle_byte_budget = 2e9;
  double relative_error_factor = 1.5;  // candidate rel. L2 error <= this x baseline's (+ floor)
  bool time = true;
  // Called with each workload's failure as soon as it is decided (not serialised): the
  // worker streams them to its parent, so a crash or a hang after a cheat was caught keeps
  // the cheat's verdict.
  std::function<void(Verdict, const std::string&)> on_finding;
  // Called as each workload enters a phase, with "workload i/n (label): phase" (not
  // serialised): the worker passes it to its parent's progress line.
  std::function<void(const std::string&)> on_progress;
  // The baseline as the rounds and the timed calls use it (not serialised): null, the
  // registry's baseline in this process; the worker gives one in a runner process when the
  // candidate runs in one, so both sides' calls cost the same to reach.
  const Implementation* baseline = nullptr;
};

struct Implementation {
  fk_op_fn run = nullptr;
  fk_op_fn plan = nullptr;  // may be null
  // The functions its library defines, sorted (candidate.h: defined_functions): its own
  // kernels. Empty where not known (the baseline): then no kernel is reported as foreign.
  std::vector<std::string> own_functions;
  // The engine's own plan (the baseline evaluated as a candidate): it is given the
  // arguments as they are. A candidate's plan sees the plan inputs only (plan_guard.h).
  bool plan_sees_data = false;
  // Set: the implementation runs in a runner process (runner_process.h), `run` and `plan`
  // are unused, and each call's tensors are staged into its arena (case_staging.h).
  std::shared_ptr<RemoteImplementation> remote;
};

EvalResult evaluate(const Task& task, const Implementation& candidate, const EvalConfig& cfg);

}  // namespace fk::bench
