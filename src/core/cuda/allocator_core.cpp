#include "core/cuda/allocator_core.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "fk/status.h"

namespace fk::detail {

namespace {
std::string format_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}
size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
}  // namespace

// An event recorded on `stream` when a block was released. Shared by the pieces of a
// block that is split or merged; goes back to its device's pool when the last one drops it.
struct AllocatorCore::EventRec {
  void* event = nullptr;
  void* stream = nullptr;
  uint64_t seq = 0;  // record order: a later event on the same stream implies the earlier
  std::vector<void*>* pool = nullptr;
  ~EventRec() { pool->push_back(event); }
};

struct AllocatorCore::Block {
  void* ptr = nullptr;
  size_t size = 0;
  int device = 0;
  bool small = false;
  bool allocated = false;
  bool lost = false;  // its release could not record an event: never reused
  size_t requested = 0;
  Block* prev = nullptr;  // address-order neighbours inside one small segment
  Block* next = nullptr;
  void* alloc_stream = nullptr;
  std::vector<void*> use_streams;                 // while allocated: streams from record_stream
  std::vector<std::shared_ptr<EventRec>> events;  // while free: at most one per stream

  bool is_free() const { return !allocated && !lost; }
  bool whole_segment() const { return prev == nullptr && next == nullptr; }
};

struct AllocatorCore::DeviceState {
  int device = 0;
  std::vector<void*> free_events;  // declared first: outlives the events the blocks hold
  std::set<Block*, BlockLess> small_free, large_free;
  std::vector<Block*> lost;
  AllocatorStats stats;

  std::set<Block*, BlockLess>& pool_of(const Block* b) { return b->small ? small_free : large_free; }
  void on_reserve(size_t n) {
    stats.reserved_bytes += n;
    stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, stats.reserved_bytes);
  }
};

