// Normalisation ops. Shapes are written beside each field: T tokens (packed), H hidden.
// All math accumulates in fp32 (CUDA) or double (CPU reference); eps is added to the
// mean of squares (RMSNorm) or variance (LayerNorm), as in HF transformers and vLLM.
//
// Common rules:
// - Dtypes: f32, f16 or bf16; every tensor of one call has the same dtype (the model dtype).
// - "rows contiguous": the last dimension has stride 1; the row stride is free (a slice of
//   a wider matrix is fine).
// - weight and bias are contiguous [H].
// - Updated (in place) tensors must not overlap any other tensor of the call.
// - Programmatic dependent launch: the CUDA baselines read weight before they wait for the
//   kernel launched right before them, to take a dependent load (from DRAM, at decode) off
//   a decode layer's critical path; everything else waits. So weight must not be written by
//   the kernel launched immediately before the op (a copy, or any kernel before that one,
//   is fine: model weights are). The ops' variant `late_weight` reads it after the wait.
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

// Gemma's RMSNorm: the weight is stored as an offset from one.
// out[t, :] = input[t, :] * rsqrt(mean(input[t, :]^2) + eps) * (1 + weight)
struct GemmaRmsNormArgs {
  static constexpr const char* kName = "gemma_rms_norm";
  TensorView out;     // [T, H] written; dtype of input; rows contiguous
  TensorView input;   // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView weight;  // [H]    read; dtype of input
  float eps;
};

// The residual add before each decoder sub-layer fused with its norm (vLLM's
// fused_add_rms_norm); both tensors are updated in place:
//   residual[t, :] = round_to_dtype(input[t, :] + residual[t, :])
//   input[t, :]    = residual[t, :] * rsqrt(mean(residual[t, :]^2) + eps) * weight
// The norm reads the residual *after* it was rounded to the dtype, i.e. exactly the values
// the next layer will add onto, so the two outputs are consistent with each other.
struct FusedAddRmsNormArgs {
  static constexpr const char* kName = "fused_add_rms_norm";
  TensorView input;     // [T, H] updated: the sub-layer output in, the normalised residual out;
                        //        f32/f16/bf16; rows contiguous (row stride free)
  TensorView residual;  // [T, H] updated: += input; dtype of input; rows contiguous (row stride free)
  TensorView weight;    // [H]    read; dtype of input
  float eps;
};

// fused_add_rms_norm with Gemma's (1 + weight) scale.
struct GemmaFusedAddRmsNormArgs {
  static constexpr const char* kName = "gemma_fused_add_rms_norm";
  TensorView input;     // [T, H] updated (see FusedAddRmsNormArgs)
  TensorView residual;  // [T, H] updated: += input; dtype of input; rows contiguous (row stride free)
  TensorView weight;    // [H]    read; dtype of input
  float eps;
};

// out[t, :] = (input[t, :] - mean) * rsqrt(var + eps) * weight + bias, with mean and the
// biased (population) variance over the row, as torch.nn.functional.layer_norm.
// No bias: bias.data == nullptr (the rest of the bias view is then ignored). A bias with
// data must be a contiguous [H] tensor of the input's dtype.
struct LayerNormArgs {
  static constexpr const char* kName = "layer_norm";
  TensorView out;     // [T, H] written; dtype of input; rows contiguous
  TensorView input;   // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView weight;  // [H]    read; dtype of input
  TensorView bias;    // [H]    read; dtype of input; optional (data == nullptr: no bias)
  float eps;
};

// The residual add of a post-norm encoder layer (BERT, XLM-RoBERTa) fused with its LayerNorm:
//   out[t, :] = layer_norm(round_to_dtype(input[t, :] + residual[t, :])) * weight + bias
// The sum is rounded to the dtype first, as the unfused add would store it. `out` may be
// the residual tensor itself (the layer's hidden state updated in place); it must not
// overlap `input`.
struct AddLayerNormArgs {
  static constexpr const char* kName = "add_layer_norm";
  TensorView out;       // [T, H] written; dtype of input; rows contiguous; may be `residual` itself
  TensorView input;     // [T, H] read: the sub-layer's output; f32/f16/bf16; rows contiguous
  TensorView residual;  // [T, H] read: the sub-layer's input; dtype of input; rows contiguous
  TensorView weight;    // [H]    read; dtype of input
  TensorView bias;      // [H]    read; dtype of input; optional (data == nullptr: no bias)
  float eps;
};

// The gate's activation in rms_norm_gated.
enum class NormGateActivation : int32_t {
  silu = 0,     // g / (1 + exp(-g)): Qwen3-Next (fla's "swish"/"silu")
  sigmoid = 1,  // 1 / (1 + exp(-g)): Kimi-Linear's output norm
};

// RMSNorm gated by a second input (Qwen3-Next's Qwen3NextRMSNormGated; flash-linear-
// attention's FusedRMSNormGated and vLLM's RMSNormGated with the norm before the gate),
// applied per head to the linear-attention output ([tokens * heads, head_dim] rows):
//   out[r, :] = input[r, :] * rsqrt(mean(input[r, :]^2) + eps) * weight * act(gate[r, :])
// Semantics are the exact value rounded once to the dtype (what fla and vLLM compute, in
// fp32). transformers rounds twice on the way (the normalised row to the dtype, and its
// product with the weight), which stays within the op's tolerance of the exact value.
struct RmsNormGatedArgs {
  static constexpr const char* kName = "rms_norm_gated";
  TensorView out;     // [R, H] written; dtype of input; rows contiguous (row stride free)
  TensorView input;   // [R, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView gate;    // [R, H] read; dtype of input; rows contiguous (row stride free)
  TensorView weight;  // [H]    read; dtype of input
  float eps;
  NormGateActivation activation;
};

// L2 normalisation of rows (flash-linear-attention's l2norm, applied to the q and k heads
// of the delta-rule layers): eps is added to the sum of squares, not to the mean.
//   out[r, :] = input[r, :] * rsqrt(sum(input[r, :]^2) + eps)
struct L2NormArgs {
  static constexpr const char* kName = "l2_norm";
  TensorView out;    // [R, H] written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [R, H] read; f32/f16/bf16; rows contiguous (row stride free)
  float eps;         // fla's default 1e-6
};

}  // namespace fk::ops
