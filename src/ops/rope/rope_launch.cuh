// Host side of the rope CUDA baselines: kernel parameters from validated views, the choice
// between the vector and the scalar kernel, and the launch geometry.
#pragma once
#include <algorithm>
#include <cstdint>

#include "fk/cuda/check.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/rope/rope_variants.h"
#include "ops/rope/rope_kernels.cuh"
#include "ops/rope/rope_validate.h"

namespace fk::ops::rope_cuda {

struct LaunchInputs {
  const char* op = nullptr;
  RopeShape shape;
  TensorView positions, query, key, cos_sin_cache;
  const TensorView* q_weight = nullptr;  // qk_norm_rope, rope_and_cache with the norm
  const TensorView* k_weight = nullptr;
  RopeStyle style = RopeStyle::neox;
  float eps = 0;
  // rope_and_cache only.
  const TensorView* value = nullptr;
  const TensorView* k_cache = nullptr;
  const TensorView* v_cache = nullptr;
  const TensorView* slot_mapping = nullptr;
};

constexpr int kThreadsPerBlock = 256;  // the vector kernel's target block size
constexpr int kScalarThreads = 128;
constexpr int64_t kSplitHeadsMaxTokens = 64;  // up to this many tokens, a token's heads span blocks

inline int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }
inline int next_pow2(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

inline KernelParams make_params(const LaunchInputs& in) {
  KernelParams p;
  const RopeShape& s = in.shape;
  FK_CHECK(s.q.heads + s.k.heads <= INT32_MAX, in.op, ": too many heads: ", s.q.heads, " + ", s.k.heads);
  p.q = in.query.data;
  p.q_token_stride = s.q.token_stride;
  p.q_head_stride = s.q.head_stride;
  p.q_heads = static_cast<int>(s.q.heads);
  p.k = in.key.data;
  p.k_token_stride = s.k.token_stride;
  p.k_head_stride = s.k.head_stride;
  p.k_heads = static_cast<int>(s.k.heads);
  if (in.q_weight) p.q_weight = in.q_weight->data, p.k_weight = in.k_weight->data;
  p.positions = in.positions.data;
  p.pos_stride = in.positions.strides[0];
  p.pos_is_i64 = in.positions.dtype == DType::i64;
  p.cache = in.cos_sin_cache.data;
  p.max_pos = s.max_pos;
  p.rot_dim = static_cast<int>(s.rot_dim);
  p.head_size = static_cast<int>(s.head_size);
  p.eps = in.eps;
  p.tokens = s.q.tokens;
  p.early_reads = rope_late_reads(in.op) ? 0 : 1;
  if (in.value) {
    p.v = in.value->data;
    p.v_token_stride = in.value->strides[0];
    p.v_head_stride = in.value->strides[1];
    p.k_cache = in.k_cache->data;
    p.v_cache = in.v_cache->data;
    p.k_page_stride = in.k_cache->strides[0];
    p.v_page_stride = in.v_cache->strides[0];
    p.page_size = in.k_cache->shape[1];
    p.num_slots = in.k_cache->shape[0] * in.k_cache->shape[1];
    p.slot_mapping = static_cast<const long long*>(in.slot_mapping->data);
  }
  return p;
}

template <class T, class C, RopeStyle kStyle, bool kNorm, bool kCache>
void launch_vec(const KernelParams& p, int slots, cudaStream_t stream) {
  VecGeometry g;
  g.group_lanes = std::min(32, next_pow2(slots));
  const int slots_per_lane = ceil_div(slots, g.group_lanes);
  // Spread the token's heads over at most kThreadsPerBlock threads, as evenly as the
  // warp granularity allows (a warp holds 32 / G whole groups).
  const int heads = p.q_heads + p.k_heads * (kCache ? 2 : 1);  // with kCache the value heads too
  const int max_head_lanes = kThreadsPerBlock / g.group_lanes;
  const int rounds = ceil_div(heads, max_head_lanes);
  const int groups_per_warp = 32 / g.group_lanes;
  g.head_lanes = ceil_div(ceil_div(heads, rounds), groups_per_warp) * groups_per_warp;
  const int threads_x = g.group_lanes * g.head_lanes;
  const int tokens_per_block =
      static_cast<int>(std::clamp<int64_t>(kThreadsPerBlock / threads_x, 1, std::max<int64_t>(p.tokens, 1)));
  const dim3 block(threads_x, tokens_per_block);
  // A decode step's few tokens: one block per token would walk its heads in `rounds`
  // dependent passes on one SM (Qwen3's 36 heads: 2), so the rounds go to blocks of their
  // own. Prefill keeps one block per token group (the cos/sin row is loaded once).
  const unsigned head_blocks = p.tokens <= kSplitHeadsMaxTokens ? static_cast<unsigned>(rounds) : 1U;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.tokens, tokens_per_block)), head_blocks);
  if (slots_per_lane == 1) {
    cuda::launch_pdl(rope_vec_kernel<T, C, kStyle, kNorm, kCache, 1>, grid, block, 0, stream, p, g);
  } else if (slots_per_lane == 2) {
    cuda::launch_pdl(rope_vec_kernel<T, C, kStyle, kNorm, kCache, 2>, grid, block, 0, stream, p, g);
  } else {
    cuda::launch_pdl(rope_vec_kernel<T, C, kStyle, kNorm, kCache, 4>, grid, block, 0, stream, p, g);
  }
}

