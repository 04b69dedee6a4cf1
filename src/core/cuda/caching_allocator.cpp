// Placeholder-free minimal version: every block comes from cudaMalloc and goes back on
// release after the stream drains. Replaced by the binned caching allocator.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "fk/allocator.h"
#include "fk/cuda/check.h"

namespace fk {

struct CachingDeviceAllocator::Impl {
  std::mutex mu;
  std::unordered_map<void*, size_t> live;
  AllocatorStats stats;
};

CachingDeviceAllocator::CachingDeviceAllocator() : impl_(std::make_unique<Impl>()) {}

CachingDeviceAllocator& CachingDeviceAllocator::instance() {
  static CachingDeviceAllocator* a = new CachingDeviceAllocator();  // never destroyed: outlives statics
  return *a;
}

void* CachingDeviceAllocator::allocate(size_t bytes, int device, cudaStream_t) {
  FK_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  FK_CUDA_CHECK(cudaMalloc(&p, bytes));
  std::lock_guard lk(impl_->mu);
  impl_->live[p] = bytes;
  impl_->stats.allocated_bytes += bytes;
  impl_->stats.reserved_bytes += bytes;
  impl_->stats.num_allocations++;
  impl_->stats.num_device_mallocs++;
  return p;
}

void CachingDeviceAllocator::release(void* ptr, cudaStream_t stream) {
  cudaStreamSynchronize(stream);
  cudaFree(ptr);
  std::lock_guard lk(impl_->mu);
  auto it = impl_->live.find(ptr);
  if (it != impl_->live.end()) {
    impl_->stats.allocated_bytes -= it->second;
    impl_->stats.reserved_bytes -= it->second;
    impl_->live.erase(it);
  }
  impl_->stats.num_device_frees++;
}

void CachingDeviceAllocator::empty_cache() {}
AllocatorStats CachingDeviceAllocator::stats(int) const { return impl_->stats; }
void CachingDeviceAllocator::reset_peak(int) {}

}  // namespace fk
