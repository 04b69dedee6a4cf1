// The caching allocator's bookkeeping (binning, splitting, merging, stream safety, stats,
// OOM handling) on a fake device: runs without a GPU. CUDA builds only, where the core is
// compiled.
#include <gtest/gtest.h>

#if FK_WITH_CUDA
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/cuda/allocator_core.h"
#include "fk/status.h"

namespace fk::detail {
namespace {

// Device memory is a range of fake addresses (never dereferenced); events complete when
// the test says their stream has finished.
class FakeBackend final : public AllocatorBackend {
 public:
  size_t capacity = size_t{1} << 34;
  size_t used = 0;
  std::map<void*, size_t> segments;
  std::map<void*, std::pair<void*, bool>> events;  // event -> {stream, done}
  int mallocs = 0, frees = 0;

  void* malloc(int, size_t bytes) override {
    if (used + bytes > capacity) return nullptr;
    void* p = reinterpret_cast<void*>(next_);
    next_ += bytes + (size_t{1} << 21);  // gaps: segments are never adjacent
    used += bytes;
    segments[p] = bytes;
    ++mallocs;
    return p;
  }
  void free(int, void* ptr) override {
    auto it = segments.find(ptr);
    ASSERT_NE(it, segments.end()) << "free of a pointer that is not a segment base";
    used -= it->second;
    segments.erase(it);
    ++frees;
  }
  void* create_event(int) override {
    void* e = reinterpret_cast<void*>(next_event_++);
    events[e] = {nullptr, true};
    return e;
  }
  void destroy_event(int, void* e) noexcept override { events.erase(e); }
  void record_event(int, void* e, void* stream) override {
    if (stream == broken_stream) FK_FAIL(FK_ERR_CUDA, "cudaEventRecord failed: invalid resource handle");
    events.at(e) = {stream, false};
  }
  bool event_done(int, void* e) override { return events.at(e).second; }
  std::pair<size_t, size_t> mem_info(int) noexcept override { return {capacity - used, capacity}; }

  // Everything queued on `stream` so far has finished.
  void finish(void* stream) {
    for (auto& [e, st] : events)
      if (st.first == stream) st.second = true;
  }
  void* broken_stream = reinterpret_cast<void*>(0xbad);

 private:
  uintptr_t next_ = uintptr_t{1} << 40;
  uintptr_t next_event_ = 0x1000;
};

void* const kS1 = reinterpret_cast<void*>(0x11);
void* const kS2 = reinterpret_cast<void*>(0x22);
void* const kS3 = reinterpret_cast<void*>(0x33);
constexpr size_t MiB = size_t{1} << 20;

TEST(AllocatorCore, RoundsToSizeClasses) {
  EXPECT_EQ(AllocatorCore::round_size(0), 512u);
  EXPECT_EQ(AllocatorCore::round_size(1), 512u);
  EXPECT_EQ(AllocatorCore::round_size(512), 512u);
  EXPECT_EQ(AllocatorCore::round_size(513), 1024u);
  EXPECT_EQ(AllocatorCore::round_size(MiB), MiB);
  EXPECT_EQ(AllocatorCore::round_size(MiB + 1), 2 * MiB);
  EXPECT_EQ(AllocatorCore::round_size(3 * MiB), 4 * MiB);
  EXPECT_EQ(AllocatorCore::round_size(1000 * MiB + 7), 1002 * MiB);
  try {
    AllocatorCore::round_size(~size_t{0});
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_OUT_OF_MEMORY);
  }
}

TEST(AllocatorCore, SmallBlocksShareOneSegmentAndMergeBack) {
  FakeBackend be;
  {
    AllocatorCore core(be);
    void* a = core.allocate(100, 0, kS1);
    void* b = core.allocate(1000, 0, kS1);
    void* c = core.allocate(4096, 0, kS1);
    EXPECT_EQ(be.mallocs, 1);  // all from one 1 MiB segment
    EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), 512);
    EXPECT_EQ(static_cast<char*>(c) - static_cast<char*>(b), 1024);
    AllocatorStats s = core.stats(0);
    EXPECT_EQ(s.allocated_bytes, 512u + 1024u + 4096u);
    EXPECT_EQ(s.requested_bytes, 100u + 1000u + 4096u);
    EXPECT_EQ(s.reserved_bytes, MiB);
    core.release(b, kS1);
    core.release(a, kS1);
    core.release(c, kS1);
    // Everything merged back into one free block spanning the segment.
    EXPECT_EQ(core.num_cached_blocks(0), 1u);
    core.empty_cache();
    EXPECT_EQ(be.frees, 1);
    EXPECT_EQ(core.stats(0).reserved_bytes, 0u);
  }
  EXPECT_TRUE(be.segments.empty());
  EXPECT_TRUE(be.events.empty());
}

