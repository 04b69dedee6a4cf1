// Dense linear layers (GEMM). Shapes beside each field: M rows of input (tokens), K input
// features, N output features. The weight is row-major [N, K] as in torch.nn.Linear and
// vLLM's linear layers, so the op computes input @ weight^T.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[m, n] = scale * sum_k input[m, k] * weight[n, k]  (+ bias[n])
//
// scale = 1 for bf16/f16 inputs; scale = scale_a[0] * scale_b[0] for fp8 inputs (per-tensor
// dequantisation scales of input and weight, as vLLM's scaled_mm(a, b, scale_a, scale_b)).
// The bias is added after scaling. Products accumulate in fp32 (CUDA) or double (CPU).
//
// Dtypes: input/weight bf16 -> out bf16; f16 -> f16; f8e4m3fn -> out bf16 (or f16).
// Optional tensors are absent when data == nullptr or they have no elements.
// Every matrix has a contiguous last dimension; row strides are free (row stride >= K, or
// >= N for out), so a slice of a wider buffer can be passed without a copy.
// M = 0 and N = 0 are no-ops; K must be positive.
// The CUDA baseline (cuBLASLt) additionally needs, for fp8: K and N multiples of 16, input
// and weight row strides multiples of 16 elements, out row stride a multiple of 8 and
// 16-byte aligned input, weight, out and bias; it reports FK_ERR_UNSUPPORTED otherwise.
struct LinearArgs {
  static constexpr const char* kName = "linear";
  TensorView out;      // [M, N] written; bf16/f16 (dtype of input; bf16 or f16 for fp8 input)
  TensorView input;    // [M, K] read; bf16/f16/f8e4m3fn
  TensorView weight;   // [N, K] read; dtype of input
  TensorView bias;     // [N]    read; dtype of out; optional
  TensorView scale_a;  // [1]    read; f32; fp8 only (absent otherwise): scale of input
  TensorView scale_b;  // [1]    read; f32; fp8 only (absent otherwise): scale of weight
};

// A decoder sub-layer's norm and the linear layer that reads it, in one op (the norm is the
// GEMM's prologue; at decode this saves a kernel and its launch gap per sub-layer):
//   s[m, :]       = round_to_dtype(input[m, :] + residual_in[m, :])   (s = input without residual_in)
//   residual_out  = s                                                  (with residual_in only)
//   normed[m, :]  = round_to_dtype(s[m, :] * rsqrt(mean(s[m, :]^2) + eps) * norm_weight)
//   out[m, n]     = sum_k normed[m, k] * weight[n, k]  (+ bias[n])
// i.e. fused_add_rms_norm (or rms_norm) into `normed`, then linear(out, normed, weight,
// bias), with the residual written out of place: every CTA of the CUDA baseline normalises
// the rows it needs itself while one of them stores residual_out and normed, so
// residual_out must not be residual_in (the engine alternates two residual buffers).
// Dtypes: input, residual_in, norm_weight, weight, bias bf16 or f16 (one dtype); every
// written tensor of that dtype (f64 where the CPU oracle writes). Written tensors must not
// overlap each other or any input. Row strides are free (rows contiguous, 16-byte aligned
// rows for the CUDA baseline's fused path; others take its unfused path). The unfused
// path's norm reads norm_weight before its PDL wait, as the norm ops do (fk/ops/norm.h).
struct RmsNormLinearArgs {
  static constexpr const char* kName = "rms_norm_linear";
  TensorView out;           // [M, N] written
  TensorView normed;        // [M, K] written: the normalised rows the GEMM consumed
  TensorView residual_out;  // [M, K] written: input + residual_in; present iff residual_in is
  TensorView input;         // [M, K] read: the sub-layer output (or the embedding)
  TensorView residual_in;   // [M, K] read; optional
  TensorView norm_weight;   // [K]    read
  TensorView weight;        // [N, K] read
  TensorView bias;          // [N]    read; optional
  float eps;
};

}  // namespace fk::ops
