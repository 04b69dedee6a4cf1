// varlen_attention CUDA baseline: a tiled online-softmax kernel (FlashAttention-2's loop)
// on the m16n8k16 tensor-core MMA.
//
// One block of 4 warps takes 64 query rows of one sequence and one query head (grid:
// query tiles x sequences x heads; tiles past a sequence's length exit at once). The Q tile
// stays in shared memory; 64-key K and V tiles stream through it. Each warp owns 16 query
// rows: S = Q K^T lands in MMA accumulators (rows g and g + 8 of the warp, two columns of
// every 8-key block per lane), the row maximum and sum are reduced over the 4 lanes of a
// row, and P = exp2(S - max), rounded to the dtype, is fed back from those registers as
// the A operand of P V without a trip through shared memory. The output accumulator
// (16 x D per warp) lives in registers and is rescaled by exp2(old max - new max) per row.
// Causal blocks stop at the last key their last row sees. Head dims are padded to the
// tile width 64, 80, 96, 128 or 256 (zeros past D in shared memory; a multiple of 16, the
// MMA's k), so any multiple of 8 up to 256 runs. Logits use exp2 with sm_scale * log2(e) folded in; accumulation is fp32.
// Shared memory rows are padded by 8 elements so the fragment loads are bank-conflict-free.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fk/cuda/check.h"
#include "fk/cuda/mma.cuh"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/attention/cuda/varlen_attention_sm90.h"
#include "ops/attention/varlen_attention_validate.h"
#include "ops/common/variant_flag.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 128;  // 4 warps x 16 query rows
constexpr int kRows = 64;      // query rows per block
constexpr int kKeys = 64;      // keys per K/V tile

template <class T>
struct VarlenParams {
  T* out;
  const T* q;
  const T* k;
  const T* v;
  const int32_t* cu_q;
  const int32_t* cu_k;
  const int32_t* used_k;  // seqused_k, or null
  int64_t out_s0, out_s1, q_s0, q_s1, k_s0, k_s1, v_s0, v_s1;
  int dim;
  int group;  // query heads per KV head
  float scale_log2;
  int causal;
};

template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&r);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 r = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&r);
}

template <class T>
__device__ __forceinline__ uint32_t pack_elems(T lo, T hi) {
  const uint16_t l = *reinterpret_cast<const uint16_t*>(&lo), h = *reinterpret_cast<const uint16_t*>(&hi);
  return static_cast<uint32_t>(l) | (static_cast<uint32_t>(h) << 16);
}

__device__ __forceinline__ uint32_t ld32(const void* p) { return *static_cast<const uint32_t*>(p); }

// Rows [row0, row0 + 64) of a [tokens, heads, D] tensor's head into a [64][kLd] shared tile;
// rows past `rows` and columns past D are zeros.
template <class T, int kD>
__device__ __forceinline__ void load_tile(T* tile, const T* src, int64_t s0, int row0, int rows, int dim) {
  constexpr int kLd = kD + 8, kVecs = kD / 8;
  for (int i = threadIdx.x; i < kRows * kVecs; i += kThreads) {
    const int r = i / kVecs, c = (i % kVecs) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (row0 + r < rows && c < dim) x = *reinterpret_cast<const uint4*>(src + (row0 + r) * s0 + c);
    *reinterpret_cast<uint4*>(tile + r * kLd + c) = x;
  }
}

