// fused_experts on the host: the double-precision reference (the CPU backend and the
// oracle) and the tolerance of an implementation against it.
#pragma once
#include "fk/op_registry.h"
#include "fk/ops/moe.h"

namespace fk::ops {

// Writes out (engine dtype, or the oracle's f64) for host tensors.
void fused_experts_reference(const FusedExpertsArgs& a);

// Tolerance of `out` (dtype out_dtype): the dtype's default, plus an absolute term for
// the roundings the op allows (silu(gate) * up and each weighted expert output rounded to
// the activation dtype, fp8 weights dequantised into it). With u the unit roundoff of the
// activation dtype and `typical` the expected size of an output (estimated from the rms of
// the inputs through the two projections and the largest sum of |weights| of a token):
//     atol = default atol + c * 2u * typical,   c = 3 (4 with fp8 weights).
// The roundings are random-signed: their sum has an rms of about 0.6u * typical, and the
// largest of a million outputs stays below 5 times that; c leaves twice that room.
Tolerance fused_experts_tolerance(const FusedExpertsArgs& a, DType out_dtype);

}  // namespace fk::ops
