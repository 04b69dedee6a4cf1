#include "harness/check/bytes_equal.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "fk/cuda/check.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::bench {
namespace {

// Sets *differs when any 16-byte word (or tail byte) differs; no early exit is needed,
// the common case is equality and then every word is read anyway.
__global__ void differs_kernel(const uint8_t* a, const uint8_t* b, size_t bytes, bool vector, unsigned* differs) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  bool diff = false;
  size_t done = 0;
  if (vector) {
    const size_t words = bytes / 16;
    const auto* wa = reinterpret_cast<const uint4*>(a);
    const auto* wb = reinterpret_cast<const uint4*>(b);
    for (size_t i = first; i < words; i += stride) {
      const uint4 x = wa[i], y = wb[i];
      diff |= (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
    }
    done = words * 16;
  }
  for (size_t i = done + first; i < bytes; i += stride) diff |= a[i] != b[i];
  if (__syncthreads_or(diff) && threadIdx.x == 0) atomicOr(differs, 1u);
}

}  // namespace

bool bytes_equal(const void* a, const void* b, size_t bytes, Device device, void* stream) {
  if (bytes == 0) return true;
  if (device.is_cpu()) return std::memcmp(a, b, bytes) == 0;
  const auto s = static_cast<cudaStream_t>(stream);
  auto* flag = static_cast<unsigned*>(rt::device_malloc(sizeof(unsigned), device.index, stream));
  unsigned host = 0;
  try {
    FK_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned), s));
    const bool vector = reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const size_t units = vector ? bytes / 16 + 1 : bytes;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((units + 255) / 256, 1024));
    differs_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), bytes,
                                          vector, flag);
    FK_CUDA_CHECK_LAUNCH();
    FK_CUDA_CHECK(cudaMemcpyAsync(&host, flag, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    FK_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    rt::device_free(flag, stream);
    throw;
  }
  rt::device_free(flag, stream);
  return host == 0;
}

}  // namespace fk::bench
