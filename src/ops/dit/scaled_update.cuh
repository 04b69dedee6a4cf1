// The samplers' in-place update, sample[t, :] = c_sample * sample[t, :] + c_output * output[t, :]
// (flow_match_euler_step: 1 and dt; ddim_step: its two coefficients). A bandwidth-bound row
// pass as gated_residual_add's: block (row, chunk), one 16-byte vector (or one element where
// row length, strides or pointers do not allow) per thread, fp32 fused multiply-add, one
// rounding. Latents are a few MB at most: a few microseconds, launch-bound.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/tensor_view.h"

namespace fk::ops::scaled_update {

constexpr int kThreads = 128;

template <class T>
struct Params {
  T* sample;
  int64_t sample_stride;
  const T* output;
  int64_t output_stride;
  float c_sample, c_output;
  int cols;
};

template <class T, int kN>
__global__ void __launch_bounds__(kThreads) kernel(const Params<T> p) {
  const int64_t row = blockIdx.x;
  T* x = p.sample + row * p.sample_stride;
  const T* v = p.output + row * p.output_stride;
  const int64_t num_vec = p.cols / kN;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < num_vec;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const auto xs = cuda::load_packed<kN>(x + i * kN);
    const auto vs = cuda::load_packed_ro<kN>(v + i * kN);
    float r[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) r[k] = fmaf(p.c_output, cuda::unpack(vs, k), p.c_sample * cuda::unpack(xs, k));
    cuda::store_packed<kN>(x + i * kN, cuda::pack<T, kN>(r));
  }
}

template <class T, int kN>
void launch_rows(const Params<T>& p, int64_t rows, cudaStream_t stream) {
  const int64_t num_vec = p.cols / kN;
  const int threads = static_cast<int>(std::min<int64_t>(kThreads, cuda::ceil_div(num_vec, 32) * 32));
  const int64_t chunks = std::min<int64_t>(cuda::ceil_div(num_vec, threads), 65535);
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(chunks));
  kernel<T, kN><<<grid, threads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

// sample and output: validated [T, C] views of one float dtype, rows contiguous.
inline void launch(const TensorView& sample, const TensorView& output, float c_sample, float c_output, const char* op,
                   void* stream) {
  const int64_t rows = sample.shape[0];
  if (rows == 0 || sample.shape[1] == 0) return;
  cuda::dispatch_float_dtype(output.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Params<T> p{sample.ptr<T>(),
                      sample.strides[0],
                      output.ptr<T>(),
                      output.strides[0],
                      c_sample,
                      c_output,
                      static_cast<int>(sample.shape[1])};
    constexpr int N = 16 / static_cast<int>(sizeof(T));
    const bool vec_ok = p.cols % N == 0 && (rows == 1 || (p.sample_stride % N == 0 && p.output_stride % N == 0)) &&
                        cuda::aligned16(p.sample) && cuda::aligned16(p.output);
    const auto s = static_cast<cudaStream_t>(stream);
    if (vec_ok)
      launch_rows<T, N>(p, rows, s);
    else
      launch_rows<T, 1>(p, rows, s);
  });
}

}  // namespace fk::ops::scaled_update
