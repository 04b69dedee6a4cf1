// The double-precision GEMM of the GPU references: a plain shared-memory tiled kernel, one
// product and one sum in double per term, no tensor cores. Batched over z (e.g. one entry
// per MoE expert, each with its own row count), and optionally over kPairs right-hand
// matrices that share the left one (a gate and an up projection read the same rows):
//
//     acc[p] = sum_k A(z, m, k) * B(z, p, n, k)   for m < rows(z), n < cols, p < kPairs
//     store(z, m, n, acc)
//
// A Problem provides (all __device__ except the two sizes):
//     int64_t cols, depth;                                  // N and K of every entry
//     int64_t rows(int64_t z) const;
//     double a(int64_t z, int64_t m, int64_t k) const;      // m < rows(z), k < depth
//     double b(int64_t z, int p, int64_t n, int64_t k) const;
//     void store(int64_t z, int64_t m, int64_t n, const double (&acc)[kPairs]) const;
#pragma once
#include <algorithm>

#include "ops/common/gpu_reference.cuh"

namespace fk::ops::gpu_ref {

inline constexpr int kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 16, kGemmThreads = 256;

template <int kPairs, class Problem>
__global__ void __launch_bounds__(kGemmThreads) reference_gemm_kernel(Problem p, int64_t batch) {
  // Padded rows: the staging stores walk k across threads.
  __shared__ double as[kGemmTileK][kGemmTileM + 1];
  __shared__ double bs[kPairs][kGemmTileK][kGemmTileN + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // a thread owns rows ty + 16i, cols tx + 16j
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kGemmTileN;
  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    const int64_t M = p.rows(z);
    for (int64_t m0 = static_cast<int64_t>(blockIdx.y) * kGemmTileM; m0 < M;
         m0 += static_cast<int64_t>(gridDim.y) * kGemmTileM) {
      double acc[kPairs][4][4];
#pragma unroll
      for (int q = 0; q < kPairs; ++q)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[q][i][j] = 0.0;
      for (int64_t k0 = 0; k0 < p.depth; k0 += kGemmTileK) {
        for (int e = threadIdx.x; e < kGemmTileM * kGemmTileK; e += kGemmThreads) {
          const int r = e / kGemmTileK, c = e % kGemmTileK;
          const int64_t m = m0 + r, k = k0 + c;
          as[c][r] = m < M && k < p.depth ? p.a(z, m, k) : 0.0;
        }
#pragma unroll
        for (int q = 0; q < kPairs; ++q)
          for (int e = threadIdx.x; e < kGemmTileN * kGemmTileK; e += kGemmThreads) {
            const int r = e / kGemmTileK, c = e % kGemmTileK;
            const int64_t n = n0 + r, k = k0 + c;
            bs[q][c][r] = n < p.cols && k < p.depth ? p.b(z, q, n, k) : 0.0;
          }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < kGemmTileK; ++c) {
          double av[4], bv[kPairs][4];
#pragma unroll
          for (int i = 0; i < 4; ++i) av[i] = as[c][ty + 16 * i];
#pragma unroll
          for (int q = 0; q < kPairs; ++q)
#pragma unroll
            for (int j = 0; j < 4; ++j) bv[q][j] = bs[q][c][tx + 16 * j];
#pragma unroll
          for (int q = 0; q < kPairs; ++q)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
              for (int j = 0; j < 4; ++j) acc[q][i][j] = fma(av[i], bv[q][j], acc[q][i][j]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int64_t m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
          if (m >= M || n >= p.cols) continue;
          double out[kPairs];
#pragma unroll
          for (int q = 0; q < kPairs; ++q) out[q] = acc[q][i][j];
          p.store(z, m, n, out);
        }
    }
  }
}

// Launches the GEMM for `batch` entries whose row counts are at most max_rows.
template <int kPairs, class Problem>
void launch_reference_gemm(const char* op, const Problem& p, int64_t batch, int64_t max_rows, cudaStream_t stream) {
  if (batch <= 0 || max_rows <= 0 || p.cols <= 0) return;
  const int64_t col_tiles = (p.cols + kGemmTileN - 1) / kGemmTileN;
  const int64_t row_tiles = (max_rows + kGemmTileM - 1) / kGemmTileM;
  expect_grid_x(op, col_tiles);
  const dim3 grid(static_cast<unsigned>(col_tiles), grid_dim_yz(row_tiles), grid_dim_yz(batch));
  reference_gemm_kernel<kPairs><<<grid, kGemmThreads, 0, stream>>>(p, batch);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::ops::gpu_ref
