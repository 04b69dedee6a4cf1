// One engine run of an end-to-end evaluation, in its own (worker) process: optionally with
// candidate kernels installed into the op registry, serve every request of the workload
// (greedy, ignore-eos), time it, then a teacher-forced pass. The baseline run writes its
// teacher-forced logits (prefill and decode path) and every request's tokens; the candidate
// run recomputes the logits over the baseline's exact token sequences and compares, and
// measures each diverging request's first difference against the baseline's token (the
// "divergence" margin).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "harness/e2e/workload.h"
#include "serving/generate/engine.h"

namespace fk::e2e {

struct RunOptions {
  engine::EngineConfig engine;
  WorkloadSpec workload;
  std::vector<std::pair<std::string, std::filesystem::path>> installs;  // op -> candidate library
  std::filesystem::path teacher_out;  // baseline: write sequences + logits here
  std::filesystem::path teacher_in;   // candidate: read them from here and compare
};

// The run's result: outputs per request, timing, and (with teacher_in) the logit comparison
// {max_rel_err, mean_abs_err, mean_kl, positions}, the same of the decode path
// ("decode_forced") and the divergence {requests, diverged, max_margin, worst}.
nlohmann::json run_workload(const RunOptions& options);

// Max |a - b| over a row relative to the row's largest |a|, mean |a - b|, and KL(softmax(a) ||
// softmax(b)) in nats: how far logits `b` are from reference logits `a`.
struct LogitDistance {
  double max_rel_err = 0, mean_abs_err = 0, kl = 0;
};
LogitDistance logit_distance(const float* a, const float* b, int64_t n);

}  // namespace fk::e2e
