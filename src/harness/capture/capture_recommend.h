// Capture for the recommendation models (DLRM, a Batch-pattern model with its own runner):
// one forward pass over a batch of samples, every op call recorded as capture.h records an
// engine run. The workloads (also e2e_recommend_run.h's):
//   "tiny"   8 samples, bags of 3 ids (CPU tests)
//   "BxL"    B samples with bags of L >= 1 ids, e.g. "2048x1" (MLPerf's one-hot Criteo),
//            "16384x20" (DLRMv2's multi-hot bags hold 1 to 100)
// The samples (recommend_samples) are a fixed seed's: dense features in [0, 4) (MLPerf's
// log(1 + count) range), per table a bag of ids uniform in the table.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/capture/capture.h"
#include "models/recsys/dlrm/dlrm_predict.h"
#include "models/registry.h"

namespace fk::e2e {

struct RecommendWorkload {
  std::string name;
  int64_t samples = 8;
  int64_t bag_size = 3;
  nlohmann::json to_json() const { return {{"name", name}, {"samples", samples}, {"bag_size", bag_size}}; }
};

// Throws naming the workload when it is none of the forms above.
RecommendWorkload recommend_workload(const std::string& name);

// Whether `model` is a recommendation model these runs take (a DLRM config).
bool is_recommender(const models::ModelSource& model);

// The workload's samples for a model of config `c`, from `seed`.
std::vector<models::recsys::DlrmSample> recommend_samples(const RecommendWorkload& w,
                                                          const models::recsys::DlrmConfig& c, uint64_t seed);

struct RecommendCaptureOptions {
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::bf16;
  uint64_t seed = 0;  // dummy weights and the samples
};

// Loads the DLRM of `model` (a preset with dummy weights or a checkpoint folder) for the
// workload's batch and records one forward over the packed batch, after one unrecorded
// forward. Throws naming the model when it is no recommendation model.
CaptureResult capture_recommender(const models::ModelSource& model, const RecommendWorkload& workload,
                                  const RecommendCaptureOptions& options);

}  // namespace fk::e2e
