// The output check of fused_moe: the routing may be any valid top-k selection in any order
// (as for moe_topk_softmax), and `out` must match the experts' reference on the experts
// the implementation selected.
#pragma once
#include <string>

#include "fk/op_registry.h"

namespace fk::ops {

// OpDef::check_outputs of fused_moe: "" when right, else why not.
std::string check_fused_moe_outputs(const OpCase& host, const OpCase& oracle, const OpCase& actual);

}  // namespace fk::ops
