// rms_norm_linear as its parts through the registry (what OpRegistry::call runs when the
// norm or linear has a candidate, or the op's "unfused" variant is selected).
#pragma once
#include "fk/op.h"
#include "fk/tensor_view.h"

namespace fk::ops {

template <DeviceType Backend>
fk_status rms_norm_linear_composed(const void* args, void* stream);

}  // namespace fk::ops
