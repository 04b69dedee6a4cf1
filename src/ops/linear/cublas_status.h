// Checked cuBLASLt calls for the linear op: FK_CUBLASLT_CHECK(cublasLtMatmul(...)) throws
// fk::Error naming the call, file:line and cuBLAS's status name and description.
// (Local to the linear family until a shared cuBLAS check header exists.)
// Include only from CUDA-enabled translation units.
#pragma once
#include <cublasLt.h>

#include "fk/status.h"

namespace fk::ops::cublaslt {

// FK_ERR_OUT_OF_MEMORY for allocation failures, FK_ERR_UNSUPPORTED for configurations
// cuBLASLt does not implement, FK_ERR_CUDA for everything else.
inline fk_status status_code(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return FK_ERR_OUT_OF_MEMORY;
    case CUBLAS_STATUS_NOT_SUPPORTED: return FK_ERR_UNSUPPORTED;
    default: return FK_ERR_CUDA;
  }
}

[[noreturn]] inline void throw_status(cublasStatus_t s, const char* call,
                                      std::source_location loc = std::source_location::current()) {
  throw_error(status_code(s), concat(call, " failed: ", cublasLtGetStatusName(s), ": ", cublasLtGetStatusString(s)),
              loc);
}

}  // namespace fk::ops::cublaslt

#define FK_CUBLASLT_CHECK(call)                                          \
  do {                                                                   \
    cublasStatus_t fk_cublaslt_status_ = (call);                         \
    if (fk_cublaslt_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]       \
      ::fk::ops::cublaslt::throw_status(fk_cublaslt_status_, #call);     \
  } while (0)
