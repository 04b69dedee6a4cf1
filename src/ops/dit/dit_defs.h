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

// The oracles' adaLN modulation in f64: each row t of x [n, H] normalised (mean 0, biased
// variance 1, eps) and scaled, out[t, :] = n (1 + mod[b, scale_col:]) + mod[b, shift_col:],
// one sample's vectors (row b of mod) for all n rows.
void modulate_rows(const TensorView& x, const TensorView& out, const TensorView& mod, int64_t b, int64_t shift_col,
                   int64_t scale_col, int64_t h, double eps);

// Runs a part's CPU baseline on `args` inside a block's double-precision reference (the parts
// used there, e.g. rotary_embedding, qk_norm_rope, varlen_attention, are their own
// references on the CPU, never candidates); fails naming the block `op` and the part.
template <class Args>
void part_reference(const char* op, const Args& args) {
  const fk_op_fn fn = OpRegistry::global().baseline(Args::kName, DeviceType::cpu);
  FK_CHECK(fn != nullptr && fn(&args, nullptr) == FK_OK, op, ": the ", Args::kName, " reference failed: ",
           last_error_message());
}

}  // namespace fk::ops
