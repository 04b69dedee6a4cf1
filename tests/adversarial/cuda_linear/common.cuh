// Shared by the linear adversarial candidates: a naive GEMM kernel (one thread per
// output element) with a selectable accumulator type.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fk/ops/linear.h"

namespace adv {

template <class Acc>
__global__ void naive_gemm_bf16(__nv_bfloat16* out, const __nv_bfloat16* in, const __nv_bfloat16* w, int M, int N,
                                int K, int64_t lda, int64_t ldw, int64_t ldo) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N || m >= M) return;
  Acc acc = Acc(0.f);
  for (int k = 0; k < K; ++k)
    acc = acc + Acc(__bfloat162float(in[m * lda + k]) * __bfloat162float(w[n * ldw + k]));
  out[m * ldo + n] = __float2bfloat16_rn(static_cast<float>(acc));
}

template <class Acc>
fk_status naive(const fk::ops::LinearArgs& a, cudaStream_t s) {
  const int M = static_cast<int>(a.input.shape[0]), K = static_cast<int>(a.input.shape[1]);
  const int N = static_cast<int>(a.weight.shape[0]);
  if (a.input.dtype != fk::DType::bf16 || (a.bias.data && a.bias.numel() > 0)) return FK_ERR_UNSUPPORTED;
  if (M == 0) return FK_OK;
  dim3 grid((N + 127) / 128, M);
  naive_gemm_bf16<Acc><<<grid, 128, 0, s>>>(static_cast<__nv_bfloat16*>(a.out.data),
                                             static_cast<const __nv_bfloat16*>(a.input.data),
                                             static_cast<const __nv_bfloat16*>(a.weight.data), M, N, K,
                                             a.input.strides[0], a.weight.strides[0], a.out.strides[0]);
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

}  // namespace adv
