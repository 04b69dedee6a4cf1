// triangle_attention_layout.h's CUDA kernels: plain copies, as wide as the rows' alignment
// allows (16 bytes for the projections' head-sized slices, 2 bytes for a mask's single
// column). Both move a few bytes per pair, next to the projections' and the attention's
// work per pair.
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/status.h"
#include "fk/tensor.h"
#include "ops/pairformer/triangle_attention_layout.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;

// dst row (b, i, j) <- src row (b, i, j) or (b, j, i), in units of U; widths and the
// source's column offset and row length are counted in units.
template <class U>
__global__ void pair_rows_copy_kernel(U* dst, const U* src, int64_t n1, int64_t n2, int64_t width, int64_t src_cols,
                                      int64_t col0, int64_t total, bool transpose) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = t / width, c = t % width;
    int64_t from = row;
    if (transpose) {
      const int64_t j = row % n2, i = (row / n2) % n1, b = row / (n1 * n2);
      from = (b * n1 + j) * n2 + i;
    }
    dst[t] = src[from * src_cols + col0 + c];
  }
}

template <class E>
__global__ void pair_heads_major_kernel(E* dst, const E* src, int64_t n, int64_t heads, int64_t total,
                                        bool transpose) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = t % n, i = (t / n) % n, h = (t / (n * n)) % heads, b = t / (n * n * heads);
    const int64_t pair = transpose ? (b * n + j) * n + i : (b * n + i) * n + j;
    dst[t] = src[pair * heads + h];
  }
}

unsigned blocks_for(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(total, kThreads), int64_t{1} << 20));
}

template <class U>
void launch_rows(const TensorView& dst, const TensorView& src, int64_t n1, int64_t n2, int64_t col0, bool transpose,
                 int64_t es, void* stream) {
  const int64_t per = static_cast<int64_t>(sizeof(U)) / es;
  const int64_t width = dst.shape[1] / per, total = dst.shape[0] * width;
  pair_rows_copy_kernel<U><<<blocks_for(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<U*>(dst.data), static_cast<const U*>(src.data), n1, n2, width, src.shape[1] / per, col0 / per, total,
      transpose);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace

void pair_rows_copy_cuda(const TensorView& dst, const TensorView& src, int64_t, int64_t n1, int64_t n2, int64_t col0,
                         bool transpose, void* stream) {
  const int64_t es = static_cast<int64_t>(dtype_size(dst.dtype));
  // The widest unit that divides every row length, offset and base address.
  auto fits = [&](int64_t bytes) {
    return (dst.shape[1] * es) % bytes == 0 && (src.shape[1] * es) % bytes == 0 && (col0 * es) % bytes == 0 &&
           reinterpret_cast<uintptr_t>(dst.data) % bytes == 0 && reinterpret_cast<uintptr_t>(src.data) % bytes == 0;
  };
  if (fits(16)) return launch_rows<uint4>(dst, src, n1, n2, col0, transpose, es, stream);
  if (fits(8)) return launch_rows<uint2>(dst, src, n1, n2, col0, transpose, es, stream);
  if (fits(4)) return launch_rows<uint32_t>(dst, src, n1, n2, col0, transpose, es, stream);
  FK_CHECK(es == 2, "pair_rows_copy: ", describe(dst), " has no unit of copy");
  launch_rows<uint16_t>(dst, src, n1, n2, col0, transpose, es, stream);
}

void pair_heads_major_cuda(const TensorView& dst, const TensorView& src, int64_t, int64_t n, bool transpose,
                           void* stream) {
  const int64_t total = dst.numel(), heads = dst.shape[1];
  const auto s = static_cast<cudaStream_t>(stream);
  if (dtype_size(dst.dtype) == 4) {
    pair_heads_major_kernel<uint32_t><<<blocks_for(total), kThreads, 0, s>>>(
        static_cast<uint32_t*>(dst.data), static_cast<const uint32_t*>(src.data), n, heads, total, transpose);
  } else {
    FK_CHECK(dtype_size(dst.dtype) == 2, "pair_heads_major: unsupported dtype of ", describe(dst));
    pair_heads_major_kernel<uint16_t><<<blocks_for(total), kThreads, 0, s>>>(
        static_cast<uint16_t*>(dst.data), static_cast<const uint16_t*>(src.data), n, heads, total, transpose);
  }
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::ops