template <class T, int kD>
__global__ void __launch_bounds__(kThreads) varlen_attention_kernel(const VarlenParams<T> p) {
  constexpr int kLd = kD + 8, kDBlocks = kD / 8;
  const int b = blockIdx.y, h = blockIdx.z;
  const int q_start = p.cu_q[b], lq = p.cu_q[b + 1] - q_start;
  const int k_start = p.cu_k[b];
  const int lk = p.used_k != nullptr ? min(p.cu_k[b + 1] - k_start, p.used_k[b]) : p.cu_k[b + 1] - k_start;
  const int qt0 = blockIdx.x * kRows;
  if (qt0 >= lq) return;
  const int hk = h / p.group;

  extern __shared__ uint4 smem_raw[];
  T* s_q = reinterpret_cast<T*>(smem_raw);
  T* s_k = s_q + kRows * kLd;
  T* s_v = s_k + kKeys * kLd;

  load_tile<T, kD>(s_q, p.q + q_start * p.q_s0 + h * p.q_s1, p.q_s0, qt0, lq, p.dim);

  // Keys any row of this block sees: all, or (causal) up to its last row's last key.
  const int last_row = min(qt0 + kRows, lq) - 1;
  const int n_keys = p.causal ? min(lk, last_row + lk - lq + 1) : lk;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  const int row0 = qt0 + warp * 16 + g, row1 = row0 + 8;  // query indices in the sequence
  const int shift = lk - lq;                               // bottom-right causal alignment
  float o[kDBlocks][4];
#pragma unroll
  for (int i = 0; i < kDBlocks; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const T* q_row0 = s_q + (warp * 16 + g) * kLd;
  const T* q_row1 = q_row0 + 8 * kLd;

  for (int kt = 0; kt < n_keys; kt += kKeys) {
    __syncthreads();  // the previous tiles are consumed (and the Q tile is written)
    load_tile<T, kD>(s_k, p.k + k_start * p.k_s0 + hk * p.k_s1, p.k_s0, kt, lk, p.dim);
    load_tile<T, kD>(s_v, p.v + k_start * p.v_s0 + hk * p.v_s1, p.v_s0, kt, lk, p.dim);
    __syncthreads();

    float s[8][4];
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll 4
    for (int k0 = 0; k0 < kD; k0 += 16) {
      const uint32_t a[4] = {ld32(q_row0 + k0 + 2 * qd), ld32(q_row1 + k0 + 2 * qd), ld32(q_row0 + k0 + 8 + 2 * qd),
                             ld32(q_row1 + k0 + 8 + 2 * qd)};
#pragma unroll
      for (int nb = 0; nb < 8; ++nb) {
        const T* k_row = s_k + (nb * 8 + g) * kLd + k0 + 2 * qd;
        cuda::mma_16x8x16<T>(s[nb], a, ld32(k_row), ld32(k_row + 8));
      }
    }

    // Scale, mask, and the rows' running maxima (4 lanes share a row).
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kt + nb * 8 + 2 * qd + (e & 1);
        const int row = e < 2 ? row0 : row1;
        const bool visible = key < lk && (!p.causal || key <= row + shift);
        s[nb][e] = visible ? s[nb][e] * p.scale_log2 : -INFINITY;
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
    // A row that has seen no key yet keeps max -inf: subtract 0 instead (its p are 0).
    const float use0 = new0 == -INFINITY ? 0.f : new0, use1 = new1 == -INFINITY ? 0.f : new1;
    const float alpha0 = exp2f(m0 - use0), alpha1 = exp2f(m1 - use1);  // m = -inf: 0 (o and l are 0)
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
      const uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const T* v0 = s_v + (kk * 16 + 2 * qd) * kLd + g;
#pragma unroll
      for (int db = 0; db < kDBlocks; ++db) {
        const T* vc = v0 + db * 8;
        cuda::mma_16x8x16<T>(o[db], a, pack_elems(vc[0], vc[kLd]), pack_elems(vc[8 * kLd], vc[9 * kLd]));
      }
    }
  }

#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;  // no key seen: zeros
  T* out0 = p.out + (q_start + row0) * p.out_s0 + h * p.out_s1;
  T* out1 = p.out + (q_start + row1) * p.out_s0 + h * p.out_s1;
#pragma unroll
  for (int db = 0; db < kDBlocks; ++db) {
    const int col = db * 8 + 2 * qd;
    if (col >= p.dim) break;
    if (row0 < lq) *reinterpret_cast<uint32_t*>(out0 + col) = pack2<T>(o[db][0] * inv0, o[db][1] * inv0);
    if (row1 < lq) *reinterpret_cast<uint32_t*>(out1 + col) = pack2<T>(o[db][2] * inv1, o[db][3] * inv1);
  }
}

