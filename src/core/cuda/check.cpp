#include "fk/cuda/check.h"

namespace fk::cuda {

void throw_cuda_error(cudaError_t err, const char* call, std::source_location loc) {
  fk_status code = err == cudaErrorMemoryAllocation ? FK_ERR_OUT_OF_MEMORY : FK_ERR_CUDA;
  cudaGetLastError();  // clear the sticky-free error state so later calls are not poisoned
  throw_error(code, concat(call, " failed: ", cudaGetErrorName(err), ": ", cudaGetErrorString(err)), loc);
}

}  // namespace fk::cuda
