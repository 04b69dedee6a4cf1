// fused_moe as its parts through the registry (what OpRegistry::call runs when routing or
// the experts have a candidate, or the op's "unfused" variant is selected).
#pragma once
#include "fk/op.h"
#include "fk/tensor_view.h"

namespace fk::ops {

template <DeviceType Backend>
fk_status fused_moe_composed(const void* args, void* stream);

}  // namespace fk::ops
