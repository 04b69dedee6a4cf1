// triangle_multiplication's CUDA steps (triangle_multiplication.cu): the launches behind
// TriangleMultiplicationSteps on the CUDA backend. Include only from CUDA-enabled code.
#pragma once
#include "ops/pairformer/triangle_multiplication_composed.h"

namespace fk::ops {

void triangle_gate_cuda(const TriangleMultiplicationArgs& a, const TriangleDims& d, void* stream);
void triangle_to_token_major_cuda(const TensorView& dst, const TensorView& src, const TriangleDims& d, void* stream);
void triangle_output_gate_cuda(const TriangleMultiplicationArgs& a, const TriangleDims& d, void* stream);
// The cuBLAS strided-batched NT GEMM (triangle_multiplication_gemm_cuda.cpp).
void nt_gemm_cuda(const NtGemm& g, void* stream);

}  // namespace fk::ops
