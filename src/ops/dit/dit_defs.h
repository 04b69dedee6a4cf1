// Definition pieces shared by the DiT ops: the workload fields and the edge workloads.
// Workload fields: tokens, hidden, batch (1: the samples the per-sample vectors cover;
// must divide tokens), dtype (bf16).
#pragma once
#include <vector>

#include "fk/op_registry.h"
#include "ops/common/case_builder.h"

namespace fk::ops {

struct DitShape {
  int64_t tokens, hidden, batch;
  DType dtype;
};
DitShape dit_shape(const Json& w, const char* op);

// The activation ops' edge shapes (one vector, ragged widths, long rows, f16/f32, no
// tokens) plus several samples per call.
std::vector<Json> dit_test_workloads();

// FLUX.1-dev at 1024x1024, batch 1, hidden 3072: the image stream (4096 tokens), the text
// stream (512) and the single-stream blocks' joint sequence (4608).
std::vector<Json> flux_bench_workloads();

}  // namespace fk::ops
