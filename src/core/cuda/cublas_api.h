// cuBLAS and cuBLASLt through pointers resolved on first use, instead of linking the
// libraries: loading libcublasLt costs every process 0.16 s and 25,000 page faults at
// start, paid by each test and worker process whether or not it runs a GEMM. The first
// cublas_api() call loads them (RTLD_LOCAL); a missing library is an fk::Error naming it.
//   FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmul(handle, ...));
// The header's inline initialisers (cublasLtMatmulDescInit and the like) call exported
// *_internal functions: use the helpers below instead. Include only from CUDA-enabled code.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

// Every cuBLAS(Lt) function the engine and the harness call. cuBLAS's own macros turn
// some names into their exported symbols (cublasCreate -> cublasCreate_v2), here too.
#define FK_CUBLASLT_FUNCTIONS(X)                                                                     \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString) X(cublasLtMatmul) X(cublasLtMatmulAlgoGetHeuristic)                     \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)        \
  X(cublasLtMatmulDescInit_internal) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)   \
  X(cublasLtMatrixLayoutInit_internal) X(cublasLtMatmulPreferenceCreate)                             \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                         \
  X(cublasLtMatmulPreferenceInit_internal)
#define FK_CUBLAS_FUNCTIONS(X) X(cublasCreate) X(cublasSetStream) X(cublasSetWorkspace)

namespace fk::cuda {

struct CublasApi {
#define FK_CUBLAS_API_FIELD(name) decltype(&::name) name = nullptr;
  FK_CUBLASLT_FUNCTIONS(FK_CUBLAS_API_FIELD)
  FK_CUBLAS_FUNCTIONS(FK_CUBLAS_API_FIELD)
#undef FK_CUBLAS_API_FIELD
  // Overloaded in C++ (by a cudaDataType compute type): the field is the exported function.
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                               const void*, const void*, cudaDataType, int, long long, const void*,
                                               cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                               long long, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// Loads libcublasLt and libcublas of the toolkit the engine was built with on the first
// call (thread-safe; a failure is thrown again by the next call).
const CublasApi& cublas_api();

inline cublasStatus_t matmul_desc_init(cublasLtMatmulDescOpaque_t* d, cublasComputeType_t compute,
                                       cudaDataType_t scale) {
  return cublas_api().cublasLtMatmulDescInit_internal(d, sizeof(*d), compute, scale);
}
inline cublasStatus_t matrix_layout_init(cublasLtMatrixLayoutOpaque_t* l, cudaDataType_t type, uint64_t rows,
                                         uint64_t cols, int64_t ld) {
  return cublas_api().cublasLtMatrixLayoutInit_internal(l, sizeof(*l), type, rows, cols, ld);
}
inline cublasStatus_t matmul_preference_init(cublasLtMatmulPreferenceOpaque_t* p) {
  return cublas_api().cublasLtMatmulPreferenceInit_internal(p, sizeof(*p));
}

}  // namespace fk::cuda
