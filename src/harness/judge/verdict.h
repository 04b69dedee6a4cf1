// Verdicts and per-evaluation results of the harness, with their JSON form (the worker
// hands them to the parent process as JSON; the store and reports read the same JSON).
#pragma once
#include <string>
#include <vector>

#include "fk/op_registry.h"

namespace fk::bench {

// HARNESS_ERROR: the harness itself failed (e.g. its reference ran out of device memory);
// the candidate was not judged, and the result says nothing about it.
enum class Verdict { PASSED, COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, INCORRECT, REWARD_HACK, HARNESS_ERROR };
std::string verdict_name(Verdict v);
Verdict verdict_from_name(const std::string& s);
// The verdict that explains more: a cheat outranks a crash outranks a wrong answer.
Verdict worse_verdict(Verdict a, Verdict b);

struct TimingStats {
  int samples = 0;
  double median_us = 0, p10_us = 0, p90_us = 0, min_us = 0;
  // Calls that waited for a processor for a tenth of their time or more (a busy machine):
  // that wait is not in their time.
  int descheduled = 0;
};

struct WorkloadResult {
  Json shape;
  double calls = 1;
  std::string label;
  bool timed = true;              // false: a check-only workload
  bool correct = false;
  std::string message;            // why not correct
  std::string reference;          // "oracle" (f64 CPU), "gpu_oracle" (the op's f64 GPU reference, for
                                  // workloads too large for the CPU) or "baseline" (neither available)
  double candidate_rel_l2 = 0;    // worst over rounds, against the reference
  double baseline_rel_l2 = 0;
  double max_abs_err = 0;
  bool deterministic = true;
  TimingStats baseline, candidate;
  double speedup = 0;             // baseline median / candidate median
  double sol_baseline = 0, sol_candidate = 0;  // fraction of speed of light (0 = unknown)
  // Kernels that ran in the candidate's timed calls but are not defined in its library (a
  // library's or the engine's; kernel_ownership.h): reported, and failing where the task
  // forbids libraries.
  std::vector<std::string> foreign_kernels;
  // Where the evaluation's time went: inputs and oracle (all rounds, in parallel), the
  // correctness rounds on the device, and the interleaved timing.
  double seconds_prepare = 0, seconds_check = 0, seconds_timing = 0;
};

struct EvalResult {
  std::string task;
  Verdict verdict = Verdict::RUNTIME_ERROR;
  std::string message;
  std::vector<WorkloadResult> workloads;
  double speedup = 0;             // call-weighted geometric mean over timed workloads (0 unless PASSED)
  double sol_candidate = 0;       // call-weighted mean fraction of speed of light
  std::vector<uint64_t> seeds;    // public seeds of the rounds
  uint64_t secret_seed = 0;       // recorded for reproduction; never shown to the candidate
  std::string backend;
  std::string device;
  std::string toolchain;
  std::string candidate_hash;
  // What the worker ran in: "namespaces+seccomp", "seccomp only: <reason>" or
  // "none: <reason>" (harness/sandbox/sandbox.h); "" for results from before the sandbox.
  std::string sandbox;
  double seconds = 0;
};

Json to_json(const TimingStats& t);
Json to_json(const WorkloadResult& w);
Json to_json(const EvalResult& r);
EvalResult eval_result_from_json(const Json& j);

}  // namespace fk::bench
