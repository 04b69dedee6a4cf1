// conv2d's pipelined tensor-core implicit GEMM (f16/bf16, f32 accumulation), included by
// conv2d.cu, for groups whose input channels come in whole 16-byte vectors (Cg % 8 == 0, NHWC
// strides in whole vectors, aligned base): every dense and grouped layer but a stem on 3 colour
// channels. Per group, out[M = N*P*Q pixels, Kg] = im2col(input)[M, R*S*Cg] x weight[Kg,
// R*S*Cg]^T, as conv2d_mma.cuh, whose element-wise gather it replaces there.
//
// A 256-thread block computes a 128-pixel x 64-channel tile; 8 warps (4 along the pixels x 2
// along the channels) each a 32 x 32 piece of 2 x 2 WMMA 16x16x16 fragments. The reduction
// advances 32 at a time through a 3-stage cp.async ring: one 16-byte copy moves 8 consecutive
// reduction indices, which (Cg % 8 == 0) are 8 consecutive channels of one tap of one pixel;
// taps outside the image and indices past the end are zero-filled by the copy itself (source
// size 0), so the ring never holds stale data. Each thread decodes its two pixels once and its
// reduction index once per slice. The accumulators are staged in shared memory, over the ring
// that is no longer needed, for an epilogue in which a thread writes 8 channels of a pixel as
// one 16-byte store (bias, activation, residual, one rounding) when the output allows it, else
// one channel per thread.
#pragma once
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "fk/cuda/async_copy.cuh"
#include "fk/cuda/vec.cuh"
#include "ops/conv/conv2d_params.cuh"

namespace fk::ops::conv_cuda {

constexpr int kPipeBM = 128, kPipeBN = 64, kPipeBK = 32, kPipeThreads = 256, kPipeStages = 3;
constexpr int kPipeVec = 8;            // 16-bit elements per 16-byte copy
constexpr int kPipeLd = kPipeBK + 8;   // 80-byte rows: 16-byte aligned copies, WMMA ldm a multiple of 8
constexpr int kPipeLdC = kPipeBN + 4;  // fp32 staging rows (ldm a multiple of 4)
constexpr int kPipeStageElems = (kPipeBM + kPipeBN) * kPipeLd;
constexpr int kPipeRingBytes = kPipeStages * kPipeStageElems * 2;
constexpr int kPipeStagingBytes = kPipeBM * kPipeLdC * 4;
constexpr int kPipeSmemBytes = kPipeRingBytes > kPipeStagingBytes ? kPipeRingBytes : kPipeStagingBytes;
static_assert(kPipeSmemBytes <= 48 * 1024, "static shared memory");
static_assert(kPipeBK / kPipeVec * kPipeBN == kPipeThreads, "one weight copy per thread per slice");
static_assert(kPipeBK / kPipeVec * kPipeBM == 2 * kPipeThreads, "two input copies per thread per slice");

inline bool pipelined_conv_fits(int Cg) { return Cg % kPipeVec == 0; }

template <class T>
__global__ void __launch_bounds__(kPipeThreads) conv2d_mma_pipelined_kernel(const ConvParams<T> p, const bool vec_out) {
  using namespace nvcuda;
  static_assert(sizeof(T) == 2, "16-bit operands");
  __shared__ __align__(128) unsigned char smem[kPipeSmemBytes];
  T* const ring = reinterpret_cast<T*>(smem);

  const int tid = threadIdx.x, warp = tid / 32;
  const int g = blockIdx.z;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kPipeBM;
  const int n0 = blockIdx.y * kPipeBN;
  const int kred = p.R * p.S * p.Cg;
  const int c_base = g * p.Cg, k_base = g * p.Kg;

  // This thread copies reduction indices kv.. kv+7 of input rows lrow and lrow + 64 and of
  // weight row lrow, in every slice.
  const int kv = (tid % (kPipeBK / kPipeVec)) * kPipeVec;
  const int lrow = tid / (kPipeBK / kPipeVec);
  int64_t img[2];
  int h0[2], w0[2];
  bool valid[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t m = m0 + lrow + (kPipeBM / 2) * i;
    valid[i] = m < p.M;
    const PixelIndex px = pixel_index(valid[i] ? m : 0, p.P, p.Q);
    img[i] = px.n;
    h0[i] = px.p * p.stride_h - p.pad_h;
    w0[i] = px.q * p.stride_w - p.pad_w;
  }
  const bool n_ok = n0 + lrow < p.Kg;
  const T* const wrow = p.weight + static_cast<int64_t>(k_base + (n_ok ? n0 + lrow : 0)) * kred;

  const auto load_slice = [&](int stage, int k0) {
    T* const As = ring + stage * kPipeStageElems;
    T* const Bs = As + kPipeBM * kPipeLd;
    const int k = k0 + kv;
    const bool k_ok = k < kred;  // kred is a multiple of 8: a copy is wholly in or out
    const int rs = k_ok ? k / p.Cg : 0;
    const int c = k_ok ? k - rs * p.Cg : 0;
    const int r = rs / p.S, s = rs - (rs / p.S) * p.S;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int h = h0[i] + r * p.dil_h, x = w0[i] + s * p.dil_w;
      const bool inside = k_ok && valid[i] && h >= 0 && h < p.in.h && x >= 0 && x < p.in.w;
      const T* src = inside ? p.in.pixel(img[i], h, x) + c_base + c : p.in.p;
      cuda::cp_async16(As + (lrow + (kPipeBM / 2) * i) * kPipeLd + kv, src, inside ? 16 : 0);
    }
    const bool w_ok = k_ok && n_ok;
    cuda::cp_async16(Bs + lrow * kPipeLd + kv, w_ok ? wrow + k : p.weight, w_ok ? 16 : 0);
  };

