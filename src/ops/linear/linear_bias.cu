#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "ops/linear/linear_bias.h"

namespace fk::ops {
namespace {

// One thread per element; a grid-stride loop over rows keeps the grid small for large M.
template <class T>
__global__ void add_bias_rows_kernel(T* __restrict__ out, int64_t ld_out, const T* __restrict__ bias, int64_t M,
                                     int64_t N) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const float b = cuda::to_float(bias[n]);
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    T* p = out + m * ld_out + n;
    *p = cuda::from_float<T>(cuda::to_float(*p) + b);
  }
}

template <class T>
void launch(void* out, int64_t ld_out, const void* bias, int64_t M, int64_t N, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>((N + kThreads - 1) / kThreads), static_cast<unsigned>(std::min<int64_t>(M, 1024)));
  add_bias_rows_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(out), ld_out, static_cast<const T*>(bias), M, N);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace

void add_bias_rows(void* out, int64_t ld_out, const void* bias, int64_t M, int64_t N, DType dtype, void* stream) {
  if (M == 0 || N == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::bf16: return launch<__nv_bfloat16>(out, ld_out, bias, M, N, s);
    case DType::f16: return launch<__half>(out, ld_out, bias, M, N, s);
    default: FK_FAIL(FK_ERR_UNSUPPORTED, "linear: bias dtype ", dtype_name(dtype));
  }
}

}  // namespace fk::ops
