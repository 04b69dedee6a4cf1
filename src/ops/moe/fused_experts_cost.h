// The least work of fused_experts (its OpDef's cost, also the bulk of fused_moe's).
#pragma once
#include "fk/op_registry.h"
#include "fk/ops/moe.h"

namespace fk::ops {

// Minimal traffic: the weights of the experts the routing (host topk_ids) touches, each
// read once, the activations in and out and the routing. Flops: the three projections of
// every routed slot.
OpCost fused_experts_cost(const FusedExpertsArgs& a);

}  // namespace fk::ops
