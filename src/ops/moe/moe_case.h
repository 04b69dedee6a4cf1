// Inputs of the MoE ops' cases: routings with a chosen pattern, drawn from Philox so that
// a (workload, seed) pair always makes the same case.
#pragma once
#include <cstdint>
#include <string>

#include "fk/op_registry.h"

namespace fk::ops {

// How the slots of a case are routed (workload field "routing"):
//   uniform  each token draws k distinct experts uniformly
//   skewed   k distinct experts per token, low expert ids far more likely (hot experts,
//            and with few tokens many experts without any)
//   same     every token selects experts 0..k-1 (all tokens on the same experts)
//   dropped  uniform, then about one slot in five routed nowhere (id -1)
enum class RoutingPattern { uniform, skewed, same, dropped };
RoutingPattern routing_pattern(const Json& w);

// [T, k] i32 expert ids with the pattern (k <= E).
Tensor make_topk_ids(int64_t tokens, int64_t k, int64_t experts, RoutingPattern pattern, uint64_t seed,
                     uint64_t stream);

// Distinct experts hit by the valid slots of ids.
int64_t distinct_experts(const TensorView& ids, int64_t experts);

// The expert sizes of a fused_experts / fused_moe workload: fields tokens, topk, experts,
// hidden, inter (expert intermediate size); dtype (activations: bf16 | f16, default
// bf16); weight_dtype (the activation dtype, or f8e4m3fn: block-scaled fp8 weights).
struct ExpertsWorkload {
  int64_t T, k, E, H, I;
  DType dtype, weight_dtype;
};
ExpertsWorkload experts_workload(const Json& w, const char* op);

// The expert inputs of such a case: hidden [T, H] uniform in [-2, 2] into tensors[hidden],
// w13 [E, 2I, H] and w2 [E, H, I] into tensors[w13] and tensors[w2], with values of rms ~
// 1.15 / sqrt(cols) (so that every projection keeps its input's size), and their block
// scales into tensors[w13_scale] and tensors[w2_scale] when fp8 (fp8 values spread over
// [-4, 4], scales around 1 / (2 sqrt(cols))), else empty. Philox streams 1..5 of seed.
struct ExpertSlots {
  size_t hidden, w13, w2, w13_scale, w2_scale;
};
void make_expert_inputs(OpCase& c, const ExpertSlots& slots, const ExpertsWorkload& s, uint64_t seed);

}  // namespace fk::ops
