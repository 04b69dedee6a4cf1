// One run of an end-to-end evaluation of a Batch-pattern text encoder (BGE-M3), in its own
// worker process, as e2e_run.h is for Generate models: optionally with candidate kernels
// installed, embed the workload's batch (capture_batch.h's workloads: "tiny", "BxL",
// "mixed") a few times and time it; the baseline run writes its last hidden states, dense
// vectors and head outputs, the candidate run compares its own with them:
//   max_rel_err   per token row, max |a - b| over the row's largest |a| (the worst row)
//   mean_abs_err  mean |a - b| over every element
//   min_cosine    the smallest cosine between the two runs' dense vectors
//   sparse_max_rel_err, colbert_min_cosine  the same for BGE-M3's heads, where the model
//                 has them: the per-token sparse weights (against the largest) and the
//                 ColBERT vectors
// The result's fields match run_workload's where they mean the same ("elapsed_s",
// "backend", "installed", "outputs": a checksum of the hidden states per sequence, which
// the repeat runs compare for reproducibility).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor_view.h"

namespace fk::e2e {

struct BatchRunOptions {
  std::string model;  // a preset or checkpoint folder of a text encoder
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::f16;
  std::string workload = "tiny";
  int iters = 3;  // timed embed calls after one warm-up (elapsed_s: their median)
  std::vector<std::pair<std::string, std::filesystem::path>> installs;  // op -> candidate library
  std::filesystem::path teacher_out, teacher_in;
};

nlohmann::json run_batch_workload(const BatchRunOptions& options);

// Whether `model` is run by the Batch pattern (its registration says so).
bool is_batch_model(const std::string& model);

}  // namespace fk::e2e
