#include "ops/linear/skinny_gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/sm_count.h"
#include "fk/cuda/vec.cuh"
#include "ops/linear/decode_gemm_choice.h"
#include "ops/linear/streaming_load.cuh"

namespace fk::ops {
namespace {

constexpr int kWarps = 8;     // warps per block, one weight row each
constexpr int kUnroll = 4;    // chunk steps in flight per thread (R 16-byte loads each)
// K slices grow until the grid has this many warps per SM. 32 since the norm prologue
// (64 before): every CTA of a norm-prologue GEMV normalises the input row again (a
// block-wide reduction before its first FMA), so fewer, longer CTAs pay it less often; at
// 32 the qkv projections of Qwen3-30B-A3B (N = 5120) and Llama-3.1-8B (6144) run unsliced
// in one wave: batch-1 decode 3.186 -> 3.115 ms and 5.663 -> 5.616 ms on an H100
// (bench/results/h100/moe_decode_occupancy.json). The plain kernels take the same target
// (as fast as 64 for them there), so that rms_norm_linear computes the bits linear does on
// the normalised row.
constexpr int64_t kTargetWarpsPerSm = 32;

__device__ __forceinline__ float2 to_float2(uint32_t bits, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
}
__device__ __forceinline__ float2 to_float2(uint32_t bits, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

// The 8 elements of a 16-byte chunk as floats.
template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t bits[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = to_float2(bits[i], T{});
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// 8 floats rounded into a 16-byte chunk of T (the inverse of unpack8).
template <class T>
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  return uint4{pack2(f[0], f[1], T{}), pack2(f[2], f[3], T{}), pack2(f[4], f[5], T{}), pack2(f[6], f[7], T{})};
}

// SkinnyNorm with typed pointers.
template <class T>
struct NormPrologue {
  const T* residual_in;
  T* residual_out;
  T* normed;
  const T* weight;
  int64_t ld_residual_in, ld_residual_out, ld_normed;
  float eps;
};

// The norm prologue (SkinnyNorm): every thread of the CTA takes chunks c = tid, tid + 256,
// ... of each of the M rows, forms s = round(input + residual_in), keeps it in `rows` (shared,
// [M][K / 8] chunks) and sums its squares; after the block sums (fixed order), the same
// thread scales its own chunks in place: row = round(s * inv_rms * w), the arithmetic of
// fused_add_rms_norm's kernel. CTA 0 also stores s and the rows to global memory. Ends
// with a barrier, after which any warp may read any chunk.
template <class T, int M>
__device__ __forceinline__ void normalise_rows(uint4* rows, const T* input, int64_t ld_input,
                                               const NormPrologue<T>& np, int64_t chunks) {
  __shared__ float scratch[32];
  const bool writer = blockIdx.x == 0;
  float sum_sq[M];
#pragma unroll
  for (int m = 0; m < M; ++m) sum_sq[m] = 0.f;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
      uint4 v = __ldg(reinterpret_cast<const uint4*>(input + m * ld_input + c * 8));
      float f[8];
      unpack8<T>(v, f);
      if (np.residual_in) {
        float r[8];
        unpack8<T>(__ldg(reinterpret_cast<const uint4*>(np.residual_in + m * np.ld_residual_in + c * 8)), r);
#pragma unroll
        for (int i = 0; i < 8; ++i) f[i] += r[i];
        v = pack8<T>(f);
        unpack8<T>(v, f);  // the rounded sum is what is stored and normalised
        if (writer) *reinterpret_cast<uint4*>(np.residual_out + m * np.ld_residual_out + c * 8) = v;
      }
      rows[m * chunks + c] = v;
#pragma unroll
      for (int i = 0; i < 8; ++i) sum_sq[m] += f[i] * f[i];
    }
  }
  float inv[M];
#pragma unroll
  for (int m = 0; m < M; ++m)
    inv[m] = rsqrtf(cuda::block_sum(sum_sq[m], scratch) / static_cast<float>(chunks * 8) + np.eps);
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float w[8];
    unpack8<T>(__ldg(reinterpret_cast<const uint4*>(np.weight + c * 8)), w);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float f[8];
      unpack8<T>(rows[m * chunks + c], f);
#pragma unroll
      for (int i = 0; i < 8; ++i) f[i] = f[i] * inv[m] * w[i];
      const uint4 v = pack8<T>(f);
      rows[m * chunks + c] = v;
      if (writer) *reinterpret_cast<uint4*>(np.normed + m * np.ld_normed + c * 8) = v;
    }
  }
  __syncthreads();
}

