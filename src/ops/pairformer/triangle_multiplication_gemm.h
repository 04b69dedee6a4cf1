// Batched "NT" GEMMs of the Pairformer's triangle and transition ops:
//   out[b][m][n] = sum_k lhs[b][m][k] * rhs[b][n][k]
// over row-major matrices with unit column stride. The triangle multiplication's k sum is
// one such GEMM per (structure, channel); the projections of f32 activations are one with a
// single batch (the registry's linear op takes bf16 / f16 only). Products accumulate in fp32
// (CUDA) or double (CPU) and are rounded once to the dtype.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

struct NtGemm {
  void* out;
  const void* lhs;
  const void* rhs;
  DType dtype;  // of lhs, rhs and out: f32, f16 or bf16
  int64_t batch, m, n, k;
  int64_t out_ld, lhs_ld, rhs_ld;              // row strides, in elements
  int64_t out_batch, lhs_batch, rhs_batch;     // batch strides, in elements
};

// Each backend's GEMM (the CUDA one in triangle_multiplication_gemm_cuda.cpp, cuBLAS
// strided-batched with fp32 compute on the caller's stream).
using NtGemmFn = void (*)(const NtGemm&, void* stream);
void nt_gemm_cpu(const NtGemm& g, void* stream);

// out = input @ weight^T for packed [M, K] input, [N, K] weight, [M, N] out of one dtype:
// the registry's linear op for bf16 / f16, `gemm` for f32.
void pairformer_project(const TensorView& out, const TensorView& input, const TensorView& weight,
                        DeviceType backend, NtGemmFn gemm, void* stream);

}  // namespace fk::ops
