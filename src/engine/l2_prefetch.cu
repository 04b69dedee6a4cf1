#include "engine/l2_prefetch.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fk/cuda/check.h"

namespace fk::engine {
namespace {

constexpr uint32_t kChunk = 16384;  // bytes per bulk prefetch instruction

// One thread per chunk: a Hopper bulk prefetch of global memory into L2 (no registers, no
// shared memory, no completion to wait for).
__global__ void prefetch_l2_kernel(const char* data, size_t bytes) {
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  for (size_t c = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t offset = c * kChunk;
    const auto size = static_cast<uint32_t>(bytes - offset < kChunk ? bytes - offset : kChunk) & ~15u;
    if (size == 0) continue;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(data + offset), "r"(size) : "memory");
#endif
  }
}

bool prefetch_enabled() {
  const char* v = std::getenv("FK_L2_PREFETCH");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace

L2Prefetcher::L2Prefetcher(bool cuda) {
  if (!cuda || !prefetch_enabled()) return;
  int device = 0, major = 0;
  FK_CUDA_CHECK(cudaGetDevice(&device));
  FK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 9) return;  // the bulk prefetch is a Hopper instruction
  cudaStream_t s = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  FK_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  FK_CUDA_CHECK(cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
  FK_CUDA_CHECK(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
  side_ = s;
  forked_ = a;
  issued_ = b;
}

L2Prefetcher::~L2Prefetcher() {
  if (issued_) cudaEventDestroy(static_cast<cudaEvent_t>(issued_));
  if (forked_) cudaEventDestroy(static_cast<cudaEvent_t>(forked_));
  if (side_) cudaStreamDestroy(static_cast<cudaStream_t>(side_));
}

void L2Prefetcher::start(const void* data, size_t bytes, void* stream) {
  if (!enabled() || bytes < 16 || reinterpret_cast<uintptr_t>(data) % 16 != 0) return;
  const auto main = static_cast<cudaStream_t>(stream);
  const auto side = static_cast<cudaStream_t>(side_);
  FK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(forked_), main));
  FK_CUDA_CHECK(cudaStreamWaitEvent(side, static_cast<cudaEvent_t>(forked_), 0));
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  const auto blocks = static_cast<unsigned>(chunks < 64 * 32 ? (chunks + 31) / 32 : 64);
  prefetch_l2_kernel<<<blocks, 32, 0, side>>>(static_cast<const char*>(data), bytes);
  FK_CUDA_CHECK_LAUNCH();
  FK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(issued_), side));
  pending_ = true;
}

void L2Prefetcher::join(void* stream) {
  if (!pending_) return;
  FK_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(issued_), 0));
  pending_ = false;
}

}  // namespace fk::engine
