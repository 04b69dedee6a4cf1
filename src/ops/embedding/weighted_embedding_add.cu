// weighted_embedding_add CUDA baseline: out[t, :] += sum_j weights[t, j] * table[ids[t, j], :].
//
// Qwen3-VL-8B, one 1024^2 image: 4096 patches x 1152 bf16 read and written (19 MB) plus the
// 2304 x 1152 grid (5.3 MB, gathered 4 times per patch but mostly from L2): about 8 us at
// 3.0 TB/s. One block per token (grid-strided past 65535 tokens), its threads over the
// hidden dim; the block's first K threads load the taps' ids and weights into shared
// memory. A token with an id outside the table keeps its row (no host sync to report it).
// Math in fp32 from the current out value, rounded once.
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/embedding/weighted_embedding_add_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;

template <class T, class I>
struct Params {
  T* out;
  int64_t out_stride;
  const I* ids;
  const float* weights;
  const T* table;
  int64_t table_stride;
  int64_t vocab;
  int64_t tokens;
  int taps;
  int hidden;
};

template <class T, class I>
__global__ void __launch_bounds__(kThreads) weighted_embedding_add_kernel(const Params<T, I> p) {
  __shared__ int64_t row[kWeightedEmbeddingMaxTaps];
  __shared__ float wt[kWeightedEmbeddingMaxTaps];
  __shared__ int bad;
  for (int64_t t = blockIdx.x; t < p.tokens; t += gridDim.x) {
    if (threadIdx.x == 0) bad = 0;
    __syncthreads();
    if (threadIdx.x < p.taps) {
      const int64_t id = static_cast<int64_t>(p.ids[t * p.taps + threadIdx.x]);
      if (id < 0 || id >= p.vocab) bad = 1;
      row[threadIdx.x] = id;
      wt[threadIdx.x] = p.weights[t * p.taps + threadIdx.x];
    }
    __syncthreads();
    if (!bad) {
      T* o = p.out + t * p.out_stride;
      for (int h = threadIdx.x; h < p.hidden; h += blockDim.x) {
        float acc = cuda::to_float(o[h]);
        for (int j = 0; j < p.taps; ++j) acc = fmaf(wt[j], cuda::to_float(p.table[row[j] * p.table_stride + h]), acc);
        o[h] = cuda::from_float<T>(acc);
      }
    }
    __syncthreads();  // the next token overwrites row / wt / bad
  }
}

fk_status weighted_embedding_add_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const WeightedEmbeddingAddArgs*>(args);
    validate_weighted_embedding_add(a, DeviceType::cuda);
    const int64_t T = a.ids.shape[0];
    if (T == 0) return;
    const auto st = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.table.dtype, a.kName, [&](auto tag) {
      using T_ = typename decltype(tag)::type;
      auto go = [&](auto* ids) {
        using I = std::remove_const_t<std::remove_pointer_t<decltype(ids)>>;
        const Params<T_, I> p{a.out.ptr<T_>(), a.out.strides[0], ids, a.weights.ptr<float>(), a.table.ptr<T_>(),
                              a.table.strides[0], a.table.shape[0], T, static_cast<int>(a.ids.shape[1]),
                              static_cast<int>(a.table.shape[1])};
        const int threads = static_cast<int>(std::min<int64_t>(kThreads, std::max<int64_t>(32, (p.hidden + 31) / 32 * 32)));
        const unsigned grid = static_cast<unsigned>(std::min<int64_t>(T, 65535));
        weighted_embedding_add_kernel<T_, I><<<grid, threads, 0, st>>>(p);
        FK_CUDA_CHECK_LAUNCH();
      };
      if (a.ids.dtype == DType::i64) go(static_cast<const int64_t*>(a.ids.data));
      else go(static_cast<const int32_t*>(a.ids.data));
    });
  });
}

FK_REGISTER_IMPL("weighted_embedding_add", cuda, weighted_embedding_add_cuda);

}  // namespace
}  // namespace fk::ops