TEST(AllocatorCore, SameStreamReuseIsImmediate) {
  FakeBackend be;
  AllocatorCore core(be);
  void* p = core.allocate(8 * MiB, 0, kS1);
  core.release(p, kS1);  // its event on S1 has not completed
  void* q = core.allocate(8 * MiB, 0, kS1);
  EXPECT_EQ(p, q);
  EXPECT_EQ(core.stats(0).num_cache_hits, 1u);
  EXPECT_EQ(be.mallocs, 1);
}

TEST(AllocatorCore, OtherStreamWaitsForTheReleaseEvent) {
  FakeBackend be;
  AllocatorCore core(be);
  void* p = core.allocate(8 * MiB, 0, kS1);
  core.release(p, kS1);
  void* q = core.allocate(8 * MiB, 0, kS2);  // S1 may still be using p
  EXPECT_NE(p, q);
  core.release(q, kS2);
  be.finish(kS1);
  void* r = core.allocate(8 * MiB, 0, kS2);  // now p is idle and may go to S2
  EXPECT_TRUE(r == p || r == q);
  void* t = core.allocate(8 * MiB, 0, kS2);  // the other one: q was released on S2 itself
  EXPECT_NE(r, t);
  EXPECT_TRUE(t == p || t == q);
  EXPECT_EQ(be.mallocs, 2);
}

TEST(AllocatorCore, SmallSplitRemainderKeepsPendingEvents) {
  FakeBackend be;
  AllocatorCore core(be);
  void* a = core.allocate(512, 0, kS1);
  core.release(a, kS1);  // the whole segment is free again, its event on S1 pending
  void* b = core.allocate(512, 0, kS1);
  EXPECT_EQ(b, a);  // same stream: reused at once, and split
  void* c = core.allocate(512, 0, kS2);
  EXPECT_EQ(be.mallocs, 2) << "the remainder released on S1 must not go to S2 yet";
  EXPECT_NE(c, static_cast<char*>(a) + 512);
  be.finish(kS1);
  void* d = core.allocate(2048, 0, kS2);
  EXPECT_EQ(d, static_cast<char*>(a) + 512);
  EXPECT_EQ(be.mallocs, 2);
}

TEST(AllocatorCore, MergedBlockWaitsForEveryStream) {
  FakeBackend be;
  AllocatorCore core(be);
  void* a = core.allocate(MiB / 2, 0, kS1);
  void* b = core.allocate(MiB / 2, 0, kS2);
  ASSERT_EQ(be.mallocs, 1);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(MiB / 2));
  core.release(a, kS1);
  core.release(b, kS2);  // merged into one block: S1 and S2 events pending
  EXPECT_EQ(core.num_cached_blocks(0), 1u);
  void* c = core.allocate(MiB, 0, kS1);
  EXPECT_NE(c, a) << "the merged block holds S2's half, still busy";
  EXPECT_EQ(be.mallocs, 2);
  be.finish(kS2);
  void* d = core.allocate(MiB, 0, kS1);
  EXPECT_EQ(d, a);
  EXPECT_EQ(be.mallocs, 2);
}

TEST(AllocatorCore, RecordStreamDelaysReuseOnTheAllocatingStream) {
  FakeBackend be;
  AllocatorCore core(be);
  void* p = core.allocate(4 * MiB, 0, kS1);
  core.record_stream(p, kS2);
  core.release(p, kS1);
  void* q = core.allocate(4 * MiB, 0, kS1);
  EXPECT_NE(p, q) << "S2 may still read p";
  be.finish(kS2);
  void* r = core.allocate(4 * MiB, 0, kS1);
  EXPECT_EQ(p, r);
  // A third stream needs S1's event as well.
  core.release(r, kS1);
  void* t = core.allocate(4 * MiB, 0, kS3);
  EXPECT_NE(t, p);
  be.finish(kS1);
  void* u = core.allocate(4 * MiB, 0, kS3);
  EXPECT_EQ(u, p);
}

