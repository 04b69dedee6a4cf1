// Normalisation ops. Shapes are written beside each field: T tokens (packed), H hidden.
// All math accumulates in fp32 (CUDA) or double (CPU reference); eps is added to the
// mean of squares (RMSNorm) or variance (LayerNorm), as in HF transformers and vLLM.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[t, :] = input[t, :] * rsqrt(mean(input[t, :]^2) + eps) * weight
struct RmsNormArgs {
  static constexpr const char* kName = "rms_norm";
  TensorView out;     // [T, H] written; dtype of input; rows contiguous
  TensorView input;   // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView weight;  // [H]    read; dtype of input
  float eps;
};

}  // namespace fk::ops
