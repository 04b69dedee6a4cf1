// triangle_multiplication's CUDA steps around the registry ops and the cuBLAS GEMMs:
//
// - gate: a = sigmoid(ag) * ap * mask and b likewise from the token-major projection, into
//   the channel-major left / right workspaces. A block takes 32 channels of 32 consecutive
//   pairs of one GEMM row through shared memory, so the projection is read along channels
//   and the workspaces are written along the GEMM's k, both coalesced. Incoming edges swap
//   which pair index is the GEMM row (r = j, k = i), which the tile's read absorbs.
// - to_token_major: t channel-major [B, C, N N] to token-major [B, N N, C], a 32 x 32 tiled
//   transposition per structure.
// - output_gate: pair += sigmoid(g) * update, one element per thread.
// Math in fp32, rounded once to the dtype where a workspace stores it.
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "ops/pairformer/triangle_multiplication_kernels.h"

namespace fk::ops {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // threads per block: kTile x kRowsPerPass

__device__ __forceinline__ float sigmoidf(float x) { return 1.f / (1.f + __expf(-x)); }

template <class T>
struct GateParams {
  const T* projected;  // [B, N, N, 4 C + Cz]
  const T* mask;       // [B, N, N] or null
  T* left;             // [B, C, N, N]
  T* right;
  int n, hidden, width;  // N, C, 4 C + Cz
  int incoming;
  int k_tiles;
};

template <class T>
__global__ void __launch_bounds__(kTile* kRowsPerPass) gate_kernel(const GateParams<T> p) {
  __shared__ float a_tile[kTile][kTile + 1], b_tile[kTile][kTile + 1];
  const int k0 = (blockIdx.x % p.k_tiles) * kTile, c0 = (blockIdx.x / p.k_tiles) * kTile;
  const int r = blockIdx.y, b = blockIdx.z;
  const int64_t nn = static_cast<int64_t>(p.n) * p.n;
  // Read: pairs k0 .. k0 + 31 of GEMM row r, channel c0 + threadIdx.x.
  for (int kk = threadIdx.y; kk < kTile; kk += kRowsPerPass) {
    const int k = k0 + kk, c = c0 + threadIdx.x;
    if (k >= p.n || c >= p.hidden) continue;
    const int64_t pair = b * nn + (p.incoming ? static_cast<int64_t>(k) * p.n + r : static_cast<int64_t>(r) * p.n + k);
    const T* row = p.projected + pair * p.width;
    const float m = p.mask ? cuda::to_float(p.mask[pair]) : 1.f;
    a_tile[kk][threadIdx.x] = sigmoidf(cuda::to_float(row[c])) * cuda::to_float(row[p.hidden + c]) * m;
    b_tile[kk][threadIdx.x] = sigmoidf(cuda::to_float(row[2 * p.hidden + c])) * cuda::to_float(row[3 * p.hidden + c]) * m;
  }
  __syncthreads();
  // Write: channel c0 + cc, pairs along k.
  for (int cc = threadIdx.y; cc < kTile; cc += kRowsPerPass) {
    const int k = k0 + threadIdx.x, c = c0 + cc;
    if (k >= p.n || c >= p.hidden) continue;
    const int64_t dst = (static_cast<int64_t>(b) * p.hidden + c) * nn + static_cast<int64_t>(r) * p.n + k;
    p.left[dst] = cuda::from_float<T>(a_tile[threadIdx.x][cc]);
    p.right[dst] = cuda::from_float<T>(b_tile[threadIdx.x][cc]);
  }
}

// dst[b, q, c] = src[b, c, q] for q < nn pairs, c < C channels.
template <class T>
__global__ void __launch_bounds__(kTile* kRowsPerPass)
    to_token_major_kernel(T* dst, const T* src, int64_t nn, int channels) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int c0 = blockIdx.y * kTile;
  const int64_t base = static_cast<int64_t>(blockIdx.z) * nn * channels;
  for (int cc = threadIdx.y; cc < kTile; cc += kRowsPerPass) {
    const int64_t q = q0 + threadIdx.x;
    const int c = c0 + cc;
    if (q < nn && c < channels) tile[cc][threadIdx.x] = src[base + static_cast<int64_t>(c) * nn + q];
  }
  __syncthreads();
  for (int qq = threadIdx.y; qq < kTile; qq += kRowsPerPass) {
    const int64_t q = q0 + qq;
    const int c = c0 + threadIdx.x;
    if (q < nn && c < channels) dst[base + q * channels + c] = tile[threadIdx.x][qq];
  }
}

