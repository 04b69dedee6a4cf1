// The GPU oracle: an op's high-precision GPU reference (OpRegistry::gpu_reference) run on a
// device case. It stands in for the CPU oracle (make_oracle_case + run_oracle in
// harness/check/op_check.h) where a workload is too large for the CPU, and gives the same outputs
// up to double rounding.
#pragma once
#include "fk/op_registry.h"

namespace fk::bench {

// Runs the op's GPU reference on `stream` with the inputs of `device_case` (shared, not
// copied: the reference must not modify them) and fresh outputs on the same device: f64
// for float outputs (integer ones keep their dtype), in-place tensors starting from the
// host case's values. Returns the oracle case on the host: `host_case`'s inputs with the
// reference's outputs, as make_oracle_case + run_oracle would. Throws fk::Error when the
// op has no GPU reference, a CUDA error was pending before it, or the reference fails.
OpCase run_gpu_oracle(const OpDef& def, const OpCase& host_case, const OpCase& device_case, void* stream);

}  // namespace fk::bench
