// The caching device allocator: size-class bins, stream-aware reuse, statistics, and
// release on request. CUDA builds only (include from CUDA-enabled translation units).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fk {

struct AllocatorStats {
  uint64_t allocated_bytes = 0;       // handed out to callers now
  uint64_t reserved_bytes = 0;        // held from cudaMalloc (allocated + cached)
  uint64_t peak_allocated_bytes = 0;
  uint64_t num_allocations = 0;       // allocate() calls
  uint64_t num_cache_hits = 0;        // served from the cache
  uint64_t num_device_mallocs = 0;    // cudaMalloc calls
  uint64_t num_device_frees = 0;      // cudaFree calls (empty_cache, OOM retry)
};

class CachingDeviceAllocator {
 public:
  static CachingDeviceAllocator& instance();

  void* allocate(size_t bytes, int device, cudaStream_t stream);
  // Returns the block to the cache. Reuse on `stream` is immediate (stream order makes it
  // safe); reuse on another stream waits for an event recorded here.
  void release(void* ptr, cudaStream_t stream);
  // Gives every cached (unused) block back to the driver.
  void empty_cache();
  AllocatorStats stats(int device = 0) const;
  void reset_peak(int device = 0);

  struct Impl;

 private:
  CachingDeviceAllocator();
  std::unique_ptr<Impl> impl_;
};

}  // namespace fk