template <class T>
__global__ void output_gate_kernel(T* pair, const T* projected, const T* update, int64_t count, int channels,
                                   int width, int gate_offset) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = e / channels;
    const int ch = static_cast<int>(e - row * channels);
    const float g = sigmoidf(cuda::to_float(projected[row * width + gate_offset + ch]));
    pair[e] = cuda::from_float<T>(fmaf(g, cuda::to_float(update[e]), cuda::to_float(pair[e])));
  }
}

}  // namespace

void triangle_gate_cuda(const TriangleMultiplicationArgs& a, const TriangleDims& d, void* stream) {
  cuda::dispatch_float_dtype(a.pair.dtype, TriangleMultiplicationArgs::kName, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int k_tiles = static_cast<int>(cuda::ceil_div(d.n, kTile));
    const int c_tiles = static_cast<int>(cuda::ceil_div(d.hidden, kTile));
    const GateParams<T> p{a.projected.ptr<T>(),
                          a.mask.data != nullptr && a.mask.numel() > 0 ? a.mask.ptr<T>() : nullptr,
                          a.left.ptr<T>(),
                          a.right.ptr<T>(),
                          static_cast<int>(d.n),
                          static_cast<int>(d.hidden),
                          static_cast<int>(4 * d.hidden + d.pair_channels),
                          a.incoming,
                          k_tiles};
    const dim3 grid(static_cast<unsigned>(k_tiles * c_tiles), static_cast<unsigned>(d.n),
                    static_cast<unsigned>(d.batch));
    gate_kernel<T><<<grid, dim3(kTile, kRowsPerPass), 0, static_cast<cudaStream_t>(stream)>>>(p);
    FK_CUDA_CHECK_LAUNCH();
  });
}

void triangle_to_token_major_cuda(const TensorView& dst, const TensorView& src, const TriangleDims& d, void* stream) {
  cuda::dispatch_float_dtype(src.dtype, TriangleMultiplicationArgs::kName, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t nn = d.n * d.n;
    const dim3 grid(static_cast<unsigned>(cuda::ceil_div(nn, kTile)), static_cast<unsigned>(cuda::ceil_div(d.hidden, kTile)),
                    static_cast<unsigned>(d.batch));
    to_token_major_kernel<T><<<grid, dim3(kTile, kRowsPerPass), 0, static_cast<cudaStream_t>(stream)>>>(
        dst.ptr<T>(), src.ptr<T>(), nn, static_cast<int>(d.hidden));
    FK_CUDA_CHECK_LAUNCH();
  });
}

void triangle_output_gate_cuda(const TriangleMultiplicationArgs& a, const TriangleDims& d, void* stream) {
  cuda::dispatch_float_dtype(a.pair.dtype, TriangleMultiplicationArgs::kName, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t count = d.batch * d.n * d.n * d.pair_channels;
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>(cuda::ceil_div(count, kThreads), int64_t{1} << 20);
    output_gate_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        a.pair.ptr<T>(), a.projected.ptr<T>(), a.update.ptr<T>(), count, static_cast<int>(d.pair_channels),
        static_cast<int>(4 * d.hidden + d.pair_channels), static_cast<int>(4 * d.hidden));
    FK_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace fk::ops
