// The caching device allocator: size-class bins, stream-aware reuse, statistics, and
// release on request. CUDA builds only (include from CUDA-enabled translation units).
//
// Size classes:
//   small  (<= 1 MiB): rounded up to 512 B and carved out of 1 MiB segments; neighbouring
//                      free blocks of a segment merge again.
//   large  (>  1 MiB): rounded up to 2 MiB, one cudaMalloc each; a cached block serves a
//                      later request it exceeds by at most max(2 MiB, 1/8 of the request),
//                      so huge buffers are reused only for nearly the same size.
// Stream safety: a block released on stream S is reused on S at once (stream order makes
// that safe). For any other stream it is reused only after an event recorded on S at
// release time has completed (events are queried, never waited on). Streams named with
// record_stream() get such an event too.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fk {

struct AllocatorStats {
  uint64_t allocated_bytes = 0;       // handed out to callers now (rounded block sizes)
  uint64_t requested_bytes = 0;       // what the callers asked for, of allocated_bytes
  uint64_t reserved_bytes = 0;        // held from cudaMalloc (allocated + cached)
  uint64_t peak_allocated_bytes = 0;
  uint64_t peak_reserved_bytes = 0;
  uint64_t num_allocations = 0;       // allocate() calls
  uint64_t num_releases = 0;          // release() calls
  uint64_t num_cache_hits = 0;        // served from the cache
  uint64_t num_device_mallocs = 0;    // cudaMalloc calls that succeeded
  uint64_t num_device_frees = 0;      // cudaFree calls (empty_cache, OOM retry)
  uint64_t num_oom_retries = 0;       // cudaMalloc failures answered by freeing the cache

  uint64_t cached_bytes() const { return reserved_bytes - allocated_bytes; }
};

class CachingDeviceAllocator {
 public:
  static CachingDeviceAllocator& instance();

  // Throws fk::Error(FK_ERR_OUT_OF_MEMORY) naming the size and the statistics when the
  // device has no room even after the cache was given back.
  void* allocate(size_t bytes, int device, cudaStream_t stream);
  // Returns the block to the cache. Reuse on `stream` is immediate (stream order makes it
  // safe); reuse on another stream waits for an event recorded here. Never throws for
  // CUDA failures (it is called from destructors): a block whose event cannot be recorded
  // is kept out of the cache. An unknown pointer is an fk::Error.
  void release(void* ptr, cudaStream_t stream);
  // Declares that `ptr` (a live block) is also used on `stream`: its release then records
  // an event there as well, so the block is not reused before that stream's work is done.
  void record_stream(void* ptr, cudaStream_t stream);
  // Gives every cached (unused) block back to the driver, on every device.
  void empty_cache();
  AllocatorStats stats(int device = 0) const;
  void reset_peak(int device = 0);

  struct Impl;

 private:
  CachingDeviceAllocator();
  std::unique_ptr<Impl> impl_;
};

}  // namespace fk
