// compute_logprobs CUDA baseline: one block of 1024 threads per row.
//
// Per row:
//   1. one pass over the row: each thread keeps an online (max, sum of exp(x - max)) and the
//      largest rank key it saw (sample_radix.h: logit high, ~token id low, so keys are
//      distinct and "larger key" is "earlier in rank order"); block reductions give
//      lse = max + log(sum) and each warp's largest key.
//   2. the sampled token's logprob: x[id] - lse.
//   3. top K (K <= 20 <= 32 warps): the threshold T is the K-th largest of the 32 warp
//      maxima. Those K keys are distinct elements >= T, so the K-th largest key of the row
//      is >= T: every top-K element has a key >= T. A second pass gathers the keys >= T
//      into shared memory (for real logits a few dozen: the top tokens sit in random
//      warps); each gathered key's rank is the number of gathered keys above it, and the
//      ranks below K are the answer.
//   4. should more than kCapacity keys pass T (the large logits all in a few warps'
//      strides), K passes of a block-wide "largest key below the previous one" instead:
//      exact, slower, and only for such rows.
// Accumulation is in float with exp of (x - max) <= 0, so the sum has no overflow.
#include <cuda_bf16.h>

#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/op_registry.h"
#include "ops/logprobs/logprobs_validate.h"
#include "ops/sampling/sample_radix.h"

namespace fk::ops {
namespace {

using u64 = unsigned long long;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
static_assert(kWarps == 32 && kMaxTopLogprobs <= kWarps, "the threshold is the K-th of one key per warp");
constexpr int kCapacity = kThreads;  // gathered keys at most: one per thread to rank

__device__ __forceinline__ float load_logit(const float* row, int64_t i) { return row[i]; }
__device__ __forceinline__ float load_logit(const __nv_bfloat16* row, int64_t i) { return __bfloat162float(row[i]); }

__device__ __forceinline__ u64 rank_key(float x, int id) {
  return sample_radix::rank_key(x, static_cast<uint32_t>(id));
}
__device__ __forceinline__ int key_id(u64 key) { return static_cast<int>(sample_radix::key_id(key)); }

// f(logit, id) for every token of the row, spread over the block; 16-byte loads when the
// row is aligned (4 f32 or 8 bf16 per thread and step). Callers do not depend on the order.
template <class T, class F>
__device__ void for_each_logit(const T* x, int V, bool vector_loads, F&& f) {
  int first_scalar = 0;
  if (vector_loads) {
    constexpr int N = 16 / sizeof(T);
    const int num_vec = V / N;
    const auto* vec = reinterpret_cast<const uint4*>(x);
#pragma unroll 4
    for (int j = threadIdx.x; j < num_vec; j += blockDim.x) {
      const uint4 raw = vec[j];
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int q = 0; q < N; ++q) f(load_logit(e, q), j * N + q);
    }
    first_scalar = num_vec * N;
  }
  for (int i = first_scalar + threadIdx.x; i < V; i += blockDim.x) f(load_logit(x, i), i);
}

// Online log-sum-exp state: sum of exp(x - max) over the values seen.
struct Lse {
  float max = -INFINITY;
  float sum = 0.f;
  __device__ void add(float x) {
    if (x > max) {  // exp(-inf - x) = 0 drops the empty start
      sum = sum * expf(max - x) + 1.f;
      max = x;
    } else if (x != -INFINITY) {  // x <= max, so max is finite here; NaN propagates
      sum += expf(x - max);
    }
  }
  __device__ static Lse merge(Lse a, Lse b) {
    Lse r;
    r.max = fmaxf(a.max, b.max);
    if (r.max == -INFINITY) return r;
    // A side that saw nothing has max -inf and sum 0: 0 * exp(-inf) adds 0. NaN sums stay NaN.
    r.sum = a.sum * expf(a.max - r.max) + b.sum * expf(b.max - r.max);
    return r;
  }
};

struct Shared {
  u64 cand[kCapacity];
  u64 warp_key[kWarps];
  float warp_max[kWarps], warp_sum[kWarps];
  u64 threshold;
  float lse;
  unsigned int count;
};

__device__ __forceinline__ u64 warp_max_u64(u64 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const u64 other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}

// Largest v over the block; every thread gets it.
__device__ u64 block_max_u64(u64 v, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max_u64(v);
  __syncthreads();  // warp_key may still be read by a previous reduction
  if (lane == 0) sh.warp_key[warp] = v;
  __syncthreads();
  return warp_max_u64(sh.warp_key[lane]);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    compute_logprobs_kernel(float* __restrict__ sampled_logprob, int32_t* __restrict__ topk_ids,
                            float* __restrict__ topk_logprobs, const T* __restrict__ logits, int64_t row_stride, int V,
                            int K, bool vector_loads, const int64_t* __restrict__ sampled_ids) {
  __shared__ Shared sh;
  const int64_t b = blockIdx.x;
  const T* x = logits + b * row_stride;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  // 1. lse and the largest key of every warp, in one pass.
  Lse acc;
  u64 best = 0;
  for_each_logit(x, V, vector_loads, [&](float v, int i) {
    acc.add(v);
    const u64 key = rank_key(v, i);
    best = key > best ? key : best;
  });
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Lse other;
    other.max = __shfl_xor_sync(0xffffffffu, acc.max, o);
    other.sum = __shfl_xor_sync(0xffffffffu, acc.sum, o);
    acc = Lse::merge(acc, other);
  }
  best = warp_max_u64(best);
  if (lane == 0) {
    sh.warp_max[warp] = acc.max;
    sh.warp_sum[warp] = acc.sum;
    sh.warp_key[warp] = best;
  }
  if (threadIdx.x == 0) sh.count = 0;
  __syncthreads();
  if (warp == 0) {
    Lse all;
    all.max = sh.warp_max[lane];
    all.sum = sh.warp_sum[lane];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      Lse other;
      other.max = __shfl_xor_sync(0xffffffffu, all.max, o);
      other.sum = __shfl_xor_sync(0xffffffffu, all.sum, o);
      all = Lse::merge(all, other);
    }
    // The K-th largest warp key: a lane's rank is how many keys beat its own, equal keys
    // ordered by lane (only empty warps tie, at 0, which merely lowers the threshold).
    const u64 mine = sh.warp_key[lane];
    int above = 0;
    for (int l = 0; l < kWarps; ++l) {
      const u64 other = __shfl_sync(0xffffffffu, mine, l);
      above += other > mine || (other == mine && l < lane);
    }
    if (lane == 0) sh.lse = all.max + logf(all.sum);  // no finite logit: -inf, then NaN logprobs
    if (K > 0 && above == K - 1) sh.threshold = mine;
  }
  __syncthreads();
  const float lse = sh.lse;

