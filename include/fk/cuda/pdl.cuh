// Programmatic dependent launch (Hopper): a kernel launched with the programmatic-stream-
// serialization attribute may start while the kernel before it on the stream is still
// running, once every block of that kernel has called launch_dependents() (or exited).
// It must call wait() before it touches anything the earlier kernel writes; wait() returns
// once that kernel has finished and its writes are visible. Work that reads only data no
// earlier kernel writes (the weights of a GEMV) can start before the wait and hide the
// launch and the pipeline ramp behind the earlier kernel's tail. Both are no-ops for a
// kernel launched without the attribute, and before sm_90.
#pragma once

namespace fk::cuda {

// Lets the next kernel on the stream launch now (call early: it only schedules blocks).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Waits for the kernel before this one on the stream to finish, its writes visible.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace fk::cuda
