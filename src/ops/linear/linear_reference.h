// CPU reference of linear in double, shared by linear and rms_norm_linear.
#pragma once
#include "fk/ops/linear.h"

namespace fk::ops {

// out = scale * input @ weight^T (+ bias) for validated arguments (no checks here); `out`
// may be f64 (the oracle) or the engine dtype, and `input` may be f64 holding values
// already rounded to the model dtype (rms_norm_linear's oracle).
void linear_reference(const LinearArgs& a);

}  // namespace fk::ops
