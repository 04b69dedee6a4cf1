// A short profiler summary of a candidate's kernels for the model's feedback: where Nsight
// Compute (ncu) is on PATH and the backend is CUDA, the worker evaluates the candidate once
// more (correctness rounds only) under ncu with a small metric set, and the candidate's own
// kernels (matched by their mangled names against the library's symbols) are summarised:
// duration, launch shape, registers, occupancy, SM and memory throughput. Otherwise the
// summary says why there is none.
#pragma once
#include <filesystem>
#include <set>
#include <string>

#include "harness/judge/eval_pipeline.h"

namespace fk::agent {

struct ProfileOptions {
  bool enabled = true;
  double timeout_s = 300;
  std::string ncu = "ncu";         // name or path
  std::string fk_executable;       // runs the worker; empty: this executable
};

// The summary line(s) for the model, or why there is no profile ("unavailable: ...").
std::string profile_candidate(const bench::Task& task, const bench::CandidateRun& run, DeviceType backend,
                              const ProfileOptions& options);

// The full path of an executable found on PATH (or the path itself if it has a slash and
// is executable); empty when there is none.
std::string find_executable(const std::string& name);

// Summarises ncu's raw CSV page (--csv --page raw --print-kernel-base mangled): kernels
// whose mangled name is in `candidate_symbols` (all kernels when it is empty), at most
// `max_kernels`, the longest first.
std::string summarize_ncu_csv(const std::string& csv, const std::set<std::string>& candidate_symbols,
                              size_t max_kernels = 3);

// The ncu metrics asked for.
const std::vector<std::string>& profiler_metrics();

}  // namespace fk::agent
