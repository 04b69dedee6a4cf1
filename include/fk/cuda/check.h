// Checked CUDA calls. Every CUDA runtime, driver-less launch and cuBLAS call in
// fastkernels goes through one of these: the error names the call, file:line and CUDA's
// own message. Include only from CUDA-enabled translation units.
#pragma once
#include <cuda_runtime.h>

#include "fk/status.h"

namespace fk::cuda {
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call,
                                   std::source_location loc = std::source_location::current());
}  // namespace fk::cuda

#define FK_CUDA_CHECK(call)                                                  \
  do {                                                                       \
    cudaError_t fk_err_ = (call);                                            \
    if (fk_err_ != cudaSuccess) [[unlikely]]                                 \
      ::fk::cuda::throw_cuda_error(fk_err_, #call);                          \
  } while (0)

// After a <<<...>>> launch: catches bad launch configurations at the launch site.
#define FK_CUDA_CHECK_LAUNCH() FK_CUDA_CHECK(cudaGetLastError())