// Block: kWarps warps in kWarps / KS row groups of KS warps. The warps of a group compute
// the same R consecutive output columns n0 .. n0 + R - 1 for all M rows, each over its own
// slice of K (KS slices of whole chunks, in order); with KS = 1 a warp takes all of K.
// Lane l takes the slice's 16-byte chunks l, l + 32, ... (coalesced 512-byte warp loads),
// kUnroll chunk steps of R loads in flight per thread; each input chunk loaded serves R
// weight rows (L1 input loads per weight load: M / R). The R x M partial sums are reduced
// across the warp, then across the group's slices through shared memory in slice order
// (deterministic).
//
// Why slices: a narrow weight (an o-projection of N = 2048, a router of N = 128) gives too
// few warps to keep enough loads in flight, and each warp walks its long row in dependent
// rounds; splitting K multiplies the warps and shortens the rounds.
//
// kNorm: the input rows go through the norm prologue first (normalise_rows) and are then
// read from shared memory.
template <class T, int M, int R, int KS, bool kNorm>
__global__ __launch_bounds__(kWarps * 32) void skinny_gemm_kernel(T* __restrict__ out, int64_t ld_out,
                                                                  const T* __restrict__ input, int64_t ld_input,
                                                                  const T* __restrict__ weight, int64_t ld_weight,
                                                                  const T* __restrict__ bias, int64_t N, int64_t K,
                                                                  const NormPrologue<T> np) {
  static_assert(kWarps % KS == 0, "a block holds whole row groups");
  constexpr int U = kUnroll;  // chunk steps per iteration
  __shared__ float slice_sums[KS > 1 ? kWarps : 1][R * M];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int group = warp / KS, slice = warp % KS;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * (kWarps / KS) + group) * R;
  const int64_t chunks = K / 8;
  const int64_t begin = chunks * slice / KS, end = chunks * (slice + 1) / KS;
  const T* w_rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) w_rows[r] = weight + (n0 + r < N ? n0 + r : n0) * ld_weight;  // past N: a duplicate, unused
  // Launched with PDL: while the kernel before (the norm or activation that produces
  // `input`) still runs, pull this thread's first chunk step of weights into L2, so the
  // weight stream is already going when the input becomes readable.
  if (n0 < N)
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (begin + lane + 32 * u < end)
#pragma unroll
        for (int r = 0; r < R; ++r) cuda::prefetch_l2(w_rows[r] + (begin + lane + 32 * u) * 8);
  cuda::pdl_wait();
  cuda::pdl_trigger();
  extern __shared__ uint4 normed_rows[];  // kNorm: [M][K / 8] chunks
  if constexpr (kNorm) normalise_rows<T, M>(normed_rows, input, ld_input, np, chunks);
  if (KS == 1 && n0 >= N) return;  // with slices, every warp reaches the barrier below
  float acc[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m) acc[r][m] = 0.f;

  // One chunk step: every weight chunk and every input chunk is converted to floats once
  // (converting inside each of the R x M dot products made the kernel ALU-bound at M = 8).
  auto accumulate = [&](const uint4 (&w)[R], int64_t chunk) {
    float wf[R][8];
#pragma unroll
    for (int r = 0; r < R; ++r) unpack8<T>(w[r], wf[r]);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      float xf[8];
      if constexpr (kNorm) unpack8<T>(normed_rows[m * chunks + chunk], xf);
      else unpack8<T>(__ldg(reinterpret_cast<const uint4*>(input + m * ld_input + chunk * 8)), xf);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[r][m] = fmaf(wf[r][i], xf[i], acc[r][m]);
    }
  };
  if (n0 < N) {
    int64_t c = begin + lane;
    for (; c + 32 * (U - 1) < end; c += 32 * U) {
      uint4 w[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) w[u][r] = load_streaming(w_rows[r] + (c + 32 * u) * 8);
#pragma unroll
      for (int u = 0; u < U; ++u) accumulate(w[u], c + 32 * u);
    }
    for (; c < end; c += 32) {
      uint4 w[R];
#pragma unroll
      for (int r = 0; r < R; ++r) w[r] = load_streaming(w_rows[r] + c * 8);
      accumulate(w, c);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[r][m] += __shfl_xor_sync(0xffffffffu, acc[r][m], off);
  if constexpr (KS > 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) slice_sums[warp][r * M + m] = acc[r][m];
    __syncthreads();
    if (slice != 0 || n0 >= N) return;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < KS; ++k) v += slice_sums[group * KS + k][r * M + m];
        acc[r][m] = v;
      }
  }
  // Lane r * M + m writes out[m, n0 + r].
  if (lane < R * M) {
    float v = 0.f;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int m = 0; m < M; ++m)
        if (r * M + m == lane) v = acc[r][m];
    const int r = lane / M, m = lane % M;
    const int64_t n = n0 + r;
    if (n < N) {
      if (bias) v += cuda::to_float(bias[n]);
      out[m * ld_out + n] = cuda::from_float<T>(v);
    }
  }
}