TEST(AllocatorCore, ReleaseOnAnotherStreamAlsoGuardsTheAllocatingStream) {
  FakeBackend be;
  AllocatorCore core(be);
  void* p = core.allocate(4 * MiB, 0, kS1);
  core.release(p, kS2);  // used on S1 (allocated there) and S2
  EXPECT_NE(core.allocate(4 * MiB, 0, kS2), p);
  be.finish(kS1);
  EXPECT_EQ(core.allocate(4 * MiB, 0, kS2), p);
}

TEST(AllocatorCore, LargeBlocksAreNotWastedOnSmallerRequests) {
  FakeBackend be;
  AllocatorCore core(be);
  void* big = core.allocate(64 * MiB, 0, kS1);
  core.release(big, kS1);
  void* small = core.allocate(8 * MiB, 0, kS1);  // 64 MiB is far too big for 8 MiB
  EXPECT_NE(small, big);
  void* close = core.allocate(60 * MiB, 0, kS1);  // within 1/8: reused
  EXPECT_EQ(close, big);
  EXPECT_EQ(core.stats(0).allocated_bytes, 64 * MiB + 8 * MiB);
}

TEST(AllocatorCore, StatsPeakAndReset) {
  FakeBackend be;
  AllocatorCore core(be);
  void* a = core.allocate(10 * MiB, 0, kS1);
  void* b = core.allocate(20 * MiB, 0, kS1);
  core.release(a, kS1);
  AllocatorStats s = core.stats(0);
  EXPECT_EQ(s.allocated_bytes, 20 * MiB);
  EXPECT_EQ(s.peak_allocated_bytes, 30 * MiB);
  EXPECT_EQ(s.reserved_bytes, 30 * MiB);
  EXPECT_EQ(s.cached_bytes(), 10 * MiB);
  EXPECT_EQ(s.num_allocations, 2u);
  EXPECT_EQ(s.num_releases, 1u);
  core.reset_peak(0);
  EXPECT_EQ(core.stats(0).peak_allocated_bytes, 20 * MiB);
  core.empty_cache();
  s = core.stats(0);
  EXPECT_EQ(s.reserved_bytes, 20 * MiB);
  EXPECT_EQ(s.num_device_frees, 1u);
  EXPECT_EQ(core.stats(1).num_allocations, 0u);  // another device: untouched
  core.release(b, kS1);
}

TEST(AllocatorCore, OutOfMemoryFreesTheCacheAndRetries) {
  FakeBackend be;
  be.capacity = 100 * MiB;
  AllocatorCore core(be);
  void* a = core.allocate(60 * MiB, 0, kS1);
  core.release(a, kS1);  // cached: the device has only 40 MiB left
  void* b = core.allocate(80 * MiB, 0, kS1);
  EXPECT_NE(b, nullptr);
  AllocatorStats s = core.stats(0);
  EXPECT_EQ(s.num_oom_retries, 1u);
  EXPECT_EQ(s.num_device_frees, 1u);
  EXPECT_EQ(s.reserved_bytes, 80 * MiB);
}

TEST(AllocatorCore, OutOfMemoryErrorNamesSizeAndStats) {
  FakeBackend be;
  be.capacity = 100 * MiB;
  AllocatorCore core(be);
  void* a = core.allocate(30 * MiB, 0, kS1);
  try {
    core.allocate(size_t{1} << 40, 0, kS1);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_OUT_OF_MEMORY);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory on device 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1.00 TiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1099511627776 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("30.00 MiB allocated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free of 100.00 MiB"), std::string::npos) << msg;
  }
  core.release(a, kS1);
}

TEST(AllocatorCore, UnknownPointerIsAClearError) {
  FakeBackend be;
  AllocatorCore core(be);
  void* a = core.allocate(1000, 0, kS1);
  core.release(a, kS1);
  try {
    core.release(a, kS1);
    FAIL() << "double free not caught";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("double free"), std::string::npos);
  }
  EXPECT_THROW(core.record_stream(a, kS2), Error);
}

