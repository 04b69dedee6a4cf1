// dlrm_interaction CUDA baseline: per sample, the dense row copied and the strict lower
// triangle of the Gram matrix of its R = F + 1 vectors, fp32 FMA (no tensor cores).
//
// A warp takes a sample (a block of 4 warps, 4 samples; blocks stride over the batch). The
// Gram matrix is cut into 4 x 4 tiles of (vector i, vector j) pairs; the lower triangle's
// tiles, diagonal ones included, are numbered row-major and lane q computes tile q (MLPerf's
// R = 27: 7 x 7 tiles, 28 on or below the diagonal, one pass of 32 lanes; larger R takes
// several passes, each reading the sample again). D is staged through shared memory in
// chunks of 32 (16 when R is large, to keep the block within 48 KB) columns, as floats,
// transposed: xt[k][r] holds column k of vector r, so a lane reads the four vectors of its
// tile's row and of its column with one 16-byte load each and does 16 FMAs per column. The
// vectors are padded to a multiple of 4 with zeros; the row stride of xt is the padded count
// when that is 4 mod 8, else 4 more, so the 32 lanes' transposed stores fall on 8 distinct
// banks rather than one. Each lane writes the pairs of its tile below the diagonal straight
// to out (the tiles of one tile row are adjacent there). Dots accumulate over k in order, in
// fp32, rounded once; the dense row is copied as stored.
// MLPerf's batch of 16384 (27 x 128 bf16 in, 479 out per sample) reads 113 MB and writes
// 16 MB, and does 0.74 GFMA.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/recsys/dlrm_interaction_validate.h"

namespace fk::ops {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxVectors = 96;  // R = F + 1 the baseline takes

template <class T>
struct InteractionParams {
  T* out;
  int64_t out_stride;
  const T* dense;
  int64_t dense_stride;
  const T* sparse;
  int64_t sparse_sb, sparse_sf;  // batch and feature strides
  int64_t batch;
  int vectors;    // R = F + 1
  int padded;     // R rounded up to a multiple of 4
  int xt_stride;  // floats between the columns of xt
  int chunk;      // columns of D staged at once: 32 or 16
  int log_chunk;
  int dim;
};

template <class T>
__global__ void __launch_bounds__(kThreads) dlrm_interaction_kernel(const InteractionParams<T> p) {
  extern __shared__ float4 smem4[];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  float* xt = reinterpret_cast<float*>(smem4) + warp * p.chunk * p.xt_stride;
  const int tiles = p.padded / 4;
  const int tile_pairs = tiles * (tiles + 1) / 2;
  const int staged = p.chunk * p.padded;  // elements of one staged chunk
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * kWarps + warp; s < p.batch;
       s += static_cast<int64_t>(gridDim.x) * kWarps) {
    const T* dense_row = p.dense + s * p.dense_stride;
    const T* sparse_row = p.sparse + s * p.sparse_sb;
    T* out_row = p.out + s * p.out_stride;
    for (int k = lane; k < p.dim; k += 32) out_row[k] = dense_row[k];
    if (p.vectors < 2) continue;  // no pairs
    T* tri = out_row + p.dim;
    for (int q0 = 0; q0 < tile_pairs; q0 += 32) {
      // This lane's tile (ti, tj), ti >= tj: the q-th of the lower triangle, row-major.
      const int q = q0 + lane;
      int ti = 0;
      while ((ti + 1) * (ti + 2) / 2 <= q) ++ti;
      const int tj = q - ti * (ti + 1) / 2;
      const bool active = q < tile_pairs;
      float acc[4][4] = {};
      for (int k0 = 0; k0 < p.dim; k0 += p.chunk) {
        __syncwarp();  // the previous chunk's reads are done
        for (int e = lane; e < staged; e += 32) {
          const int kk = e & (p.chunk - 1), r = e >> p.log_chunk, k = k0 + kk;
          float x = 0.f;
          if (k < p.dim && r < p.vectors) {
            const T* src = r == 0 ? dense_row : sparse_row + static_cast<int64_t>(r - 1) * p.sparse_sf;
            x = cuda::to_float(src[k]);
          }
          xt[kk * p.xt_stride + r] = x;
        }
        __syncwarp();
        if (active) {
          const int columns = min(p.chunk, p.dim - k0);
          for (int kk = 0; kk < columns; ++kk) {
            const float4 a = *reinterpret_cast<const float4*>(xt + kk * p.xt_stride + 4 * ti);
            const float4 b = *reinterpret_cast<const float4*>(xt + kk * p.xt_stride + 4 * tj);
            const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
              for (int v = 0; v < 4; ++v) acc[u][v] = fmaf(av[u], bv[v], acc[u][v]);
          }
        }
      }
      if (active) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int i = 4 * ti + u;
          if (i >= p.vectors) continue;
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            const int j = 4 * tj + v;
            if (j < i) tri[i * (i - 1) / 2 + j] = cuda::from_float<T>(acc[u][v]);
          }
        }
      }
    }
  }
}

template <class T>
void launch(const DlrmInteractionArgs& a, cudaStream_t stream) {
  InteractionParams<T> p;
  p.out = static_cast<T*>(a.out.data);
  p.out_stride = a.out.strides[0];
  p.dense = static_cast<const T*>(a.dense.data);
  p.dense_stride = a.dense.strides[0];
  p.sparse = static_cast<const T*>(a.sparse.data);
  p.sparse_sb = a.sparse.strides[0];
  p.sparse_sf = a.sparse.strides[1];
  p.batch = a.dense.shape[0];
  p.dim = static_cast<int>(a.dense.shape[1]);
  p.vectors = static_cast<int>(a.sparse.shape[1]) + 1;
  p.padded = cuda::round_up(p.vectors, 4);
  p.xt_stride = p.padded % 8 == 4 ? p.padded : p.padded + 4;
  p.chunk = p.padded <= 64 ? 32 : 16;
  p.log_chunk = p.chunk == 32 ? 5 : 4;
  const size_t smem = static_cast<size_t>(kWarps) * p.chunk * p.xt_stride * sizeof(float);
  const int64_t blocks = std::min<int64_t>(cuda::ceil_div(p.batch, kWarps), int64_t{1} << 30);
  dlrm_interaction_kernel<T><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status dlrm_interaction_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DlrmInteractionArgs*>(args);
    validate_dlrm_interaction(a, DeviceType::cuda);
    const int64_t vectors = a.sparse.shape[1] + 1;
    if (vectors > kMaxVectors)
      FK_FAIL(FK_ERR_UNSUPPORTED, DlrmInteractionArgs::kName, ": the CUDA baseline takes at most ", kMaxVectors - 1,
              " sparse features, got ", describe(a.sparse));
    if (a.dense.shape[0] == 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.dense.dtype, DlrmInteractionArgs::kName,
                               [&](auto tag) { launch<typename decltype(tag)::type>(a, s); });
  });
}

FK_REGISTER_IMPL("dlrm_interaction", cuda, dlrm_interaction_cuda);

}  // namespace
}  // namespace fk::ops
