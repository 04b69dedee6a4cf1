// gpt_oss_layer's tolerances and its output check (OpDef::check_outputs): the cache rows
// and the residual element-wise against the reference; each token's hidden row against the
// reference's, or, where it differs, against the experts' output on every selection a
// near-tie of the router logits allows, recomputed from the implementation's own residual.
#pragma once
#include <string>

#include "fk/op_registry.h"

namespace fk::ops {

Tolerance gpt_oss_layer_tolerance(const OpCase& c, const TensorArg& arg, DType dt);

// "" when right, else why not. `oracle` holds the reference's outputs; when it is `host`
// itself (a timed call checked against the baseline's outputs, which are as far from the
// exact result as the candidate may be) the element-wise bounds are doubled.
std::string check_gpt_oss_layer_outputs(const OpCase& host, const OpCase& oracle, const OpCase& actual);

}  // namespace fk::ops
