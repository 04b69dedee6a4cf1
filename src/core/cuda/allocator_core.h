// The bookkeeping of the caching device allocator (core/cuda/allocator.h), apart from the CUDA
// calls it makes: those go through AllocatorBackend, so the binning, splitting, merging
// and stream-safety rules are tested on the CPU with a fake backend, and
// CachingDeviceAllocator plugs in the CUDA runtime.
//
// Streams and events are opaque handles here (cudaStream_t / cudaEvent_t in production).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cuda/allocator.h"

namespace fk::detail {

class AllocatorBackend {
 public:
  virtual ~AllocatorBackend() = default;
  // nullptr when the device is out of memory; throws fk::Error for any other failure.
  virtual void* malloc(int device, size_t bytes) = 0;
  virtual void free(int device, void* ptr) = 0;
  virtual void* create_event(int device) = 0;
  virtual void destroy_event(int device, void* event) noexcept = 0;
  virtual void record_event(int device, void* event, void* stream) = 0;
  // Whether the work before the event has completed; must not wait.
  virtual bool event_done(int device, void* event) = 0;
  // {free, total} bytes of the device, for out-of-memory messages ({0, 0} if unknown).
  virtual std::pair<size_t, size_t> mem_info(int device) noexcept = 0;
};

class AllocatorCore {
 public:
  static constexpr size_t kSmallLimit = size_t{1} << 20;    // requests up to this are "small"
  static constexpr size_t kSmallRound = 512;                // small request granularity
  static constexpr size_t kSmallSegment = size_t{1} << 20;  // small blocks are carved from these
  static constexpr size_t kLargeRound = size_t{2} << 20;    // large request granularity
  // How many cached candidates one allocation examines before asking the driver: bounds
  // the time spent on blocks whose other-stream events are still pending.
  static constexpr int kMaxCandidates = 64;

  // The block size a request gets. Throws FK_ERR_OUT_OF_MEMORY for sizes no device has.
  static size_t round_size(size_t bytes);
  // Largest cached block a large request of `rounded` bytes may take.
  static size_t max_reuse_size(size_t rounded);

  explicit AllocatorCore(AllocatorBackend& backend);
  ~AllocatorCore();  // gives every segment and event back to the backend
  AllocatorCore(const AllocatorCore&) = delete;
  AllocatorCore& operator=(const AllocatorCore&) = delete;

  void* allocate(size_t bytes, int device, void* stream);
  void release(void* ptr, void* stream);
  void record_stream(void* ptr, void* stream);
  void empty_cache();
  AllocatorStats stats(int device) const;
  void reset_peak(int device);
  size_t num_cached_blocks(int device) const;  // free blocks held, for tests and reports

 private:
  struct EventRec;
  struct Block;
  struct DeviceState;
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };

  DeviceState& state(int device);
  Block* take_cached(DeviceState& ds, size_t size, void* stream);
  bool usable_on(Block* b, void* stream);
  void split(DeviceState& ds, Block* b, size_t size);
  void merge_into_pool(DeviceState& ds, Block* b);
  void release_cached(DeviceState& ds);
  std::shared_ptr<EventRec> record_on(DeviceState& ds, void* stream);
  [[noreturn]] void throw_out_of_memory(const DeviceState& ds, size_t bytes, size_t rounded);

  AllocatorBackend& backend_;
  mutable std::mutex mu_;
  uint64_t event_seq_ = 0;
  std::map<int, std::unique_ptr<DeviceState>> devices_;
  std::unordered_map<void*, Block*> live_;
};

}  // namespace fk::detail
