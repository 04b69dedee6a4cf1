// quantize_fp8_blocks on the device (models/llm/fp8_blocks.h): one CTA per 128 x 128
// block: its absmax, the block's scale, then every value divided by it and rounded to
// f8e4m3fn with the same integer conversion the host uses (fk/dtype_convert.h), so both
// write the same bits. Runs once per expert weight at load time: simple over fast.
#include <cuda_runtime.h>

#include <cstdint>

#include "models/llm/fp8_blocks.h"
#include "fk/cuda/check.h"
#include "fk/dtype_convert.h"
#include "fk/status.h"

namespace fk::engine {
namespace {

constexpr int kThreads = 256;

struct Bf16 {
  using Storage = uint16_t;
  __device__ static float load(Storage v) { return bf16_to_float(v); }
};
struct F16 {
  using Storage = uint16_t;
  __device__ static float load(Storage v) { return f16_to_float(v); }
};
struct F32 {
  using Storage = float;
  __device__ static float load(Storage v) { return v; }
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const typename T::Storage* w, uint8_t* q, float* scale, int64_t rows, int64_t cols) {
  const int64_t bc = blockIdx.x, br = blockIdx.y, m = blockIdx.z;
  const int64_t r0 = br * kFp8Block, c0 = bc * kFp8Block;
  const int64_t nr = rows - r0 < kFp8Block ? rows - r0 : kFp8Block;
  const int64_t nc = cols - c0 < kFp8Block ? cols - c0 : kFp8Block;
  const int64_t base = (m * rows + r0) * cols + c0;
  float amax = 0;
  for (int64_t i = threadIdx.x; i < nr * nc; i += kThreads)
    amax = fmaxf(amax, fabsf(T::load(w[base + (i / nc) * cols + i % nc])));
  __shared__ float warp_max[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = 0;
  for (int i = 0; i < kThreads / 32; ++i) amax = fmaxf(amax, warp_max[i]);
  // IEEE divisions (not the approximate ones fast-math would pick): the host's results.
  const float s = amax > 0 ? __fdiv_rn(amax, kFp8Max) : 1.0f;
  if (threadIdx.x == 0) scale[(m * gridDim.y + br) * gridDim.x + bc] = s;
  for (int64_t i = threadIdx.x; i < nr * nc; i += kThreads) {
    const int64_t at = base + (i / nc) * cols + i % nc;
    q[at] = float_to_f8e4m3fn(__fdiv_rn(T::load(w[at]), s));
  }
}

template <class T>
void launch(const TensorView& w, const TensorView& q, const TensorView& scale, cudaStream_t stream) {
  const int64_t R = w.shape[w.rank - 2], C = w.shape[w.rank - 1], M = w.numel() / (R * C);
  const int64_t RB = scale.shape[scale.rank - 2], CB = scale.shape[scale.rank - 1];
  FK_CHECK(RB <= 65535 && M <= 65535, "quantize_fp8_blocks: ", M, " matrices of ", RB,
           " block rows exceed the CUDA grid (65535 each)");
  const dim3 grid(static_cast<unsigned>(CB), static_cast<unsigned>(RB), static_cast<unsigned>(M));
  quantize_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const typename T::Storage*>(w.data),
                                                    static_cast<uint8_t*>(q.data), static_cast<float*>(scale.data), R,
                                                    C);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace

void quantize_fp8_blocks_cuda(const TensorView& w, const TensorView& q, const TensorView& scale, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (w.dtype) {
    case DType::bf16: return launch<Bf16>(w, q, scale, s);
    case DType::f16: return launch<F16>(w, q, scale, s);
    case DType::f32: return launch<F32>(w, q, scale, s);
    default: FK_FAIL(FK_ERR_INVALID_ARGUMENT, "quantize_fp8_blocks: quantizes bf16, f16 or f32 weights, got ",
                     dtype_name(w.dtype));
  }
}

}  // namespace fk::engine
