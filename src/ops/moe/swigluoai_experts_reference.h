// fused_experts_swigluoai's reference in double (swigluoai_experts_def.cpp), on arguments
// already checked: it reads every tensor through get(), so the layer ops' oracles also call
// it with f64 hidden, out and topk_weights.
#pragma once
#include "ops/moe/swigluoai_experts_validate.h"

namespace fk::ops {

void swigluoai_experts_reference(const FusedExpertsSwigluOaiArgs& a, const SwigluOaiShape& s);

}  // namespace fk::ops
