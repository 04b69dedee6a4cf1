// Device helpers of the GPU references (OpRegistry::gpu_reference): exact conversions of
// the engine's element types to double, a dtype -> CUDA type dispatch, and the launch
// checks they share. A GPU reference recomputes the CPU reference's outputs in double on
// the device for workloads too large for the CPU oracle; it is written independently of
// the baselines, favouring plain code over speed.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/dtype.h"
#include "fk/status.h"

namespace fk::ops::gpu_ref {

// Every value of these types is a double exactly.
__device__ __forceinline__ double to_double(double x) { return x; }
__device__ __forceinline__ double to_double(float x) { return x; }
__device__ __forceinline__ double to_double(__half x) { return __half2float(x); }
__device__ __forceinline__ double to_double(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ double to_double(__nv_fp8_e4m3 x) { return static_cast<float>(x); }

// One element of a float tensor whose dtype is known only at run time (scalars, biases,
// scales: not for inner loops). NaN for a dtype the references never read this way.
__device__ __forceinline__ double load_double(const void* base, DType dt, int64_t i) {
  switch (dt) {
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f16: return to_double(static_cast<const __half*>(base)[i]);
    case DType::bf16: return to_double(static_cast<const __nv_bfloat16*>(base)[i]);
    case DType::f8e4m3fn: return to_double(static_cast<const __nv_fp8_e4m3*>(base)[i]);
    default: return __longlong_as_double(0x7ff8000000000000ll);
  }
}

// Calls f(T{}) with the CUDA type of a 16-bit or fp8 float dtype.
template <class F>
void dispatch_float_type(DType dt, const char* op, const char* arg, F&& f) {
  switch (dt) {
    case DType::bf16: f(__nv_bfloat16{}); return;
    case DType::f16: f(__half{}); return;
    case DType::f8e4m3fn: f(__nv_fp8_e4m3{}); return;
    default: FK_FAIL(FK_ERR_UNSUPPORTED, op, " GPU reference: ", arg, " dtype ", dtype_name(dt), " is not supported");
  }
}

// Grid dimensions y and z are limited to 65535: kernels loop over larger counts.
inline unsigned grid_dim_yz(int64_t n) { return static_cast<unsigned>(n < 1 ? 1 : (n < 65535 ? n : 65535)); }

inline void expect_grid_x(const char* op, int64_t blocks) {
  FK_CHECK(blocks < (int64_t{1} << 31), op, " GPU reference: ", blocks, " blocks exceed the grid limit");
}

}  // namespace fk::ops::gpu_ref
