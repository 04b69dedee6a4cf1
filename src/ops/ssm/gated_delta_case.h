// What the two gated delta rule ops' definitions share: the workload fields and how a case
// is built from them, the cost models, the tolerance, and the workload of a captured call.
//
// Workload fields:
//   seq_lens    per-sequence token counts (or batch + seq_len: that many sequences of one length)
//   hk, hv      query/key heads and value heads (default 2 and 4; Qwen3-Next: 16 and 32)
//   dk, dv      key and value head sizes (default 16 and 8; Qwen3-Next: 128 and 128)
//   dtype       of q, k, v, o (default bf16); beta_dtype: of beta (default: dtype)
//   g_min, g_max   the decay logs g are drawn from [g_min, g_max] (default [-0.2, 0])
//   beta_min, beta_max  beta from [beta_min, beta_max] (default [0, 1])
//   initial     "slot" (default: every sequence starts from its slot, has_initial_state absent),
//               "zeros" (has_initial_state all 0) or "mixed" (every other sequence from zeros)
//   l2norm      use_qk_l2norm_in_kernel (default 1); without it q and k are drawn small enough
//               (|k|^2 about 1) for the recurrence to stay bounded
//   scale       (default 0: 1 / sqrt(dk))
//   spare_slots slots of the pool no sequence uses (default 2; they must come back unchanged)
// The sequences' slots are a seeded permutation of the pool's.
#pragma once
#include "fk/op_registry.h"

namespace fk::ops {

// The tensor layout both ops share (GatedDeltaRuleArgs' fields, in order).
std::vector<TensorArg> gated_delta_tensor_args();
OpCase make_gated_delta_case(const char* op, const std::vector<TensorArg>& layout, const Json& w, uint64_t seed);

// Bytes: every input read and o written once, each sequence's state read and written once.
// Flops: the chunked algorithm's matrix products (bf16 tensor-core math: what a candidate
// is measured against), or the recurrence's four passes over the state per token (f32).
OpCost gated_delta_chunk_cost(const OpCase& c);
OpCost gated_delta_recurrent_cost(const OpCase& c);

// o: the dtype's tolerance plus 2e-4; the f32 state: tight with f32 inputs, room for 16-bit
// tensor-core products with 16-bit inputs (gated_delta_case.cpp says why).
Tolerance gated_delta_tolerance(const OpCase& c, const TensorArg& arg, DType dt);

Json gated_delta_workload_from_call(const void* args);

// Test workloads both ops run (chunk boundaries, packed sequences, grouped heads, edge
// decays and betas, initial states, f16/f32) and decode-shaped ones.
std::vector<Json> gated_delta_test_workloads();

}  // namespace fk::ops
