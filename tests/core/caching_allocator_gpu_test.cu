// The caching allocator on a real device: reuse, cross-stream safety, statistics,
// empty_cache and the out-of-memory error (GPU label; skips without a device).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda/allocator.h"
#include "fk/cuda/check.h"
#include "fk/cuda/stream.h"
#include "support/test_seed.h"

namespace fk {
namespace {

// Busy-waits about `ns` nanoseconds, then writes `value` to every element: the "late"
// writer that would corrupt a block handed to another stream too early.
__global__ void sleep_then_fill(int* p, int n, int value, unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(100000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = value;
}

__global__ void fill(int* p, int n, int value) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = value;
}

std::vector<int> download(const int* p, int n) {
  std::vector<int> h(n);
  FK_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost));
  return h;
}

auto& alloc() { return CachingDeviceAllocator::instance(); }

// Starts from an empty cache, so that earlier tests' blocks do not answer the requests.
void fresh_cache() {
  FK_CUDA_CHECK(cudaDeviceSynchronize());
  alloc().empty_cache();
}

TEST(CachingAllocatorGpu, ReusesABlockOnTheSameStreamAtOnce) {
  FK_REQUIRE_GPU();
  fresh_cache();
  cuda::Stream s;
  const int n = 3 << 20;  // 12 MiB: a large block
  const AllocatorStats before = alloc().stats(0);
  int* p = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, s));
  sleep_then_fill<<<4, 256, 0, s>>>(p, n, 1, 20'000'000);
  FK_CUDA_CHECK_LAUNCH();
  alloc().release(p, s);
  int* q = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, s));  // still busy, same stream
  EXPECT_EQ(p, q);
  fill<<<64, 256, 0, s>>>(q, n, 2);
  FK_CUDA_CHECK_LAUNCH();
  s.synchronize();
  for (int v : download(q, n)) ASSERT_EQ(v, 2);  // stream order: the later fill wins
  alloc().release(q, s);
  EXPECT_GE(alloc().stats(0).num_cache_hits, before.num_cache_hits + 1);
}

TEST(CachingAllocatorGpu, AnotherStreamDoesNotGetABlockStillInUse) {
  FK_REQUIRE_GPU();
  cuda::Stream a, b;
  for (int n : {1000, 3 << 20}) {  // a small and a large block
    fresh_cache();
    int* p = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, a));
    sleep_then_fill<<<4, 256, 0, a>>>(p, n, 1, 200'000'000);  // 200 ms, then writes 1
    FK_CUDA_CHECK_LAUNCH();
    alloc().release(p, a);
    int* q = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, b));
    EXPECT_NE(p, q) << "block released on a busy stream went to another stream";
    fill<<<64, 256, 0, b>>>(q, n, 2);
    FK_CUDA_CHECK_LAUNCH();
    a.synchronize();
    b.synchronize();
    for (int v : download(q, n)) ASSERT_EQ(v, 2) << "the late writer on stream a overwrote stream b's block";
    alloc().release(q, b);
    // Once a has finished, its block may serve b: two requests, no new device memory.
    const uint64_t mallocs = alloc().stats(0).num_device_mallocs;
    int* r = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, b));
    int* t = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, b));
    EXPECT_EQ(alloc().stats(0).num_device_mallocs, mallocs) << "the idle block was not reused across streams";
    alloc().release(r, b);
    alloc().release(t, b);
  }
}

TEST(CachingAllocatorGpu, RecordStreamProtectsAReader) {
  FK_REQUIRE_GPU();
  fresh_cache();
  cuda::Stream a, b;
  const int n = 1 << 20;
  int* p = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, a));
  sleep_then_fill<<<4, 256, 0, b>>>(p, n, 1, 200'000'000);  // b still uses p
  FK_CUDA_CHECK_LAUNCH();
  alloc().record_stream(p, b);
  alloc().release(p, a);
  int* q = static_cast<int*>(alloc().allocate(n * sizeof(int), 0, a));
  EXPECT_NE(p, q);
  fill<<<64, 256, 0, a>>>(q, n, 2);
  FK_CUDA_CHECK_LAUNCH();
  FK_CUDA_CHECK(cudaDeviceSynchronize());
  for (int v : download(q, n)) ASSERT_EQ(v, 2);
  alloc().release(q, a);
}

TEST(CachingAllocatorGpu, StatisticsAndEmptyCache) {
  FK_REQUIRE_GPU();
  cuda::Stream s;
  fresh_cache();
  const AllocatorStats s0 = alloc().stats(0);
  void* small = alloc().allocate(1000, 0, s);
  void* large = alloc().allocate(5 << 20, 0, s);
  AllocatorStats s1 = alloc().stats(0);
  EXPECT_EQ(s1.allocated_bytes - s0.allocated_bytes, 1024u + (6u << 20));
  EXPECT_EQ(s1.requested_bytes - s0.requested_bytes, 1000u + (5u << 20));
  EXPECT_EQ(s1.num_allocations - s0.num_allocations, 2u);
  EXPECT_GE(s1.reserved_bytes, s1.allocated_bytes);
  EXPECT_GE(s1.peak_allocated_bytes, s1.allocated_bytes);
  alloc().release(small, s);
  alloc().release(large, s);
  AllocatorStats s2 = alloc().stats(0);
  EXPECT_EQ(s2.allocated_bytes, s0.allocated_bytes);
  EXPECT_GT(s2.cached_bytes(), 0u);
  alloc().reset_peak(0);
  EXPECT_EQ(alloc().stats(0).peak_allocated_bytes, s2.allocated_bytes);
  s.synchronize();
  alloc().empty_cache();
  AllocatorStats s3 = alloc().stats(0);
  EXPECT_EQ(s3.cached_bytes(), 0u);
  EXPECT_GT(s3.num_device_frees, s2.num_device_frees);
}

TEST(CachingAllocatorGpu, OutOfMemoryIsAClearError) {
  FK_REQUIRE_GPU();
  try {
    alloc().allocate(size_t{1} << 50, 0, nullptr);  // 1 PiB
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_OUT_OF_MEMORY);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1.00 PiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
  }
  // The failure leaves the runtime usable.
  void* p = alloc().allocate(4096, 0, nullptr);
  FK_CUDA_CHECK(cudaMemset(p, 0, 4096));
  alloc().release(p, nullptr);
  FK_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace fk
