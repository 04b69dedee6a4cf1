#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/cuda/allocator.h"
#include "fk/cuda/check.h"
#include "fk/runtime.h"

namespace fk::rt {

bool built_with_cuda() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

bool cuda_available() {
  static const bool available = device_count() > 0;
  return available;
}

std::string take_pending_error() {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return {};
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

void* device_malloc(size_t bytes, int device, void* stream) {
  return CachingDeviceAllocator::instance().allocate(bytes, device, static_cast<cudaStream_t>(stream));
}

void device_free(void* ptr, void* stream) {
  if (ptr) CachingDeviceAllocator::instance().release(ptr, static_cast<cudaStream_t>(stream));
}

void* host_pinned_malloc(size_t bytes) {
  void* p = nullptr;
  FK_CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(bytes, 1)));
  return p;
}

void host_pinned_free(void* ptr) {
  if (ptr) cudaFreeHost(ptr);  // no throw: called from deleters
}

namespace {
cudaMemcpyKind kind_of(Device dst, Device src) {
  if (dst.is_cpu() && src.is_cpu()) return cudaMemcpyHostToHost;
  if (dst.is_cpu()) return cudaMemcpyDeviceToHost;
  if (src.is_cpu()) return cudaMemcpyHostToDevice;
  return cudaMemcpyDeviceToDevice;
}
}  // namespace

void memcpy_sync(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (dst_device.is_cpu() && src_device.is_cpu()) {  // no driver needed for host copies
    std::memmove(dst, src, bytes);
    return;
  }
  FK_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind_of(dst_device, src_device)));
}

void memcpy_async(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes,
                  void* stream) {
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
  FK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind_of(dst_device, src_device),
                                static_cast<cudaStream_t>(stream)));
}

void memset_async(void* ptr, int byte_value, size_t bytes, Device device, void* stream) {
  if (device.is_cpu()) {
    std::memset(ptr, byte_value, bytes);
    return;
  }
  FK_CUDA_CHECK(cudaMemsetAsync(ptr, byte_value, bytes, static_cast<cudaStream_t>(stream)));
}

void stream_synchronize(void* stream) {
  // The CPU backend's null stream on a host without a device: nothing can have been queued
  // (and the runtime would fail for want of a driver).
  if (stream == nullptr && !cuda_available()) return;
  FK_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void device_synchronize(int device) {
  FK_CUDA_CHECK(cudaSetDevice(device));
  FK_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace fk::rt