// K slices per row group: grow until the grid holds about kTargetWarpsPerSm warps per SM,
// as long as every slice keeps at least one whole warp step (32 chunks).
int slices_for(int64_t row_warps, int64_t chunks) {
  const int64_t sms = cuda::current_sm_count();
  int ks = 1;
  while (ks < kWarps && row_warps * ks < kTargetWarpsPerSm * sms && chunks / (2 * ks) >= 32) ks *= 2;
  return ks;
}

template <class T>
NormPrologue<T> norm_prologue(const SkinnyGemm& g) {
  NormPrologue<T> np{};
  if (const SkinnyNorm* n = g.norm) {
    np.residual_in = static_cast<const T*>(n->residual_in);
    np.residual_out = static_cast<T*>(n->residual_out);
    np.normed = static_cast<T*>(n->normed);
    np.weight = static_cast<const T*>(n->weight);
    np.ld_residual_in = n->ld_residual_in;
    np.ld_residual_out = n->ld_residual_out;
    np.ld_normed = n->ld_normed;
    np.eps = n->eps;
  }
  return np;
}

template <class T, int M, int R, int KS, bool kNorm>
void launch_sliced(const SkinnyGemm& g, cudaStream_t s) {
  constexpr int64_t rows_per_block = static_cast<int64_t>(kWarps / KS) * R;
  const auto blocks = static_cast<unsigned>((g.N + rows_per_block - 1) / rows_per_block);
  const auto kernel = skinny_gemm_kernel<T, M, R, KS, kNorm>;
  const size_t smem = kNorm ? static_cast<size_t>(M * g.K) * sizeof(T) : 0;
  if (smem > 48 * 1024)  // beyond the default limit of dynamic shared memory
    FK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSkinnyNormMaxBytes)));
  cuda::launch_pdl(kernel, dim3(blocks), dim3(kWarps * 32), smem, s, static_cast<T*>(g.out), g.ld_out,
                   static_cast<const T*>(g.input), g.ld_input, static_cast<const T*>(g.weight), g.ld_weight,
                   static_cast<const T*>(g.bias), g.N, g.K, norm_prologue<T>(g));
}

