// Device Philox fills; bit-identical to the host loops in src/core/random.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/random_device.h"
#include "fk/cuda/check.h"
#include "fk/element.h"
#include "fk/philox.h"

namespace fk::detail {

namespace {

__device__ void store_device(void* base, DType t, int64_t i, double v) {
  // Same conversions as the host (fk/dtype_convert.h is host/device code).
  char* p = static_cast<char*>(base) + i * static_cast<int64_t>(dtype_size(t));
  switch (t) {
    case DType::f32: *reinterpret_cast<float*>(p) = static_cast<float>(v); break;
    case DType::f64: *reinterpret_cast<double*>(p) = v; break;
    case DType::f16: *reinterpret_cast<uint16_t*>(p) = float_to_f16(static_cast<float>(v)); break;
    case DType::bf16: *reinterpret_cast<uint16_t*>(p) = float_to_bf16(static_cast<float>(v)); break;
    case DType::f8e4m3fn: *reinterpret_cast<uint8_t*>(p) = float_to_f8e4m3fn(static_cast<float>(v)); break;
    case DType::f8e5m2: *reinterpret_cast<uint8_t*>(p) = float_to_f8e5m2(static_cast<float>(v)); break;
    case DType::i8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case DType::u8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case DType::boolean: *reinterpret_cast<uint8_t*>(p) = v != 0.0; break;
    case DType::i32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case DType::i64: *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
  }
}

__global__ void fill_uniform_kernel(void* data, DType t, int64_t n, uint64_t seed, uint64_t offset, float lo,
                                    float range, bool is_float) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = __fmaf_rn(range, philox_uniform(seed, offset, static_cast<uint64_t>(i)), lo);
    if (!is_float) v = floorf(v);
    store_device(data, t, i, v);
  }
}

__global__ void fill_int_kernel(void* data, DType t, int64_t n, uint64_t seed, uint64_t offset, int64_t lo,
                                int64_t hi) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t v = philox_int(seed, offset, static_cast<uint64_t>(i), lo, hi);
    if (t == DType::i64) {
      static_cast<int64_t*>(data)[i] = v;
    } else {
      store_device(data, t, i, static_cast<double>(v));
    }
  }
}

int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535)); }

}  // namespace

void fill_uniform_device(const TensorView& t, uint64_t seed, uint64_t offset, float lo, float hi, void* stream) {
  const int64_t n = t.numel();
  if (n == 0) return;
  fill_uniform_kernel<<<grid_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      t.data, t.dtype, n, seed, offset, lo, hi - lo, dtype_is_float(t.dtype));
  FK_CUDA_CHECK_LAUNCH();
}

void fill_int_device(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi, void* stream) {
  const int64_t n = t.numel();
  if (n == 0) return;
  fill_int_kernel<<<grid_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(t.data, t.dtype, n, seed, offset,
                                                                              lo, hi);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::detail
