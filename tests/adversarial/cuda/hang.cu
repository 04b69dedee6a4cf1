// expect: TIMEOUT
// A kernel that never ends.
#include "common.cuh"

namespace {
__device__ int never_set = 0;

__global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}
fk_status run(const void* raw, void* stream) {
  (void)raw;
  int* flag = nullptr;
  cudaGetSymbolAddress(reinterpret_cast<void**>(&flag), never_set);
  spin<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag);
  return cudaStreamSynchronize(static_cast<cudaStream_t>(stream)) == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
