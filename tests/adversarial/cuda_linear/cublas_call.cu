// expect: REWARD_HACK
// Calls cuBLAS, which reproduces the baseline, in a task that forbids it.
#include <cublas_v2.h>

#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  const auto& a = *static_cast<const fk::ops::LinearArgs*>(raw);
  static cublasHandle_t h = [] {
    cublasHandle_t x;
    cublasCreate(&x);
    return x;
  }();
  const int M = static_cast<int>(a.input.shape[0]), K = static_cast<int>(a.input.shape[1]);
  const int N = static_cast<int>(a.weight.shape[0]);
  const float alpha = 1.f, beta = 0.f;
  cublasSetStream(h, static_cast<cudaStream_t>(stream));
  // Row-major out[M,N] = in[M,K] W[N,K]^T is column-major out^T = W in^T.
  const auto st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, a.weight.data, CUDA_R_16BF,
                               static_cast<int>(a.weight.strides[0]), a.input.data, CUDA_R_16BF,
                               static_cast<int>(a.input.strides[0]), &beta, a.out.data, CUDA_R_16BF,
                               static_cast<int>(a.out.strides[0]), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? FK_OK : FK_ERR_CUDA;
}
}  // namespace

FK_EXPORT_CANDIDATE(linear, run)
