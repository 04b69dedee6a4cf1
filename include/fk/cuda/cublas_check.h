// Checked cuBLAS / cuBLASLt calls: FK_CUBLAS_CHECK(cublasLtMatmul(...)) throws fk::Error
// naming the call, file:line and cuBLAS's own status name and description.
// Include only from CUDA-enabled translation units.
#pragma once
#include <cublas_api.h>

#include "fk/status.h"

namespace fk::cuda {
// FK_ERR_OUT_OF_MEMORY for CUBLAS_STATUS_ALLOC_FAILED, FK_ERR_UNSUPPORTED for
// CUBLAS_STATUS_NOT_SUPPORTED, FK_ERR_CUDA otherwise.
fk_status cublas_status_code(cublasStatus_t status);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call,
                                     std::source_location loc = std::source_location::current());
}  // namespace fk::cuda

#define FK_CUBLAS_CHECK(call)                                              \
  do {                                                                     \
    cublasStatus_t fk_cublas_status_ = (call);                             \
    if (fk_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]           \
      ::fk::cuda::throw_cublas_error(fk_cublas_status_, #call);            \
  } while (0)
