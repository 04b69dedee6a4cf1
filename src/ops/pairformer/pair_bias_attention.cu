// pair_bias_attention's CUDA baseline: FlashAttention-2's loop on the m16n8k16 tensor-core
// MMA with the pair bias read tile by tile beside the scores.
//
// One block of 4 warps takes 64 queries of one (row, head) (grid: rows x query tiles x
// heads). The Q tile stays in shared memory; 64-key tiles of K, V, the bias (the 64 x 64
// block of bias[group, head] for these queries and keys) and the row's key mask stream
// through two shared-memory stages, the next tile's copies (cp.async) in flight while the
// current one is computed. Each warp owns 16 queries: S = Q K^T lands in MMA accumulators,
// the bias is added from shared memory in the accumulators' layout, masked keys get -inf,
// the row maximum and sum are reduced over the 4 lanes of a row, and P = exp2(S - max),
// rounded to the dtype, is the A operand of P V straight from registers. Logits are in
// base 2 (scale * log2(e) and log2(e) folded in), accumulation fp32; a query whose keys
// are all masked keeps l = 0 and writes zeros. Head dims are padded to 32, 64 or 128
// (zeros past D in shared memory); shared-memory rows are padded by 8 elements so the
// fragment loads are bank-conflict-free. f32 inputs take a SIMT kernel (a warp per query,
// lanes over the head dim): a test dtype, not a production one.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fk/cuda/async_copy.cuh"
#include "fk/cuda/check.h"
#include "fk/cuda/mma.cuh"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/pairformer/pair_bias_attention_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 128;  // 4 warps x 16 queries
constexpr int kRows = 64;      // queries per block
constexpr int kKeys = 64;      // keys per tile
constexpr int kBLd = kKeys + 8;
constexpr float kLog2e = 1.4426950408889634f;

template <class T>
struct Params {
  T* out;
  const T* q;
  const T* k;
  const T* v;
  const T* bias;
  const T* mask;  // null: every key
  int64_t seq, heads, dim, rows_per_group;
  float scale_log2;
};

__device__ __forceinline__ uint32_t ld32(const void* p) { return *static_cast<const uint32_t*>(p); }

template <class T>
__device__ __forceinline__ uint32_t pack_elems(T lo, T hi) {
  const uint16_t l = *reinterpret_cast<const uint16_t*>(&lo), h = *reinterpret_cast<const uint16_t*>(&hi);
  return static_cast<uint32_t>(l) | (static_cast<uint32_t>(h) << 16);
}

template <class T>
__device__ __forceinline__ float to_float(T x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else return __half2float(x);
}

// Positions [p0, p0 + 64) of one head of a [S, Hh, D] row (row stride Hh D) into a
// [64][kD + 8] tile; positions past S and dims past D are zeros (cp.async zero fill).
template <class T, int kD>
__device__ __forceinline__ void copy_tile(T* tile, const T* src, int64_t stride, int64_t p0, int64_t seq, int dim) {
  constexpr int kLd = kD + 8, kVecs = kD / 8;
  for (int i = threadIdx.x; i < kRows * kVecs; i += kThreads) {
    const int r = i / kVecs, c = (i % kVecs) * 8;
    const bool in = p0 + r < seq && c < dim;
    cuda::cp_async16(tile + r * kLd + c, in ? src + (p0 + r) * stride + c : src, in ? 16 : 0);
  }
}

// The bias block [q0, q0 + 64) x [k0, k0 + 64) of one [S, S] head: 16-byte copies when
// rows are 16-byte multiples (kVec), element loads otherwise; zeros outside S x S.
template <class T, bool kVec>
__device__ __forceinline__ void copy_bias(T* tile, const T* bias, int64_t seq, int64_t q0, int64_t k0) {
  if constexpr (kVec) {
    for (int i = threadIdx.x; i < kRows * (kKeys / 8); i += kThreads) {
      const int r = i / (kKeys / 8), c = (i % (kKeys / 8)) * 8;
      const bool in = q0 + r < seq && k0 + c < seq;  // seq % 8 == 0: a vector is all in or all out
      cuda::cp_async16(tile + r * kBLd + c, in ? bias + (q0 + r) * seq + k0 + c : bias, in ? 16 : 0);
    }
  } else {
    for (int i = threadIdx.x; i < kRows * kKeys; i += kThreads) {
      const int r = i / kKeys, c = i % kKeys;
      const bool in = q0 + r < seq && k0 + c < seq;
      tile[r * kBLd + c] = in ? bias[(q0 + r) * seq + k0 + c] : T(0.f);
    }
  }
}

