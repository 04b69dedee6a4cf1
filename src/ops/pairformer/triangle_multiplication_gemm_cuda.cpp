// The CUDA NT GEMM of triangle_multiplication_gemm.h: cuBLAS strided-batched GEMM with fp32
// compute (no TF32: f32 activations keep f32 products), on the caller's stream. One cuBLAS
// handle per device, created on first use; its workspace is the linear op's per-stream
// cuBLASLt workspace (calls on one stream run in order, so they may share it), which also
// keeps cuBLAS from allocating while a CUDA graph is captured once the stream has run once.
#include <cuda_runtime.h>

#include <map>
#include <mutex>

#include "core/cuda/cublas_api.h"
#include "fk/cuda/check.h"
#include "fk/cuda/cublas_check.h"
#include "ops/linear/cublaslt_context.h"
#include "ops/pairformer/triangle_multiplication_kernels.h"

namespace fk::ops {
namespace {

struct Handles {
  std::mutex mu;
  std::map<int, cublasHandle_t> by_device;
};
Handles& handles() {
  static Handles* h = new Handles;  // never destroyed: outlives static destructors that may still run GEMMs
  return *h;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: FK_FAIL(FK_ERR_UNSUPPORTED, "triangle_multiplication: GEMM dtype ", dtype_name(t), " is not supported");
  }
}

}  // namespace

void nt_gemm_cuda(const NtGemm& g, void* stream) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  FK_CHECK(g.k > 0 && g.m <= INT32_MAX && g.n <= INT32_MAX && g.k <= INT32_MAX && g.batch <= INT32_MAX,
           "pairformer GEMM: sizes out of cuBLAS's int range or k = 0: batch ", g.batch, ", m ", g.m, ", n ", g.n,
           ", k ", g.k);
  int device = 0;
  FK_CUDA_CHECK(cudaGetDevice(&device));
  const auto s = static_cast<cudaStream_t>(stream);
  Handles& h = handles();
  std::lock_guard lk(h.mu);
  cublasHandle_t& handle = h.by_device[device];
  if (handle == nullptr) FK_CUBLAS_CHECK(cuda::cublas_api().cublasCreate(&handle));
  FK_CUBLAS_CHECK(cuda::cublas_api().cublasSetStream(handle, s));
  FK_CUBLAS_CHECK(cuda::cublas_api().cublasSetWorkspace(handle, cublaslt::workspace(device, s), cublaslt::kWorkspaceBytes));
  const cudaDataType_t t = cuda_type(g.dtype);
  const float alpha = 1.f, beta = 0.f;
  // Row-major out = lhs rhs^T is column-major out^T = rhs lhs^T: the column-major view of a
  // row-major rhs is rhs^T (hence op T), of lhs is lhs^T (op N).
  FK_CUBLAS_CHECK(cuda::cublas_api().cublasGemmStridedBatchedEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha,
      g.rhs, t, static_cast<int>(g.rhs_ld), g.rhs_batch, g.lhs, t, static_cast<int>(g.lhs_ld), g.lhs_batch, &beta, g.out,
      t, static_cast<int>(g.out_ld), g.out_batch, static_cast<int>(g.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace fk::ops