  // 2. The sampled token.
  if (threadIdx.x == 0) {
    const int64_t id = sampled_ids[b];
    sampled_logprob[b] = (id >= 0 && id < V) ? load_logit(x, id) - lse : NAN;
  }
  if (K == 0) return;

  // 3. Gather the keys >= T and rank them.
  const u64 threshold = sh.threshold;
  for_each_logit(x, V, vector_loads, [&](float v, int i) {
    const u64 key = rank_key(v, i);
    if (key < threshold) return;
    const unsigned int at = atomicAdd(&sh.count, 1u);
    if (at < kCapacity) sh.cand[at] = key;
  });
  __syncthreads();
  const unsigned int n = sh.count;
  int32_t* ids_out = topk_ids + b * K;
  float* lp_out = topk_logprobs + b * K;
  if (n <= static_cast<unsigned int>(kCapacity)) {
    if (threadIdx.x < n) {
      const u64 mine = sh.cand[threadIdx.x];
      int rank = 0;
      for (unsigned int j = 0; j < n && rank < K; ++j) rank += sh.cand[j] > mine;
      if (rank < K) {
        const int id = key_id(mine);
        ids_out[rank] = id;
        lp_out[rank] = load_logit(x, id) - lse;
      }
    }
    return;
  }

  // 4. Too many keys above T: K exact passes.
  u64 below = ~u64{0};
  for (int k = 0; k < K; ++k) {
    u64 top = 0;
    for_each_logit(x, V, vector_loads, [&](float v, int i) {
      const u64 key = rank_key(v, i);
      if (key < below && key > top) top = key;
    });
    top = block_max_u64(top, sh);
    if (threadIdx.x == 0) {
      const int id = key_id(top);
      ids_out[k] = id;
      lp_out[k] = load_logit(x, id) - lse;
    }
    below = top;
  }
}

template <class T>
void launch(const ComputeLogprobsArgs& a, cudaStream_t stream) {
  const int64_t N = a.logits.shape[0], V = a.logits.shape[1], K = a.topk_ids.shape[1];
  if (N == 0) return;
  FK_CHECK(V < (int64_t{1} << 31), ComputeLogprobsArgs::kName, ": the CUDA baseline takes vocabularies below 2^31, got ",
           describe(a.logits));
  FK_CHECK(N <= 0x7fffffff, ComputeLogprobsArgs::kName, ": too many rows for one launch: ", N);
  const bool vector_loads = reinterpret_cast<uintptr_t>(a.logits.data) % 16 == 0 &&
                            (N == 1 || (a.logits.strides[0] * static_cast<int64_t>(sizeof(T))) % 16 == 0);
  compute_logprobs_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
      a.sampled_logprob.ptr<float>(), K > 0 ? a.topk_ids.ptr<int32_t>() : nullptr,
      K > 0 ? a.topk_logprobs.ptr<float>() : nullptr, a.logits.ptr<const T>(), a.logits.strides[0],
      static_cast<int>(V), static_cast<int>(K), vector_loads, a.sampled_ids.ptr<const int64_t>());
  FK_CUDA_CHECK_LAUNCH();
}

fk_status compute_logprobs_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ComputeLogprobsArgs*>(args);
    validate_compute_logprobs(a, DeviceType::cuda);
    const auto s = static_cast<cudaStream_t>(stream);
    switch (a.logits.dtype) {
      case DType::f32: return launch<float>(a, s);
      case DType::bf16: return launch<__nv_bfloat16>(a, s);
      default: FK_FAIL(FK_ERR_UNSUPPORTED, ComputeLogprobsArgs::kName, ": logits dtype ", dtype_name(a.logits.dtype));
    }
  });
}

FK_REGISTER_IMPL("compute_logprobs", cuda, compute_logprobs_cuda);

}  // namespace
}  // namespace fk::ops
