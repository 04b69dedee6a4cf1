// The weight loads of the decode GEMM kernels (skinny_gemm.cu, small_m_gemm.cu).
#pragma once
#include <cstdint>

namespace fk::ops {

// A weight chunk is read once: stream it past L1 so that the input rows (read by every
// warp of the SM) stay there.
__device__ __forceinline__ uint4 load_streaming(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

}  // namespace fk::ops