bool AllocatorCore::BlockLess::operator()(const Block* a, const Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

size_t AllocatorCore::round_size(size_t bytes) {
  if (bytes <= kSmallLimit) return std::max(kSmallRound, round_up(bytes, kSmallRound));
  if (bytes > std::numeric_limits<size_t>::max() - kLargeRound)
    FK_FAIL(FK_ERR_OUT_OF_MEMORY, "CUDA out of memory: tried to allocate ", bytes, " bytes, more than any device has");
  return round_up(bytes, kLargeRound);
}

size_t AllocatorCore::max_reuse_size(size_t rounded) {
  if (rounded <= kSmallLimit) return kSmallSegment;
  return rounded + std::max(kLargeRound, rounded / 8);
}

AllocatorCore::AllocatorCore(AllocatorBackend& backend) : backend_(backend) {}

AllocatorCore::~AllocatorCore() {
  std::vector<Block*> all;
  for (auto& [ptr, b] : live_) all.push_back(b);
  live_.clear();
  for (auto& [dev, ds] : devices_) {
    all.insert(all.end(), ds->small_free.begin(), ds->small_free.end());
    all.insert(all.end(), ds->large_free.begin(), ds->large_free.end());
    all.insert(all.end(), ds->lost.begin(), ds->lost.end());
    ds->small_free.clear();
    ds->large_free.clear();
    ds->lost.clear();
  }
  for (Block* b : all) {
    // A segment's first block starts at the address cudaMalloc returned.
    if (b->prev == nullptr) {
      try {
        backend_.free(b->device, b->ptr);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fk: warning: freeing a device segment at shutdown: %s\n", e.what());
      }
    }
  }
  for (Block* b : all) delete b;  // drops the events into their pools
  for (auto& [dev, ds] : devices_)
    for (void* ev : ds->free_events) backend_.destroy_event(dev, ev);
}

AllocatorCore::DeviceState& AllocatorCore::state(int device) {
  auto& slot = devices_[device];
  if (!slot) {
    slot = std::make_unique<DeviceState>();
    slot->device = device;
  }
  return *slot;
}

bool AllocatorCore::usable_on(Block* b, void* stream) {
  bool ok = true;
  auto& evs = b->events;
  for (size_t i = 0; i < evs.size();) {
    if (evs[i]->stream == stream) {  // same stream: ordered after the release already
      ++i;
    } else if (backend_.event_done(b->device, evs[i]->event)) {
      evs.erase(evs.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ok = false;
      ++i;
    }
  }
  return ok;
}

AllocatorCore::Block* AllocatorCore::take_cached(DeviceState& ds, size_t size, void* stream) {
  auto& pool = size <= kSmallLimit ? ds.small_free : ds.large_free;
  const size_t max_size = max_reuse_size(size);
  Block key;
  key.size = size;  // ptr nullptr sorts first among equal sizes
  int examined = 0;
  for (auto it = pool.lower_bound(&key); it != pool.end() && (*it)->size <= max_size; ++it) {
    Block* b = *it;
    if (usable_on(b, stream)) {
      pool.erase(it);
      return b;
    }
    if (++examined >= kMaxCandidates) break;
  }
  return nullptr;
}

void AllocatorCore::split(DeviceState& ds, Block* b, size_t size) {
  if (!b->small || b->size - size < kSmallRound) return;
  Block* rest = new Block;
  rest->ptr = static_cast<char*>(b->ptr) + size;
  rest->size = b->size - size;
  rest->device = b->device;
  rest->small = true;
  rest->events = b->events;  // the remainder was released with the same streams pending
  rest->prev = b;
  rest->next = b->next;
  if (b->next) b->next->prev = rest;
  b->next = rest;
  b->size = size;
  ds.small_free.insert(rest);
}

namespace {
// Keeps one event per stream: on one stream a later event implies every earlier one.
template <class Events>
void merge_events(Events& dst, const Events& src) {
  for (const auto& e : src) {
    auto same = std::find_if(dst.begin(), dst.end(), [&](const auto& d) { return d->stream == e->stream; });
    if (same == dst.end()) dst.push_back(e);
    else if ((*same)->seq < e->seq) *same = e;
  }
}
}  // namespace

void AllocatorCore::merge_into_pool(DeviceState& ds, Block* b) {
  if (b->small) {
    if (Block* p = b->prev; p && p->is_free()) {
      ds.small_free.erase(p);
      p->size += b->size;
      p->next = b->next;
      if (b->next) b->next->prev = p;
      merge_events(p->events, b->events);
      delete b;
      b = p;
    }
    if (Block* n = b->next; n && n->is_free()) {
      ds.small_free.erase(n);
      b->size += n->size;
      b->next = n->next;
      if (n->next) n->next->prev = b;
      merge_events(b->events, n->events);
      delete n;
    }
  }
  ds.pool_of(b).insert(b);
}

void AllocatorCore::release_cached(DeviceState& ds) {
  for (auto* pool : {&ds.small_free, &ds.large_free}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (!b->whole_segment()) {
        ++it;
        continue;
      }
      // cudaFree waits for the device, so pending release events no longer matter.
      backend_.free(ds.device, b->ptr);
      ds.stats.reserved_bytes -= b->size;
      ds.stats.num_device_frees++;
      it = pool->erase(it);
      delete b;
    }
  }
}

std::shared_ptr<AllocatorCore::EventRec> AllocatorCore::record_on(DeviceState& ds, void* stream) {
  void* ev = nullptr;
  if (!ds.free_events.empty()) {
    ev = ds.free_events.back();
    ds.free_events.pop_back();
  } else {
    ev = backend_.create_event(ds.device);
  }
  auto rec = std::make_shared<EventRec>();
  rec->event = ev;
  rec->stream = stream;
  rec->pool = &ds.free_events;  // from here on the event returns to the pool whatever happens
  rec->seq = ++event_seq_;
  backend_.record_event(ds.device, ev, stream);
  return rec;
}

void AllocatorCore::throw_out_of_memory(const DeviceState& ds, size_t bytes, size_t rounded) {
  const auto [free_b, total_b] = backend_.mem_info(ds.device);
  const AllocatorStats& s = ds.stats;
  FK_FAIL(FK_ERR_OUT_OF_MEMORY, "CUDA out of memory on device ", ds.device, ": tried to allocate ",
          format_bytes(bytes), " (", bytes, " bytes, ", format_bytes(rounded), " after rounding); the device has ",
          format_bytes(free_b), " free of ", format_bytes(total_b),
          "; the caching allocator of this process holds ", format_bytes(s.allocated_bytes), " allocated, ",
          format_bytes(s.cached_bytes()), " cached, ", format_bytes(s.reserved_bytes), " reserved (peak ",
          format_bytes(s.peak_allocated_bytes), " allocated, ", format_bytes(s.peak_reserved_bytes),
          " reserved); the cache was emptied before the retry");
}

void* AllocatorCore::allocate(size_t bytes, int device, void* stream) {
  FK_CHECK(device >= 0, "allocate on device ", device);
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallLimit;
  std::lock_guard lock(mu_);
  DeviceState& ds = state(device);
  ds.stats.num_allocations++;

  Block* b = take_cached(ds, size, stream);
  if (b) {
    ds.stats.num_cache_hits++;
  } else {
    const size_t segment = small ? kSmallSegment : size;
    void* p = backend_.malloc(device, segment);
    if (!p) {
      ds.stats.num_oom_retries++;
      release_cached(ds);
      p = backend_.malloc(device, segment);
      if (!p) throw_out_of_memory(ds, bytes, size);
    }
    ds.stats.num_device_mallocs++;
    ds.on_reserve(segment);
    b = new Block;
    b->ptr = p;
    b->size = segment;
    b->device = device;
    b->small = small;
  }
  split(ds, b, size);
  b->events.clear();  // usable on `stream`: any still pending are on this same stream
  b->allocated = true;
  b->requested = bytes;
  b->alloc_stream = stream;
  b->use_streams.clear();
  live_[b->ptr] = b;

  AllocatorStats& st = ds.stats;
  st.allocated_bytes += b->size;
  st.requested_bytes += bytes;
  st.peak_allocated_bytes = std::max(st.peak_allocated_bytes, st.allocated_bytes);
  return b->ptr;
}

void AllocatorCore::record_stream(void* ptr, void* stream) {
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  FK_CHECK(it != live_.end(), "record_stream: ", ptr, " is not a live block of the caching allocator");
  Block* b = it->second;
  if (stream != b->alloc_stream &&
      std::find(b->use_streams.begin(), b->use_streams.end(), stream) == b->use_streams.end())
    b->use_streams.push_back(stream);
}

void AllocatorCore::release(void* ptr, void* stream) {
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  FK_CHECK(it != live_.end(), "release: ", ptr,
           " is not a live block of the caching allocator (double free, or not allocated here)");
  Block* b = it->second;
  live_.erase(it);
  DeviceState& ds = state(b->device);
  ds.stats.allocated_bytes -= b->size;
  ds.stats.requested_bytes -= b->requested;
  ds.stats.num_releases++;
  b->allocated = false;

  // Every stream that may still touch the block gets an event: the releasing stream, the
  // one it was allocated on, and those named by record_stream.
  std::vector<void*> streams{stream};
  for (void* s : b->use_streams)
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  if (std::find(streams.begin(), streams.end(), b->alloc_stream) == streams.end())
    streams.push_back(b->alloc_stream);
  b->use_streams.clear();
  try {
    for (void* s : streams) b->events.push_back(record_on(ds, s));
  } catch (const std::exception& e) {
    // Without the event nobody can tell when the block is idle: keep it out of the cache.
    std::fprintf(stderr, "fk: warning: device block %p (%zu bytes) is not reused: %s\n", b->ptr, b->size, e.what());
    b->events.clear();
    b->lost = true;
    ds.lost.push_back(b);
    return;
  }
  merge_into_pool(ds, b);
}

void AllocatorCore::empty_cache() {
  std::lock_guard lock(mu_);
  for (auto& [dev, ds] : devices_) release_cached(*ds);
}

AllocatorStats AllocatorCore::stats(int device) const {
  std::lock_guard lock(mu_);
  auto it = devices_.find(device);
  return it == devices_.end() ? AllocatorStats{} : it->second->stats;
}

void AllocatorCore::reset_peak(int device) {
  std::lock_guard lock(mu_);
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  AllocatorStats& s = it->second->stats;
  s.peak_allocated_bytes = s.allocated_bytes;
  s.peak_reserved_bytes = s.reserved_bytes;
}

size_t AllocatorCore::num_cached_blocks(int device) const {
  std::lock_guard lock(mu_);
  auto it = devices_.find(device);
  return it == devices_.end() ? 0 : it->second->small_free.size() + it->second->large_free.size();
}

}  // namespace fk::detail
