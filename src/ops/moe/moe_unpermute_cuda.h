// The CUDA weighted combine of permuted expert outputs (moe_unpermute_sum), shared by the
// op and by fused_experts' grouped path. A kernel launch only (capturable).
#pragma once
#include <cstdint>

#include "fk/dtype.h"

namespace fk::ops::moe_cuda {

// out[t, :] = sum_j weights[t, j] * permuted[inv_perm[t, j], :] (fk/ops/moe.h).
struct UnpermuteParams {
  void* out;
  int64_t ld_out;
  const void* permuted;
  int64_t ld_perm;
  const int32_t* inv_perm;  // [T, k]; rows outside [0, P) add nothing
  const float* weights;     // [T, k] or null (weights 1)
  int k, H, P;
};

// Sums T rows of `dtype` (f32, f16 or bf16) on `stream` (a cudaStream_t). vectorised: 16
// bytes per thread, which needs H, both row strides and both base addresses 16-byte aligned.
void launch_unpermute(const UnpermuteParams& p, int64_t tokens, DType dtype, bool vectorised, void* stream);

}  // namespace fk::ops::moe_cuda