template <class T, int kD, bool kVecBias>
__global__ void __launch_bounds__(kThreads) pair_bias_attention_kernel(const Params<T> p) {
  constexpr int kLd = kD + 8, kDBlocks = kD / 8;
  const int64_t r = blockIdx.x, h = blockIdx.z, S = p.seq;
  const int64_t q0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int64_t stride = p.heads * p.dim;  // between positions of a row
  const T* qr = p.q + r * S * stride + h * p.dim;
  const T* kr = p.k + r * S * stride + h * p.dim;
  const T* vr = p.v + r * S * stride + h * p.dim;
  const T* br = p.bias + ((r / p.rows_per_group) * p.heads + h) * S * S;
  const T* mr = p.mask ? p.mask + r * S : nullptr;

  extern __shared__ uint4 smem_raw[];
  T* s_q = reinterpret_cast<T*>(smem_raw);
  T* s_k = s_q + kRows * kLd;              // 2 stages each of K, V, bias
  T* s_v = s_k + 2 * kKeys * kLd;
  T* s_b = s_v + 2 * kKeys * kLd;
  float* s_m = reinterpret_cast<float*>(s_b + 2 * kRows * kBLd);  // 2 stages of 64 key flags

  auto load_stage = [&](int stage, int64_t k0) {
    copy_tile<T, kD>(s_k + stage * kKeys * kLd, kr, stride, k0, S, static_cast<int>(p.dim));
    copy_tile<T, kD>(s_v + stage * kKeys * kLd, vr, stride, k0, S, static_cast<int>(p.dim));
    copy_bias<T, kVecBias>(s_b + stage * kRows * kBLd, br, S, q0, k0);
    if (threadIdx.x < kKeys) {
      const int64_t key = k0 + threadIdx.x;
      s_m[stage * kKeys + threadIdx.x] = key < S && (mr == nullptr || to_float(mr[key]) != 0.f) ? 1.f : 0.f;
    }
  };

  copy_tile<T, kD>(s_q, qr, stride, q0, S, static_cast<int>(p.dim));
  load_stage(0, 0);
  cuda::cp_async_commit();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  const int wr0 = warp * 16 + g, wr1 = wr0 + 8;  // this lane's two query rows within the tile
  float o[kDBlocks][4];
#pragma unroll
  for (int i = 0; i < kDBlocks; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const T* q_row0 = s_q + wr0 * kLd;
  const T* q_row1 = s_q + wr1 * kLd;

  const int tiles = static_cast<int>((S + kKeys - 1) / kKeys);
  for (int t = 0; t < tiles; ++t) {
    const int stage = t & 1;
    if (t + 1 < tiles) {  // the next tile's copies fly while this one is computed
      load_stage(stage ^ 1, static_cast<int64_t>(t + 1) * kKeys);
      cuda::cp_async_commit();
      cuda::cp_async_wait<1>();
    } else {
      cuda::cp_async_wait<0>();
    }
    __syncthreads();
    const T* sk = s_k + stage * kKeys * kLd;
    const T* sv = s_v + stage * kKeys * kLd;
    const T* sb = s_b + stage * kRows * kBLd;
    const float* sm = s_m + stage * kKeys;

    float s[8][4];
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
    for (int k0 = 0; k0 < kD; k0 += 16) {
      const uint32_t a[4] = {ld32(q_row0 + k0 + 2 * qd), ld32(q_row1 + k0 + 2 * qd), ld32(q_row0 + k0 + 8 + 2 * qd),
                             ld32(q_row1 + k0 + 8 + 2 * qd)};
#pragma unroll
      for (int nb = 0; nb < 8; ++nb) {
        const T* k_row = sk + (nb * 8 + g) * kLd + k0 + 2 * qd;
        cuda::mma_16x8x16<T>(s[nb], a, ld32(k_row), ld32(k_row + 8));
      }
    }

    // Scale, bias, mask (base 2), and the rows' running maxima (4 lanes share a row).
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = nb * 8 + 2 * qd + (e & 1);
        const int row = e < 2 ? wr0 : wr1;
        const float b = to_float(sb[row * kBLd + key]);
        s[nb][e] = sm[key] != 0.f ? s[nb][e] * p.scale_log2 + b * kLog2e : -INFINITY;
      }
      mx0 = fmaxf(mx0, fmaxf(s[nb][0], s[nb][1]));
      mx1 = fmaxf(mx1, fmaxf(s[nb][2], s[nb][3]));
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    const float new0 = fmaxf(m0, mx0), new1 = fmaxf(m1, mx1);
    // A row that has seen no visible key keeps max -inf: subtract 0 instead (its p are 0).
    const float use0 = new0 == -INFINITY ? 0.f : new0, use1 = new1 == -INFINITY ? 0.f : new1;
    const float alpha0 = exp2f(m0 - use0), alpha1 = exp2f(m1 - use1);
    m0 = new0, m1 = new1;
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) {
      s[nb][0] = exp2f(s[nb][0] - use0), s[nb][1] = exp2f(s[nb][1] - use0);
      s[nb][2] = exp2f(s[nb][2] - use1), s[nb][3] = exp2f(s[nb][3] - use1);
      sum0 += s[nb][0] + s[nb][1];
      sum1 += s[nb][2] + s[nb][3];
    }
    l0 = l0 * alpha0 + sum0;  // this lane's part of the row sum; reduced at the end
    l1 = l1 * alpha1 + sum1;
#pragma unroll
    for (int db = 0; db < kDBlocks; ++db) o[db][0] *= alpha0, o[db][1] *= alpha0, o[db][2] *= alpha1, o[db][3] *= alpha1;

    // O += P V: P's A fragments are the S accumulators of two 8-key blocks.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t a[4] = {cuda::pack2<T>(s[2 * kk][0], s[2 * kk][1]), cuda::pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             cuda::pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             cuda::pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const T* v0 = sv + (kk * 16 + 2 * qd) * kLd + g;
#pragma unroll
      for (int db = 0; db < kDBlocks; ++db) {
        const T* vc = v0 + db * 8;
        cuda::mma_16x8x16<T>(o[db], a, pack_elems(vc[0], vc[kLd]), pack_elems(vc[8 * kLd], vc[9 * kLd]));
      }
    }
    __syncthreads();  // this stage is consumed before the next iteration refills it
  }

