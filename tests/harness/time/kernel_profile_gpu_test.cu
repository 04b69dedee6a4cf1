// The kernel profile on real trace records: known kernels, launched a known number of
// times, come back under their names with launch counts, and the exclusive times add up.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/time/kernel_profile.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

// Spins for about `cycles` clock cycles: a kernel of a known, non-trivial duration.
__global__ void profile_spin_a(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
__global__ void profile_spin_b(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

const KernelProfileRow* find_row(const KernelProfile& p, const std::string& part) {
  for (const auto& r : p.rows)
    if (r.name.find(part) != std::string::npos) return &r;
  return nullptr;
}

TEST(KernelProfileGpu, NamesCountsAndExclusiveTimesOfTracedKernels) {
  FK_REQUIRE_GPU();
  if (!kernel_trace_available()) GTEST_SKIP() << "no CUPTI";
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  profile_spin_a<<<1, 32, 0, s>>>(1000);  // load the module before the trace window
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  kernel_trace_start();
  kernel_trace_collect();  // drop what ran before
  const uint64_t from = kernel_trace_timestamp_ns();
  for (int i = 0; i < 3; ++i) profile_spin_a<<<4, 32, 0, s>>>(20000);
  profile_spin_b<<<1, 32, 0, s>>>(20000);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const uint64_t to = kernel_trace_timestamp_ns();
  const std::vector<KernelRecord> records = kernel_trace_collect();
  kernel_trace_stop();
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);

  const KernelProfile p = profile_kernels(records, from, to + 1);
  const KernelProfileRow* a = find_row(p, "profile_spin_a");
  const KernelProfileRow* b = find_row(p, "profile_spin_b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->launches, 3);
  EXPECT_EQ(b->launches, 1);
  // Demangled, the parameter list dropped: "fk::bench::(anonymous namespace)::profile_spin_a".
  EXPECT_TRUE(a->name.ends_with("::profile_spin_a")) << a->name;
  // 20,000 cycles is at least 10 us below 2 GHz; one stream: no overlap.
  EXPECT_GT(a->total_ns, 3u * 5000u);
  EXPECT_EQ(a->exclusive_ns, a->total_ns);
  uint64_t exclusive = 0;
  for (const auto& r : p.rows) {
    EXPECT_LE(r.exclusive_ns, r.total_ns) << r.name;
    exclusive += r.exclusive_ns;
  }
  EXPECT_EQ(exclusive, p.busy_ns);
  EXPECT_LE(p.busy_ns, p.span_ns);
  EXPECT_EQ(p.launches, 4);
}

// With copies_too the trace also holds copies and memsets, on the stream they ran on; the
// profile still counts kernels only.
TEST(KernelProfileGpu, TraceHoldsCopiesAndMemsetsWithTheirStreams) {
  FK_REQUIRE_GPU();
  if (!kernel_trace_available()) GTEST_SKIP() << "no CUPTI";
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void *a = nullptr, *b = nullptr;
  constexpr size_t kBytes = size_t{1} << 20;
  ASSERT_EQ(cudaMalloc(&a, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, kBytes), cudaSuccess);
  kernel_trace_start(/*copies_too=*/true);
  kernel_trace_collect();  // drop what ran before
  const uint64_t from = kernel_trace_timestamp_ns();
  ASSERT_EQ(cudaMemsetAsync(a, 1, kBytes, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  profile_spin_a<<<1, 32, 0, s>>>(1000);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const uint64_t to = kernel_trace_timestamp_ns();
  const uint32_t sid = kernel_trace_stream_id(s);
  const std::vector<KernelRecord> records = kernel_trace_collect();
  kernel_trace_stop();
  cudaFree(a);
  cudaFree(b);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);

  int copies = 0, memsets = 0;
  for (const KernelRecord& r : records) {
    if (r.start_ns < from || r.start_ns > to) continue;
    EXPECT_EQ(r.stream_id, sid) << r.name;
    if (r.kind == TraceKind::memcpy) {
      ++copies;
      EXPECT_EQ(r.name, "memcpy DtoD 1048576 bytes");
    }
    if (r.kind == TraceKind::memset) {
      ++memsets;
      EXPECT_EQ(r.name, "memset 1048576 bytes");
    }
  }
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(memsets, 1);
  EXPECT_EQ(profile_kernels(records, from, to + 1).launches, 1);
}

}  // namespace
}  // namespace fk::bench
