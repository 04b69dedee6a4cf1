// Capture for the Batch pattern's text encoders (BGE-M3 and the other XLM-R models): one
// embed_batch pass over a batch of token sequences, recorded op by op as capture.h records
// an engine run. The workloads are batch shapes, not requests:
//   "tiny"     4 sequences of 16 tokens (CPU tests)
//   "BxL"      B sequences of L tokens each, e.g. "32x512" (a retrieval indexing batch)
//   "mixed"    32 sequences of 16..512 tokens, uniform, fixed seed (queries and passages)
// Every sequence is CLS, random ids, EOS.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/capture/capture.h"
#include "models/encoder/xlm_roberta_config.h"
#include "models/registry.h"

namespace fk::e2e {

struct BatchWorkload {
  std::string name;
  std::vector<int64_t> lengths;  // tokens of each sequence, CLS and EOS included
};

// Throws naming the workload when it is none of the forms above (or a length below 2).
BatchWorkload batch_workload(const std::string& name);

// The workload's sequences for an encoder of this config: CLS, ids drawn from `seed`, EOS.
// Throws naming the workload when a sequence is longer than the model's positions.
std::vector<std::vector<int32_t>> batch_sequences(const BatchWorkload& workload,
                                                  const models::encoder::XlmRobertaConfig& config, uint64_t seed);

struct BatchCaptureOptions {
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::f16;
  uint64_t seed = 0;  // dummy weights and the sequences' ids
};

// Loads the text encoder of `model` (a preset with dummy weights or a checkpoint folder)
// for the whole batch and records one embed_batch pass. Throws naming the model when it is
// not a text encoder of the Batch pattern, or a sequence longer than its positions.
CaptureResult capture_text_encoder(const models::ModelSource& model, const BatchWorkload& workload,
                                   const BatchCaptureOptions& options);

}  // namespace fk::e2e
