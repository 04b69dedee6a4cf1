// Programmatic dependent launch (PDL, Hopper and later): a kernel launched with
// launch_pdl() may be scheduled while the kernel before it on the stream is still running,
// so its launch latency and any work that does not depend on that kernel (a decode GEMM's
// first weight loads) overlap the predecessor's tail. The rules that keep this correct:
//  - a PDL-launched kernel calls pdl_wait() before it reads anything an earlier kernel
//    wrote or writes anything an earlier kernel reads, and before any early return (so the
//    grid never completes ahead of its predecessor and the chain stays transitive);
//    The one exception is data no kernel of the chain near it writes: an op may document
//    inputs it reads before the wait (the rope ops' positions and slots, fk/ops/rope.h),
//    which then must not come from the kernel right before it. Anything older is visible:
//    that kernel passed its own pdl_wait() before this one could launch;
//  - pdl_trigger() lets the next PDL-launched kernel be scheduled; it does not make this
//    kernel's writes visible early (the successor's pdl_wait() waits for full completion).
// A kernel launched the ordinary way (<<<>>>, cuBLASLt) still waits for full completion of
// everything before it, so kernels opt in one by one. In CUDA graphs the launches become
// programmatic edges. An op's variant no_pdl turns the attribute off for its launches (for
// measurement and bisection; ops/common/pdl_variant.h).
// Include only from CUDA translation units.
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "fk/cuda/check.h"

namespace fk::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Pulls a line into L2 without reading it into registers. Safe before pdl_wait() even for
// memory the predecessor writes: L2 is the point of coherence, so a later load after the
// wait sees the predecessor's stores.
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// True when launch_pdl() sets the attribute: the current device is compute capability 9.0
// or newer (read once per process) and no PdlOffScope of this thread says otherwise.
bool pdl_enabled();

template <class... Params, class... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = pdl_enabled() ? 1 : 0;
  FK_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace fk::cuda
