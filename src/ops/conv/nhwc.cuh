// Device-side view of an NHWC activation (channels contiguous, other strides free) shared by
// the conv family's CUDA baselines, and the test for their 16-byte vector paths.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/vec.cuh"
#include "fk/tensor_view.h"

namespace fk::ops::conv_cuda {

template <class T>
struct Nhwc {
  T* p;
  int64_t sn, sh, sw;  // image, row and pixel strides in elements (channel stride 1)
  int n, h, w, c;

  __device__ __forceinline__ T* pixel(int64_t ni, int64_t hi, int64_t wi) const { return p + ni * sn + hi * sh + wi * sw; }
};

template <class T>
Nhwc<T> nhwc(const TensorView& v) {
  return {static_cast<T*>(v.data), v.strides[0], v.strides[1], v.strides[2],
          static_cast<int>(v.shape[0]), static_cast<int>(v.shape[1]), static_cast<int>(v.shape[2]),
          static_cast<int>(v.shape[3])};
}

// Whether a view can be read or written in 16-byte vectors of kVec elements along its
// channels: channel count and pixel/row/image strides multiples of kVec, base 16-byte aligned.
inline bool vec16_ok(const TensorView& v, int64_t vec) {
  return v.shape[3] % vec == 0 && v.strides[0] % vec == 0 && v.strides[1] % vec == 0 && v.strides[2] % vec == 0 &&
         cuda::aligned16(v.data);
}

// Grid of a grid-stride loop over `work` items: enough blocks to fill the GPU many times over,
// within the x limit.
inline unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = cuda::ceil_div(work, threads);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

}  // namespace fk::ops::conv_cuda