TEST(AllocatorCore, BlockWhoseEventCannotBeRecordedIsNeverReused) {
  FakeBackend be;
  AllocatorCore core(be);
  void* p = core.allocate(4 * MiB, 0, kS1);
  testing::internal::CaptureStderr();
  core.release(p, be.broken_stream);  // must not throw: releases run in destructors
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not reused"), std::string::npos);
  be.finish(kS1);
  EXPECT_NE(core.allocate(4 * MiB, 0, kS1), p);
  EXPECT_EQ(core.stats(0).allocated_bytes, 4 * MiB);
}

TEST(AllocatorCore, ManyInterleavedAllocationsKeepTheBooksBalanced) {
  FakeBackend be;
  {
    AllocatorCore core(be);
    struct Live {
      char* ptr;
      size_t size;
      void* stream;
    };
    std::vector<Live> live;
    void* streams[] = {kS1, kS2, kS3};
    uint64_t x = 12345;
    auto rnd = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
    for (int i = 0; i < 3000; ++i) {
      if (live.size() < 50 && rnd() % 3 != 0) {
        const size_t sizes[] = {1, 700, 4096, 100000, 900000, 3 * MiB, 9 * MiB};
        void* s = streams[rnd() % 3];
        const size_t n = sizes[rnd() % 7];
        char* p = static_cast<char*>(core.allocate(n, 0, s));
        for (const Live& l : live)
          ASSERT_TRUE(p + n <= l.ptr || l.ptr + l.size <= p) << "a live block was handed out twice";
        live.push_back({p, n, s});
      } else if (!live.empty()) {
        const size_t k = rnd() % live.size();
        core.release(live[k].ptr, live[k].stream);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      }
      if (i % 97 == 0) be.finish(streams[rnd() % 3]);
      if (i % 500 == 0) core.empty_cache();
    }
    for (const Live& l : live) core.release(l.ptr, l.stream);
    EXPECT_EQ(core.stats(0).allocated_bytes, 0u);
    EXPECT_EQ(core.stats(0).requested_bytes, 0u);
    core.empty_cache();
    EXPECT_EQ(core.stats(0).reserved_bytes, 0u);
    EXPECT_TRUE(be.segments.empty());
  }
  EXPECT_TRUE(be.events.empty());
}

TEST(AllocatorCore, ThreadsNeverShareABlock) {
  FakeBackend be;  // only called under the core's lock
  AllocatorCore core(be);
  std::mutex mu;
  std::map<char*, char*> live;  // start -> end, over all threads
  std::atomic<bool> overlap{false};
  auto worker = [&](int id) {
    void* stream = reinterpret_cast<void*>(static_cast<uintptr_t>(0x100 + id));
    uint64_t x = 977 * (id + 1);
    std::vector<std::pair<char*, size_t>> mine;
    for (int i = 0; i < 1500; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      if (mine.size() < 20 && (x >> 40) % 3 != 0) {
        const size_t n = size_t{1} << ((x >> 20) % 23);  // 1 B .. 4 MiB
        char* p = static_cast<char*>(core.allocate(n, 0, stream));
        std::lock_guard lock(mu);
        auto next = live.lower_bound(p);
        if (next != live.end() && next->first < p + n) overlap = true;
        if (next != live.begin() && std::prev(next)->second > p) overlap = true;
        live[p] = p + n;
        mine.push_back({p, n});
      } else if (!mine.empty()) {
        auto [p, n] = mine.back();
        mine.pop_back();
        {
          std::lock_guard lock(mu);
          live.erase(p);
        }
        core.release(p, stream);
      }
    }
    for (auto [p, n] : mine) {
      {
        std::lock_guard lock(mu);
        live.erase(p);
      }
      core.release(p, stream);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlap.load()) << "two threads held overlapping blocks";
  EXPECT_EQ(core.stats(0).allocated_bytes, 0u);
}

}  // namespace
}  // namespace fk::detail

#else
TEST(AllocatorCore, NeedsACudaBuild) { GTEST_SKIP() << "the caching allocator is built with CUDA only"; }
#endif
