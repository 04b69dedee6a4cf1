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

}  // namespace fk::ops
