// pairformer_transition as registry calls (layer_norm, linear, silu_and_mul, add): the CPU
// baseline (pairformer_transition_def.cpp) and the CUDA one (pairformer_transition_cuda.cpp)
// differ only in the GEMM used for f32 projections, which the linear op does not take.
#pragma once
#include "fk/ops/pairformer.h"
#include "ops/pairformer/triangle_multiplication_gemm.h"

namespace fk::ops {

void pairformer_transition_composed(const TransitionArgs& a, DeviceType backend, NtGemmFn gemm, void* stream);

}  // namespace fk::ops
