// The Batch pattern's one-shot runner for DLRM: samples in, click probabilities out. It packs
// the samples into the model's inputs (dense features rounded once to the model dtype in rows
// padded to 8 elements; every table's ids in one index array, table after table, with one
// offsets array: dlrm_model.h), runs one forward pass of the loaded model and takes each
// logit's sigmoid on the host, in double. No hashing: ids must already lie in their tables
// (the data pipeline applies max_ind_range). A batch larger than the model was loaded for is
// an error, as are a sample with the wrong number of dense features or tables and an id
// outside its table, each named.
#pragma once
#include <cstdint>
#include <vector>

#include "models/recsys/dlrm/dlrm_model.h"

namespace fk::models::recsys {

struct DlrmSample {
  std::vector<float> dense;                  // [dense_features]
  std::vector<std::vector<int64_t>> sparse;  // per table, the sample's ids (its bag; may be empty)
};

struct DlrmPrediction {
  float logit = 0;        // the model's output, as its dtype holds it
  float probability = 0;  // sigmoid(logit)
};

// A batch packed into the model's inputs on its device (the checks above done).
struct DlrmBatch {
  int64_t samples = 0;
  Tensor dense, indices, offsets;
  StepInputs inputs;
};
DlrmBatch dlrm_pack(const DlrmModel& model, const std::vector<DlrmSample>& samples);

// One forward pass over a packed batch on the model's stream; the logits come back to the
// host (which synchronises) and get their sigmoid there.
std::vector<DlrmPrediction> dlrm_run(DlrmModel& model, const DlrmBatch& batch);

// dlrm_run(dlrm_pack(samples)): one prediction per sample, in order.
std::vector<DlrmPrediction> dlrm_predict(DlrmModel& model, const std::vector<DlrmSample>& samples);

}  // namespace fk::models::recsys