template <class T, int kD>
void launch(const VarlenParams<T>& p, int batch, int heads, int max_seqlen_q, cudaStream_t stream) {
  constexpr size_t kSmem = size_t{3} * kRows * (kD + 8) * sizeof(T);
  static const bool attribute_set = [] {
    FK_CUDA_CHECK(cudaFuncSetAttribute(varlen_attention_kernel<T, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSmem)));
    return true;
  }();
  (void)attribute_set;
  const dim3 grid(static_cast<unsigned>(cuda::ceil_div(max_seqlen_q, kRows)), static_cast<unsigned>(batch),
                  static_cast<unsigned>(heads));
  varlen_attention_kernel<T, kD><<<grid, kThreads, kSmem, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status varlen_attention_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const VarlenAttentionArgs*>(args);
    validate_varlen_attention(a, DeviceType::cuda);
    constexpr const char* op = VarlenAttentionArgs::kName;
    const int64_t batch = a.cu_seqlens_q.shape[0] - 1, heads = a.q.shape[1], dim = a.q.shape[2];
    if (batch == 0 || a.q.shape[0] == 0 || a.max_seqlen_q == 0) return;
    if (dim % 8 != 0 || dim > 256)
      FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline takes head dims that are multiples of 8 up to 256, got ", dim);
    for (const TensorView* t : {&a.q, &a.k, &a.v, &a.out})
      if (t->strides[0] % 8 != 0 || t->strides[1] % 8 != 0 || !cuda::aligned16(t->data))
        FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline needs token and head strides that are multiples of 8 ",
                "elements and 16-byte aligned tensors, got ", describe(*t));
    FK_CHECK(batch <= 65535 && heads <= 65535, op, ": at most 65535 sequences and heads, got ", batch, " and ", heads);
    // Head dims 72-128 go to FlashInfer's Hopper ragged kernel where it takes the call (2.9x
    // the mma kernel on FLUX.1's joint attention); the mma kernel keeps the rest.
    static const VariantFlag no_sm90_ragged(op, "no_sm90_ragged");
    if (!no_sm90_ragged.on() && attn::varlen_attention_sm90(a, static_cast<cudaStream_t>(stream))) return;
    cuda::dispatch_float_dtype(a.q.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        FK_FAIL(FK_ERR_UNSUPPORTED, op, ": f32 is not supported");
      } else {
        const VarlenParams<T> p{a.out.ptr<T>(),
                                a.q.ptr<T>(),
                                a.k.ptr<T>(),
                                a.v.ptr<T>(),
                                static_cast<const int32_t*>(a.cu_seqlens_q.data),
                                static_cast<const int32_t*>(a.cu_seqlens_k.data),
                                static_cast<const int32_t*>(a.seqused_k.data),
                                a.out.strides[0],
                                a.out.strides[1],
                                a.q.strides[0],
                                a.q.strides[1],
                                a.k.strides[0],
                                a.k.strides[1],
                                a.v.strides[0],
                                a.v.strides[1],
                                static_cast<int>(dim),
                                static_cast<int>(heads / a.k.shape[1]),
                                a.sm_scale * 1.4426950408889634f,
                                a.causal};
        const auto s = static_cast<cudaStream_t>(stream);
        const int b = static_cast<int>(batch), hq = static_cast<int>(heads);
        if (dim <= 64)
          launch<T, 64>(p, b, hq, a.max_seqlen_q, s);
        else if (dim <= 80)  // Qwen3-VL's vision heads of 72: a tile of 128 would waste 44% of the MMAs
          launch<T, 80>(p, b, hq, a.max_seqlen_q, s);
        else if (dim <= 96)
          launch<T, 96>(p, b, hq, a.max_seqlen_q, s);
        else if (dim <= 128)
          launch<T, 128>(p, b, hq, a.max_seqlen_q, s);
        else
          launch<T, 256>(p, b, hq, a.max_seqlen_q, s);
      }
    });
  });
}

FK_REGISTER_IMPL("varlen_attention", cuda, varlen_attention_cuda);

}  // namespace
}  // namespace fk::ops
