#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/dtype_convert.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/check/outside_tolerance.h"

namespace fk::bench {
namespace {

__device__ double float_at(const unsigned char* p, int64_t i, DType t) {
  switch (t) {
    case DType::f32: return reinterpret_cast<const float*>(p)[i];
    case DType::f64: return reinterpret_cast<const double*>(p)[i];
    case DType::f16: return f16_to_double(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::bf16: return bf16_to_double(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::f8e4m3fn: return f8e4m3fn_to_double(p[i]);
    case DType::f8e5m2: return f8e5m2_to_double(p[i]);
    default: return 0.0;
  }
}

__device__ int64_t integer_at(const unsigned char* p, int64_t i, DType t) {
  switch (t) {
    case DType::i8: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::u8:
    case DType::boolean: return p[i];
    case DType::i32: return reinterpret_cast<const int32_t*>(p)[i];
    case DType::i64: return reinterpret_cast<const int64_t*>(p)[i];
    default: return 0;
  }
}

__global__ void count_kernel(const unsigned char* x, const unsigned char* ref, int64_t n, DType t, bool is_float,
                             double atol, double rtol, unsigned long long* count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (!is_float) {
      bad += integer_at(x, i, t) != integer_at(ref, i, t);
      continue;
    }
    const double v = float_at(x, i, t), r = float_at(ref, i, t);
    if (!isfinite(r)) bad += !(isnan(r) ? isnan(v) : v == r);
    else bad += !isfinite(v) || fabs(v - r) > atol + rtol * fabs(r);
  }
  if (bad) atomicAdd(count, bad);
}

}  // namespace

int64_t count_outside_tolerance(const void* x, const void* ref, int64_t n, DType dtype, Tolerance tol,
                                Device device, void* stream) {
  if (n <= 0) return 0;
  if (device.is_cpu()) return detail::count_outside_tolerance_host(x, ref, n, dtype, tol);
  const auto s = static_cast<cudaStream_t>(stream);
  auto* count = static_cast<unsigned long long*>(rt::device_malloc(sizeof(unsigned long long), device.index, stream));
  unsigned long long host = 0;
  try {
    FK_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(*count), s));
    const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 2048));
    count_kernel<<<blocks, 256, 0, s>>>(static_cast<const unsigned char*>(x), static_cast<const unsigned char*>(ref), n,
                                        dtype, dtype_is_float(dtype), tol.atol, tol.rtol, count);
    FK_CUDA_CHECK_LAUNCH();
    FK_CUDA_CHECK(cudaMemcpyAsync(&host, count, sizeof(host), cudaMemcpyDeviceToHost, s));
    FK_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    rt::device_free(count, stream);
    throw;
  }
  rt::device_free(count, stream);
  return static_cast<int64_t>(host);
}

}  // namespace fk::bench
