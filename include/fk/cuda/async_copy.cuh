// Asynchronous global -> shared copies (cp.async, sm_80 and later): the loads of a
// multi-stage pipeline go out as one instruction per 16 bytes and land in shared memory
// without passing through registers, so a kernel keeps several tiles in flight while it
// computes on an earlier one. Include only from CUDA translation units.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace fk::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; src_bytes 0 fills zeros (src is then not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// The mbarrier at `bar` (shared memory) receives one arrival once every cp.async this
// thread issued so far has landed; the arrival counts towards the barrier's expected
// count (.noinc), so the barrier is initialised with one arrival per such thread.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// Waits for every cp.async this thread issued, committed to a group or not.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// Waits until at most kPending committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace fk::cuda
