// maxsim: the GPU reference (OpRegistry::gpu_reference) for workloads too large for the CPU
// oracle (ColBERTv2's 32 queries x 1000 passages). The semantics of maxsim_reference
// (maxsim_def.cpp) in double on the device: one block per (query, document) pair, a thread
// per query row finds its largest dot product with the document's rows, and the block sums
// the rows' maxima into the f64 scores. Plain code, written apart from the baseline's kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "fk/op_registry.h"
#include "ops/common/gpu_reference.cuh"
#include "ops/retrieval/maxsim_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 64;

template <class T>
struct RefMaxSim {
  const T* query;
  const T* doc;
  int64_t q_stride, d_stride;
  const int32_t* cu_q;
  const int32_t* cu_d;
  double* scores;  // [bq, bd], contiguous
  int64_t bq, bd, dim;
};

template <class T>
__global__ void __launch_bounds__(kThreads) maxsim_reference_kernel(const RefMaxSim<T> p) {
  __shared__ double partial[kThreads];
  for (int64_t pair = blockIdx.x; pair < p.bq * p.bd; pair += gridDim.x) {
    const int64_t a = pair / p.bd, b = pair % p.bd;
    const int64_t d0 = p.cu_d[b], d1 = p.cu_d[b + 1];
    double sum = 0;
    // A document without rows matches nothing: its query rows add 0.
    if (d1 > d0)
      for (int64_t i = p.cu_q[a] + threadIdx.x; i < p.cu_q[a + 1]; i += kThreads) {
        const T* qi = p.query + i * p.q_stride;
        double best = -INFINITY;
        for (int64_t j = d0; j < d1; ++j) {
          const T* dj = p.doc + j * p.d_stride;
          double dot = 0;
          for (int64_t k = 0; k < p.dim; ++k) dot += gpu_ref::to_double(qi[k]) * gpu_ref::to_double(dj[k]);
          best = fmax(best, dot);
        }
        sum += best;
      }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) p.scores[a * p.bd + b] = partial[0];
    __syncthreads();  // partial[0] is read before the next pair overwrites it
  }
}

template <class T>
void run(const MaxSimArgs& a, cudaStream_t stream) {
  RefMaxSim<T> p{};
  p.query = static_cast<const T*>(a.query.data);
  p.doc = static_cast<const T*>(a.doc.data);
  p.q_stride = a.query.strides[0];
  p.d_stride = a.doc.strides[0];
  p.cu_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  p.cu_d = static_cast<const int32_t*>(a.cu_seqlens_d.data);
  p.scores = static_cast<double*>(a.scores.data);
  p.bq = a.cu_seqlens_q.shape[0] - 1;
  p.bd = a.cu_seqlens_d.shape[0] - 1;
  p.dim = a.query.shape[1];
  const int64_t pairs = p.bq * p.bd;
  if (pairs == 0) return;
  const int64_t blocks = pairs < 65536 * 16 ? pairs : 65536 * 16;
  maxsim_reference_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status maxsim_gpu_reference(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MaxSimArgs*>(args);
    constexpr const char* op = MaxSimArgs::kName;
    // The reference writes the oracle's f64 scores: the arguments are checked as for the op
    // with f32 scores, then the scores' dtype itself.
    expect_dtype(op, "scores", a.scores, DType::f64);
    MaxSimArgs as_model = a;
    as_model.scores.dtype = DType::f32;
    validate_maxsim(as_model, DeviceType::cuda);
    const auto s = static_cast<cudaStream_t>(stream);
    switch (a.query.dtype) {
      case DType::f32:
        return run<float>(a, s);
      case DType::f16:
        return run<__half>(a, s);
      case DType::bf16:
        return run<__nv_bfloat16>(a, s);
      default:
        FK_FAIL(FK_ERR_UNSUPPORTED, op, " GPU reference: dtype ", dtype_name(a.query.dtype), " is not supported");
    }
  });
}

FK_REGISTER_GPU_REFERENCE("maxsim", maxsim_gpu_reference);

}  // namespace
}  // namespace fk::ops
