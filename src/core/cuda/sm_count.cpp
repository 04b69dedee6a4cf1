#include "fk/cuda/sm_count.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "fk/cuda/check.h"

namespace fk::cuda {

int current_sm_count() {
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  FK_CUDA_CHECK(cudaGetDevice(&device));
  const bool cached = device >= 0 && device < static_cast<int>(cache.size());
  if (cached)
    if (const int n = cache[static_cast<size_t>(device)].load(std::memory_order_relaxed)) return n;
  int n = 0;
  FK_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  if (cached) cache[static_cast<size_t>(device)].store(n, std::memory_order_relaxed);
  return n;
}

}  // namespace fk::cuda
