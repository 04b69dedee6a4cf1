// expect: PASSED
// add as the op defines it (out = a + b in fp32, rounded once), one element per thread: the
// text encoder's embedding sums with it installed give the baseline's outputs (BGE-M3 end to
// end on a GPU: fk e2e eval --model bge-m3 --workload 32x512).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/ops/elementwise.h"

namespace {

template <class T>
__device__ float to_f(T x) { return static_cast<float>(x); }
template <class T>
__device__ T from_f(float x) { return static_cast<T>(x); }

template <class T>
__global__ void add_kernel(T* out, int64_t so, const T* a, int64_t sa, const T* b, int64_t sb, int64_t rows, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  out[r * so + c] = from_f<T>(to_f(a[r * sa + c]) + to_f(b[r * sb + c]));
}

template <class T>
void launch(const fk::ops::AddArgs& a, cudaStream_t s) {
  const int64_t n = a.a.shape[0] * a.a.shape[1];
  if (n == 0) return;
  add_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
      static_cast<T*>(a.out.data), a.out.strides[0], static_cast<const T*>(a.a.data), a.a.strides[0],
      static_cast<const T*>(a.b.data), a.b.strides[0], a.a.shape[0], a.a.shape[1]);
}

fk_status run(const void* raw, void* stream) {
  const auto& a = *static_cast<const fk::ops::AddArgs*>(raw);
  const auto s = static_cast<cudaStream_t>(stream);
  switch (a.a.dtype) {
    case fk::DType::f16: launch<__half>(a, s); break;
    case fk::DType::bf16: launch<__nv_bfloat16>(a, s); break;
    case fk::DType::f32: launch<float>(a, s); break;
    default: return FK_ERR_INVALID_ARGUMENT;
  }
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

}  // namespace

FK_EXPORT_CANDIDATE(add, run)
