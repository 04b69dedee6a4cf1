// mrope_rotary_embedding CUDA baseline.
//
// Memory bound, as rotary_embedding: Qwen3-VL-8B prefill of 4352 tokens (32 q + 8 k heads
// x 128, bf16) reads and writes q and k once, 2 * 4352 * 40 * 128 * 2 B = 89 MB, a floor of
// about 30 us at 3.0 TB/s; the positions (3 rows) and up to three cache rows per token add
// about 6 MB.
//
// One block per token (grid-strided past 65535): the block first gathers the token's
// cos/sin per frequency into shared memory, each frequency from its axis's cache row (the
// axis is a pure function of the frequency index, mrope_axis), then its threads walk the
// (head, pair) items of q and k, keeping both elements of a neox pair in one thread. A
// position outside the cache leaves the token untouched (no host sync to report it).
// Math in fp32, rounded once to the dtype.
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/rope/mrope_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHalf = 512;  // rot_dim / 2 held in shared memory (head sizes up to 1024)

template <class T, class C, class P>
struct MropeParams {
  const P* positions;
  int64_t pos_row_stride, pos_tok_stride;
  T* q;
  int64_t q_tok_stride, q_head_stride;
  int q_heads;
  T* k;
  int64_t k_tok_stride, k_head_stride;
  int k_heads;
  const C* cache;
  int64_t max_pos;
  int half;
  int s0, s1, s2;
  bool interleaved;
  int64_t tokens;
};

template <class T, class C, class P>
__global__ void __launch_bounds__(kThreads) mrope_kernel(const MropeParams<T, C, P> p) {
  __shared__ float cos_s[kMaxHalf];
  __shared__ float sin_s[kMaxHalf];
  __shared__ int bad;
  for (int64_t t = blockIdx.x; t < p.tokens; t += gridDim.x) {
    if (threadIdx.x == 0) bad = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < p.half; i += blockDim.x) {
      const int a = mrope_axis(i, p.s0, p.s1, p.s2, p.interleaved);
      const int64_t pos = static_cast<int64_t>(p.positions[a * p.pos_row_stride + t * p.pos_tok_stride]);
      if (pos < 0 || pos >= p.max_pos) {
        bad = 1;
        continue;
      }
      const C* row = p.cache + pos * 2 * p.half;
      cos_s[i] = cuda::to_float(row[i]);
      sin_s[i] = cuda::to_float(row[p.half + i]);
    }
    __syncthreads();
    if (!bad) {
      const int q_items = p.q_heads * p.half, items = q_items + p.k_heads * p.half;
      for (int it = threadIdx.x; it < items; it += blockDim.x) {
        const bool is_q = it < q_items;
        const int j = is_q ? it : it - q_items;
        const int h = j / p.half, i = j % p.half;
        T* x = is_q ? p.q + t * p.q_tok_stride + h * p.q_head_stride : p.k + t * p.k_tok_stride + h * p.k_head_stride;
        const float x1 = cuda::to_float(x[i]), x2 = cuda::to_float(x[i + p.half]);
        const float c = cos_s[i], s = sin_s[i];
        x[i] = cuda::from_float<T>(x1 * c - x2 * s);
        x[i + p.half] = cuda::from_float<T>(x2 * c + x1 * s);
      }
    }
    __syncthreads();  // the next token overwrites cos_s / sin_s / bad
  }
}

template <class T, class C, class P>
void launch(const MropeRotaryEmbeddingArgs& a, const RopeShape& s, cudaStream_t stream) {
  MropeParams<T, C, P> p{};
  p.positions = static_cast<const P*>(a.positions.data);
  p.pos_row_stride = a.positions.strides[0];
  p.pos_tok_stride = a.positions.strides[1];
  p.q = static_cast<T*>(a.query.data);
  p.q_tok_stride = s.q.token_stride;
  p.q_head_stride = s.q.head_stride;
  p.q_heads = static_cast<int>(s.q.heads);
  p.k = static_cast<T*>(a.key.data);
  p.k_tok_stride = s.k.token_stride;
  p.k_head_stride = s.k.head_stride;
  p.k_heads = static_cast<int>(s.k.heads);
  p.cache = static_cast<const C*>(a.cos_sin_cache.data);
  p.max_pos = s.max_pos;
  p.half = static_cast<int>(s.rot_dim / 2);
  p.s0 = a.mrope_section[0];
  p.s1 = a.mrope_section[1];
  p.s2 = a.mrope_section[2];
  p.interleaved = a.interleaved != 0;
  p.tokens = s.q.tokens;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(s.q.tokens, 65535));
  mrope_kernel<T, C, P><<<grid, kThreads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status mrope_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MropeRotaryEmbeddingArgs*>(args);
    const RopeShape s = validate_mrope_rotary_embedding(a, RopeImpl::cuda);
    FK_CHECK(s.rot_dim / 2 <= kMaxHalf, a.kName, ": rot_dim ", s.rot_dim, " is above the CUDA baseline's ",
             2 * kMaxHalf);
    if (s.q.tokens == 0) return;
    const auto st = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.query.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const bool cache_f32 = a.cos_sin_cache.dtype == DType::f32;
      const bool pos64 = a.positions.dtype == DType::i64;
      if (cache_f32 && pos64) launch<T, float, int64_t>(a, s, st);
      else if (cache_f32) launch<T, float, int32_t>(a, s, st);
      else if (pos64) launch<T, T, int64_t>(a, s, st);
      else launch<T, T, int32_t>(a, s, st);
    });
  });
}

FK_REGISTER_IMPL("mrope_rotary_embedding", cuda, mrope_cuda);

}  // namespace
}  // namespace fk::ops