  const int wm = warp / 2, wn = warp % 2;  // warp tile: pixels wm*32.., channels wn*32..
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  const int slices = (kred + kPipeBK - 1) / kPipeBK;
#pragma unroll
  for (int st = 0; st < kPipeStages - 1; ++st) {
    if (st < slices) load_slice(st, st * kPipeBK);
    cuda::cp_async_commit();  // an empty group keeps the count of groups per slice fixed
  }
  for (int t = 0; t < slices; ++t) {
    cuda::cp_async_wait<kPipeStages - 2>();  // slice t has landed (this thread's copies)
    __syncthreads();                         // ... everyone's; and slice t - 1's stage is free
    const int next = t + kPipeStages - 1;
    if (next < slices) load_slice(next % kPipeStages, next * kPipeBK);
    cuda::cp_async_commit();
    const T* const As = ring + (t % kPipeStages) * kPipeStageElems;
    const T* const Bs = As + kPipeBM * kPipeLd;
#pragma unroll
    for (int ks = 0; ks < kPipeBK; ks += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[2];  // Bs rows are channels
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], As + (wm * 32 + i * 16) * kPipeLd + ks, kPipeLd);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], Bs + (wn * 32 + j * 16) * kPipeLd + ks, kPipeLd);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
  cuda::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the staging buffer

  float* const Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * kPipeLdC + wn * 32 + j * 16, acc[i][j], kPipeLdC,
                              wmma::mem_row_major);
  __syncthreads();

  if (vec_out) {  // Kg % 8 == 0: a vector of 8 channels is wholly in or out
    constexpr int kVecsPerRow = kPipeBN / kPipeVec;
    for (int v = tid; v < kPipeBM * kVecsPerRow; v += kPipeThreads) {
      const int rr = v / kVecsPerRow, cc = (v % kVecsPerRow) * kPipeVec;
      const int64_t m = m0 + rr;
      const int kc = n0 + cc;
      if (m >= p.M || kc >= p.Kg) continue;
      const PixelIndex px = pixel_index(m, p.P, p.Q);
      cuda::Vec16<T> res;  // a coherent load: the residual may be the output's own buffer
      if (p.res.p != nullptr)
        res = *reinterpret_cast<const cuda::Vec16<T>*>(p.res.pixel(px.n, px.p, px.q) + k_base + kc);
      cuda::Vec16<T> o;
#pragma unroll
      for (int e = 0; e < kPipeVec; ++e) {
        const float b = p.bias != nullptr ? cuda::to_float(p.bias[k_base + kc + e]) : 0.f;
        float y = conv_epilogue(Cs[rr * kPipeLdC + cc + e], b, p.silu, p.relu);
        if (p.res.p != nullptr) y += cuda::to_float(res.v[e]);
        o.v[e] = cuda::from_float<T>(y);
      }
      cuda::store16(p.out.pixel(px.n, px.p, px.q) + k_base + kc, o);
    }
    return;
  }
  // One channel per thread: thread (col, r0) writes channel n0 + col of pixels r0, r0 + 4, ...
  const int col = tid % kPipeBN, r0 = tid / kPipeBN;
  const int kc = n0 + col;
  if (kc >= p.Kg) return;
  const float b = p.bias != nullptr ? cuda::to_float(p.bias[k_base + kc]) : 0.f;
  for (int rr = r0; rr < kPipeBM; rr += kPipeThreads / kPipeBN) {
    const int64_t m = m0 + rr;
    if (m >= p.M) break;
    const PixelIndex px = pixel_index(m, p.P, p.Q);
    float y = conv_epilogue(Cs[rr * kPipeLdC + col], b, p.silu, p.relu);
    if (p.res.p != nullptr) y += cuda::to_float(p.res.pixel(px.n, px.p, px.q)[k_base + kc]);
    p.out.pixel(px.n, px.p, px.q)[k_base + kc] = cuda::from_float<T>(y);
  }
}

}  // namespace fk::ops::conv_cuda
