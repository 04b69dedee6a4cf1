// CachingDeviceAllocator: the allocator core (allocator_core.h) on the CUDA runtime.
#include <cstdio>

#include "core/cuda/allocator_core.h"
#include "core/cuda/allocator.h"
#include "fk/cuda/check.h"
#include "fk/cuda/stream.h"

namespace fk {

namespace {

class CudaAllocatorBackend final : public detail::AllocatorBackend {
 public:
  void* malloc(int device, size_t bytes) override {
    cuda::DeviceGuard guard(device);
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it so the next call does not report it
      return nullptr;
    }
    FK_CUDA_CHECK(err);
    return p;
  }
  void free(int device, void* ptr) override {
    cuda::DeviceGuard guard(device);
    FK_CUDA_CHECK(cudaFree(ptr));
  }
  void* create_event(int device) override {
    cuda::DeviceGuard guard(device);
    cudaEvent_t ev = nullptr;
    FK_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    return ev;
  }
  void destroy_event(int device, void* event) noexcept override {
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    if (cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) cudaGetLastError();
    cudaSetDevice(prev);
  }
  void record_event(int device, void* event, void* stream) override {
    cuda::DeviceGuard guard(device);  // the legacy default stream is the current device's
    FK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
  }
  bool event_done(int, void* event) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    FK_CUDA_CHECK(err);
    return true;
  }
  std::pair<size_t, size_t> mem_info(int device) noexcept override {
    int prev = 0;
    size_t free_b = 0, total_b = 0;
    if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {
      if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) free_b = total_b = 0;
      cudaSetDevice(prev);
    }
    cudaGetLastError();
    return {free_b, total_b};
  }
};

}  // namespace

struct CachingDeviceAllocator::Impl {
  CudaAllocatorBackend backend;
  detail::AllocatorCore core{backend};
};

CachingDeviceAllocator::CachingDeviceAllocator() : impl_(std::make_unique<Impl>()) {}

CachingDeviceAllocator& CachingDeviceAllocator::instance() {
  // Never destroyed: device memory must not be freed after the CUDA runtime shut down.
  static CachingDeviceAllocator* a = new CachingDeviceAllocator();
  return *a;
}

void* CachingDeviceAllocator::allocate(size_t bytes, int device, cudaStream_t stream) {
  return impl_->core.allocate(bytes, device, stream);
}

void CachingDeviceAllocator::release(void* ptr, cudaStream_t stream) { impl_->core.release(ptr, stream); }

void CachingDeviceAllocator::record_stream(void* ptr, cudaStream_t stream) { impl_->core.record_stream(ptr, stream); }

void CachingDeviceAllocator::empty_cache() { impl_->core.empty_cache(); }

AllocatorStats CachingDeviceAllocator::stats(int device) const { return impl_->core.stats(device); }

void CachingDeviceAllocator::reset_peak(int device) { impl_->core.reset_peak(device); }

}  // namespace fk
