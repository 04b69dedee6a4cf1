// Include first in translation units that use FlashInfer's Hopper (sm90) attention.
//
// flashinfer/cutlass_utils.cuh includes CUTLASS's tools/util headers (command_line.h,
// host_tensor.h, reference kernels), which the CUTLASS/CuTe headers we build against do
// not ship; the Hopper attention kernels use none of it. We take its include guard and
// include the CUTLASS library headers it would have pulled in for them.
#pragma once
#include "ops/attention/cuda/flashinfer_compat.cuh"

#ifdef FLASHINFER_CUTLASS_UTILS_CUH_
#error "flashinfer_sm90_compat.cuh must be included before any FlashInfer header"
#endif
#define FLASHINFER_CUTLASS_UTILS_CUH_

#include <cuda_fp8.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/numeric_types.h>