template <class T, int M, int R, bool kNorm>
void launch_with_slices(const SkinnyGemm& g, cudaStream_t s) {
  switch (slices_for((g.N + R - 1) / R, g.K / 8)) {
    case 1: return launch_sliced<T, M, R, 1, kNorm>(g, s);
    case 2: return launch_sliced<T, M, R, 2, kNorm>(g, s);
    case 4: return launch_sliced<T, M, R, 4, kNorm>(g, s);
    default: return launch_sliced<T, M, R, 8, kNorm>(g, s);
  }
}

// One weight row per warp at 1 row; from 2 rows on, two (each input chunk serves both), and
// three for wide weights at 4 rows (skinny_weight_rows_per_warp).
// Measured on an H100 at 2 rows (bench/results/h100/linear_decode_rows.json): two weight
// rows per warp, unsliced, beat one row per warp with slices by 2-7% on Llama-3.1-8B's
// decode GEMMs, reaching the 1-row times. Slices stay at 1 row, and at 2 rows for narrow
// weights (Qwen3's o-projection and router), where the grid has too few warps otherwise;
// at 4 rows they made the Llama-3.1-8B decode step slower (linear_decode_slices.json).
template <class T, int M, bool kNorm>
void launch_rows(const SkinnyGemm& g, cudaStream_t s) {
  if constexpr (M == 1) {
    launch_with_slices<T, M, 1, kNorm>(g, s);
  } else {
    if constexpr (M == 2)
      if (narrow_weight(g.N, cuda::current_sm_count()))
        return launch_with_slices<T, M, 2, kNorm>(g, s);
    if constexpr (M == 4)  // three weight rows per warp for wide weights (decode_gemm_choice.h)
      if (skinny_weight_rows_per_warp(M, g.N, cuda::current_sm_count()) == 3)
        return launch_sliced<T, M, 3, 1, kNorm>(g, s);
    launch_sliced<T, M, 2, 1, kNorm>(g, s);
  }
}

template <class T, int M>
void launch_rows(const SkinnyGemm& g, cudaStream_t s) {
  if constexpr (M == 1)  // the norm prologue is for one row (SkinnyNorm)
    if (g.norm) return launch_rows<T, M, true>(g, s);
  launch_rows<T, M, false>(g, s);
}

template <class T>
void launch(const SkinnyGemm& g, cudaStream_t s) {
  switch (g.M) {
    case 1: return launch_rows<T, 1>(g, s);
    case 2: return launch_rows<T, 2>(g, s);
    case 3: return launch_rows<T, 3>(g, s);
    case 4: return launch_rows<T, 4>(g, s);
    default: FK_FAIL(FK_ERR_INTERNAL, "skinny_gemm: M = ", g.M, " outside [1, ", kSkinnyMaxRows, "]");
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

bool norm_prologue_applies(const SkinnyGemm& g) {
  const SkinnyNorm* n = g.norm;
  if (n == nullptr) return true;
  const bool residual = n->residual_in != nullptr;
  return g.M == 1 && g.K * 2 <= kSkinnyNormMaxBytes && aligned16(n->normed) && aligned16(n->weight) &&
         (!residual || (aligned16(n->residual_in) && aligned16(n->residual_out)));
}

}  // namespace

bool skinny_gemm_applies(const SkinnyGemm& g) {
  return g.M >= 1 && g.M <= kSkinnyMaxRows && g.N >= 1 && (g.dtype == DType::bf16 || g.dtype == DType::f16) &&
         g.K % 8 == 0 && g.K > 0 && aligned16(g.input) && aligned16(g.weight) && (g.M == 1 || g.ld_input % 8 == 0) &&
         (g.N == 1 || g.ld_weight % 8 == 0) && norm_prologue_applies(g);
}

void skinny_gemm(const SkinnyGemm& g, void* stream) {
  FK_CHECK(skinny_gemm_applies(g), "skinny_gemm: the problem does not fit the kernel (M=", g.M, " N=", g.N, " K=", g.K,
           ")");
  const auto s = static_cast<cudaStream_t>(stream);
  if (g.dtype == DType::bf16)
    launch<__nv_bfloat16>(g, s);
  else
    launch<__half>(g, s);
}

}  // namespace fk::ops