#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;  // no visible key: zeros
  const int64_t i0 = q0 + wr0, i1 = q0 + wr1;
  T* out0 = p.out + (r * S + i0) * stride + h * p.dim;
  T* out1 = p.out + (r * S + i1) * stride + h * p.dim;
#pragma unroll
  for (int db = 0; db < kDBlocks; ++db) {
    const int col = db * 8 + 2 * qd;
    if (col >= p.dim) break;
    if (i0 < S) *reinterpret_cast<uint32_t*>(out0 + col) = cuda::pack2<T>(o[db][0] * inv0, o[db][1] * inv0);
    if (i1 < S) *reinterpret_cast<uint32_t*>(out1 + col) = cuda::pack2<T>(o[db][2] * inv1, o[db][3] * inv1);
  }
}

template <class T, int kD, bool kVecBias>
void launch(const Params<T>& p, int64_t rows, cudaStream_t stream) {
  constexpr size_t kSmem = (size_t{kRows} * (kD + 8) + size_t{4} * kKeys * (kD + 8) + size_t{2} * kRows * kBLd) *
                               sizeof(T) +
                           size_t{2} * kKeys * sizeof(float);
  static const bool attribute_set = [] {
    FK_CUDA_CHECK(cudaFuncSetAttribute(pair_bias_attention_kernel<T, kD, kVecBias>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem)));
    return true;
  }();
  (void)attribute_set;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(cuda::ceil_div(p.seq, kRows)),
                  static_cast<unsigned>(p.heads));
  pair_bias_attention_kernel<T, kD, kVecBias><<<grid, kThreads, kSmem, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

