// TMA tensor maps of 16-bit elements with the 128-byte swizzle: what the wgmma kernels'
// shared-memory tiles expect (rows of 64 elements, 8-row 1024-byte swizzle atoms). One
// helper for the kernels that build their own maps (the paged-TMA prefill's KV cache, the
// fused gate_up's expert weights), through CUTLASS's driver wrapper so that no translation
// unit links libcuda itself.
#pragma once
#include <cuda.h>

#include <cutlass/cuda_host_adapter.hpp>

namespace fk::cuda {

// dims[0] is the contiguous one; byte_strides[i] is dimension i + 1's stride (rank - 1 of
// them, multiples of 16); box[0] * 2 bytes must be at most 128 (the swizzle span). Bits are
// copied as they are, so bf16 and f16 share the map type. Rows past the extents read zeros.
inline CUresult encode_tensor_map_16bit_sw128(CUtensorMap& out, const void* base, int rank, const cuuint64_t* dims,
                                              const cuuint64_t* byte_strides, const cuuint32_t* box) {
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  if (rank < 1 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
  return CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
      &out, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, static_cast<cuuint32_t>(rank), const_cast<void*>(base), dims,
      byte_strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace fk::cuda