inline bool aligned16(const void* p) { return cuda::aligned16(p); }

// Picks the vector kernel when every access it makes is a naturally aligned vector.
template <class T, class C, bool kNorm, bool kCache>
void launch_typed(const LaunchInputs& in, const KernelParams& p, cudaStream_t stream) {
  constexpr int N = cuda::Vec16<T>::N;
  const bool neox = in.style == RopeStyle::neox;
  const int rot = p.rot_dim, D = p.head_size;
  constexpr bool kTail = kNorm || kCache;  // the vector kernel then covers whole heads
  const bool shape_ok = (neox ? (rot / 2) % N == 0 : rot % N == 0) && (!kTail || (D - rot) % N == 0);
  const bool q_ok = aligned16(p.q) && p.q_token_stride % N == 0 && p.q_head_stride % N == 0;
  const bool k_ok = p.k_heads == 0 || (aligned16(p.k) && p.k_token_stride % N == 0 && p.k_head_stride % N == 0);
  const bool w_ok = !kNorm || (aligned16(p.q_weight) && aligned16(p.k_weight));
  // Cache rows start at multiples of D elements from 16-byte aligned pages.
  const bool c_ok = !kCache || (aligned16(p.v) && p.v_token_stride % N == 0 && p.v_head_stride % N == 0 &&
                                aligned16(p.k_cache) && aligned16(p.v_cache) && p.k_page_stride % N == 0 &&
                                p.v_page_stride % N == 0 && D % N == 0);
  const int pair_slots = neox ? rot / 2 / N : rot / N;
  const int slots = shape_ok ? pair_slots + (kTail ? (D - rot) / N : 0) : 0;
  const bool vec_ok =
      shape_ok && q_ok && k_ok && w_ok && c_ok && aligned16(p.cache) && slots >= 1 && slots <= 4 * 32;
  if (vec_ok) {
    if (neox) return launch_vec<T, C, RopeStyle::neox, kNorm, kCache>(p, slots, stream);
    return launch_vec<T, C, RopeStyle::gptj, kNorm, kCache>(p, slots, stream);
  }
  cuda::launch_pdl(rope_scalar_kernel<T, C, kNorm, kCache>, dim3(static_cast<unsigned>(p.tokens)),
                   dim3(kScalarThreads), 0, stream, p, in.style);
}

template <class T, bool kNorm, bool kCache>
void launch_cache_dtype(const LaunchInputs& in, const KernelParams& p, cudaStream_t stream) {
  if (in.cos_sin_cache.dtype == DType::f32) return launch_typed<T, float, kNorm, kCache>(in, p, stream);
  return launch_typed<T, T, kNorm, kCache>(in, p, stream);  // validated: f32 or the dtype of query
}

// kNorm: the per-head RMSNorm first; kCache: the KV-cache write after (in.value and the
// caches set).
template <bool kNorm, bool kCache = false>
void launch_rope(const LaunchInputs& in, cudaStream_t stream) {
  const KernelParams p = make_params(in);
  if (p.tokens == 0) return;
  const cuda::PdlOffScope pdl(pdl_off_for(in.op));
  FK_CHECK(p.tokens <= INT32_MAX, in.op, ": at most 2^31 - 1 tokens per call, got ", p.tokens);
  switch (in.query.dtype) {
    case DType::f32:
      if constexpr (!kCache) return launch_typed<float, float, kNorm, false>(in, p, stream);
      FK_FAIL(FK_ERR_UNSUPPORTED, in.op, ": the KV-cache write takes 16-bit tensors, got f32");
    case DType::f16: return launch_cache_dtype<__half, kNorm, kCache>(in, p, stream);
    case DType::bf16: return launch_cache_dtype<__nv_bfloat16, kNorm, kCache>(in, p, stream);
    default: FK_FAIL(FK_ERR_UNSUPPORTED, in.op, ": dtype ", dtype_name(in.query.dtype));
  }
}

}  // namespace fk::ops::rope_cuda