// f32: a warp per (row, query, head), lanes over the head dim (up to 4 elements each),
// one key at a time with the online softmax in fp32.
__global__ void pair_bias_attention_f32_kernel(const Params<float> p, int64_t total) {
  const int64_t w = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (w >= total) return;
  const int64_t S = p.seq, H = p.heads, D = p.dim, h = w % H, i = (w / H) % S, r = w / (H * S);
  const int64_t stride = H * D;
  const float* qr = p.q + (r * S + i) * stride + h * D;
  const float* br = p.bias + ((r / p.rows_per_group) * H + h) * S * S + i * S;
  float q[4], o[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int e = 0; e < 4; ++e) q[e] = lane + 32 * e < D ? qr[lane + 32 * e] : 0.f;
  float m = -INFINITY, l = 0.f;
  for (int64_t j = 0; j < S; ++j) {
    if (p.mask && p.mask[r * S + j] == 0.f) continue;
    const float* kj = p.k + (r * S + j) * stride + h * D;
    const float* vj = p.v + (r * S + j) * stride + h * D;
    float dot = 0.f;
#pragma unroll
    for (int e = 0; e < 4; ++e) dot += lane + 32 * e < D ? q[e] * kj[lane + 32 * e] : 0.f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    const float s = dot * p.scale_log2 + br[j] * kLog2e;
    const float nm = fmaxf(m, s), alpha = exp2f(m - nm), e_s = exp2f(s - nm);
    l = l * alpha + e_s;
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = o[e] * alpha + (lane + 32 * e < D ? e_s * vj[lane + 32 * e] : 0.f);
    m = nm;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  float* out = p.out + (r * S + i) * stride + h * D;
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (lane + 32 * e < D) out[lane + 32 * e] = o[e] * inv;
}

fk_status pair_bias_attention_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const PairBiasAttentionArgs*>(args);
    const PairBiasAttentionDims d = validate_pair_bias_attention(a, DeviceType::cuda);
    constexpr const char* op = PairBiasAttentionArgs::kName;
    if (d.rows == 0 || d.seq == 0) return;
    if (d.head_dim % 8 != 0 || d.head_dim > 128)
      FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline takes head dims that are multiples of 8 up to 128, got ",
              d.head_dim);
    for (const TensorView* t : {&a.q, &a.k, &a.v, &a.out})
      if (!cuda::aligned16(t->data))
        FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline needs 16-byte aligned q, k, v and out, got ", describe(*t));
    FK_CHECK(d.heads <= 65535 && cuda::ceil_div(d.seq, kRows) <= 65535 && d.rows < (int64_t{1} << 31), op,
             ": at most 65535 heads, 4M positions and 2^31 rows, got ", describe(a.q));
    const auto s = static_cast<cudaStream_t>(stream);
    const float scale_log2 = a.scale * kLog2e;
    const int64_t per_group = d.rows / d.groups;
    cuda::dispatch_float_dtype(a.q.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const Params<T> p{a.out.ptr<T>(), a.q.ptr<T>(),    a.k.ptr<T>(), a.v.ptr<T>(),
                        a.bias.ptr<T>(), d.masked ? a.mask.ptr<T>() : nullptr,
                        d.seq,           d.heads,         d.head_dim,   per_group,
                        scale_log2};
      if constexpr (std::is_same_v<T, float>) {
        const int64_t total = d.rows * d.seq * d.heads;
        const unsigned blocks = static_cast<unsigned>(cuda::ceil_div(total * 32, 256));
        pair_bias_attention_f32_kernel<<<blocks, 256, 0, s>>>(p, total);
        FK_CUDA_CHECK_LAUNCH();
      } else {
        const bool vec_bias = d.seq % 8 == 0 && cuda::aligned16(a.bias.data);
        auto go = [&](auto vec) {
          constexpr bool kVec = decltype(vec)::value;
          if (d.head_dim <= 32) launch<T, 32, kVec>(p, d.rows, s);
          else if (d.head_dim <= 64) launch<T, 64, kVec>(p, d.rows, s);
          else launch<T, 128, kVec>(p, d.rows, s);
        };
        if (vec_bias) go(std::true_type{});
        else go(std::false_type{});
      }
    });
  });
}

FK_REGISTER_IMPL("pair_bias_attention", cuda, pair_bias_attention_cuda);

}  // namespace
}  // namespace fk::ops
