#include "fk/cuda/cublas_check.h"

#include "core/cuda/cublas_api.h"

namespace fk::cuda {

fk_status cublas_status_code(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return FK_OK;
    case CUBLAS_STATUS_ALLOC_FAILED: return FK_ERR_OUT_OF_MEMORY;
    case CUBLAS_STATUS_NOT_SUPPORTED: return FK_ERR_UNSUPPORTED;
    default: return FK_ERR_CUDA;
  }
}

void throw_cublas_error(cublasStatus_t status, const char* call, std::source_location loc) {
  // The cuBLASLt names cover every cublasStatus_t and need no cuBLAS handle.
  throw_error(cublas_status_code(status),
              concat(call, " failed: ", cublas_api().cublasLtGetStatusName(status), ": ",
                     cublas_api().cublasLtGetStatusString(status)), loc);
}

}  // namespace fk::cuda
