// conv2d's tensor-core implicit GEMM (f16/bf16 inputs, f32 accumulation), included by
// conv2d.cu. Per group, out[M = N*P*Q pixels, Kg] = im2col(input)[M, R*S*Cg] x
// weight[Kg, R*S*Cg]^T, as the SIMT kernel there, on the tensor cores through WMMA 16x16x16
// fragments.
//
// A 256-thread block (8 warps, 2 along the pixels x 4 along the channels) computes a
// 64-pixel x 64-channel tile; each warp a 32 x 16 piece (two accumulator fragments). The
// reduction advances 32 at a time: both operands' slices are gathered into shared memory in
// the input dtype (no conversion; taps outside the image and indices past the end are
// zeros), 32 consecutive threads reading 32 consecutive reduction indices, i.e. consecutive
// channels of one tap of one pixel (coalesced for Cg >= 32). Each thread decodes its eight
// pixels once and its reduction index once per slice. The accumulators go through shared
// memory to an epilogue in which consecutive threads write consecutive channels of a pixel
// (bias, SiLU, residual, one rounding). No pipelining of the loads: a baseline, not the ceiling.
#pragma once
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "fk/cuda/vec.cuh"
#include "ops/conv/conv2d_params.cuh"
#include "ops/conv/nhwc.cuh"

namespace fk::ops::conv_cuda {

constexpr int kMmaBM = 64, kMmaBN = 64, kMmaBK = 32, kMmaThreads = 256;
constexpr int kMmaRows = kMmaThreads / kMmaBK;  // 8 rows of each tile loaded per pass
constexpr int kMmaLd = kMmaBK + 8;              // 16-bit operand rows: 80 bytes (ldm a multiple of 8)
constexpr int kMmaLdC = kMmaBN + 4;             // fp32 staging rows (ldm a multiple of 4)

struct MmaConvShape {
  int R, S, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int Cg, Kg, P, Q;
  int64_t M;  // N * P * Q
  bool silu, relu;
};

template <class T>
__global__ void __launch_bounds__(kMmaThreads)
    conv2d_mma_kernel(const Nhwc<const T> in, const Nhwc<T> out, const T* __restrict__ weight,
                      const T* __restrict__ bias, const Nhwc<const T> res, const MmaConvShape p) {
  using namespace nvcuda;
  __shared__ __align__(128) T As[kMmaBM][kMmaLd];  // [pixel][k]
  __shared__ __align__(128) T Bs[kMmaBN][kMmaLd];  // [channel][k]: B (k x n) column-major
  __shared__ __align__(128) float Cs[kMmaBM][kMmaLdC];

  const int tid = threadIdx.x, warp = tid / 32;
  const int g = blockIdx.z;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kMmaBM;
  const int n0 = blockIdx.y * kMmaBN;
  const int kred = p.R * p.S * p.Cg;
  const int c_base = g * p.Cg, k_base = g * p.Kg;
  const T zero = cuda::from_float<T>(0.f);

  const int kk = tid % kMmaBK, row = tid / kMmaBK;  // this thread loads index kk of rows row + 8 i
  int64_t img[kMmaBM / kMmaRows];
  int h0[kMmaBM / kMmaRows], w0[kMmaBM / kMmaRows];
  bool valid[kMmaBM / kMmaRows];
#pragma unroll
  for (int i = 0; i < kMmaBM / kMmaRows; ++i) {
    const int64_t m = m0 + row + kMmaRows * i;
    valid[i] = m < p.M;
    const int64_t mm = valid[i] ? m : 0;
    h0[i] = static_cast<int>((mm / p.Q) % p.P) * p.stride_h - p.pad_h;
    w0[i] = static_cast<int>(mm % p.Q) * p.stride_w - p.pad_w;
    img[i] = mm / (static_cast<int64_t>(p.Q) * p.P);
  }

  const int wm = warp / 4, wn = warp % 4;  // warp tile: pixels wm*32.., channels wn*16..
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
  wmma::fill_fragment(acc[0], 0.f);
  wmma::fill_fragment(acc[1], 0.f);

  for (int k0 = 0; k0 < kred; k0 += kMmaBK) {
    const int k = k0 + kk;
    const bool k_ok = k < kred;
    const int c = k_ok ? k % p.Cg : 0;
    const int rs = k_ok ? k / p.Cg : 0;
    const int r = rs / p.S, s = rs % p.S;
#pragma unroll
    for (int i = 0; i < kMmaBM / kMmaRows; ++i) {
      const int h = h0[i] + r * p.dil_h, x = w0[i] + s * p.dil_w;
      const bool inside = k_ok && valid[i] && h >= 0 && h < in.h && x >= 0 && x < in.w;
      As[row + kMmaRows * i][kk] = inside ? in.pixel(img[i], h, x)[c_base + c] : zero;
      const int n = n0 + row + kMmaRows * i;
      Bs[row + kMmaRows * i][kk] = k_ok && n < p.Kg ? weight[static_cast<int64_t>(k_base + n) * kred + k] : zero;
    }
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < kMmaBK; ks += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
      wmma::load_matrix_sync(b, &Bs[wn * 16][ks], kMmaLd);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::load_matrix_sync(a, &As[wm * 32 + i * 16][ks], kMmaLd);
        wmma::mma_sync(acc[i], a, b, acc[i]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
    wmma::store_matrix_sync(&Cs[wm * 32 + i * 16][wn * 16], acc[i], kMmaLdC, wmma::mem_row_major);
  __syncthreads();

  // Epilogue: thread (col, r0) writes channel n0 + col of pixels r0, r0 + 4, ...
  const int col = tid % kMmaBN, r0 = tid / kMmaBN;
  const int kc = n0 + col;
  if (kc >= p.Kg) return;
  const float b = bias != nullptr ? cuda::to_float(bias[k_base + kc]) : 0.f;
  for (int rr = r0; rr < kMmaBM; rr += kMmaThreads / kMmaBN) {
    const int64_t m = m0 + rr;
    if (m >= p.M) break;
    const int q = static_cast<int>(m % p.Q);
    const int pp = static_cast<int>((m / p.Q) % p.P);
    const int64_t n = m / (static_cast<int64_t>(p.Q) * p.P);
    float y = conv_epilogue(Cs[rr][col], b, p.silu, p.relu);
    if (res.p != nullptr) y += cuda::to_float(res.pixel(n, pp, q)[k_base + kc]);  // res.p null: no residual
    out.pixel(n, pp, q)[k_base + kc] = cuda::from_float<T>(y);
  }
}

}  // namespace fk::ops::conv_cuda
