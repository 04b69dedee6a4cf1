// transpose_tokens CUDA baseline: out[b, y, x, :] = input[b, x, y, :], a copy.
//
// Channels are contiguous on both sides, so the transpose is a gather of whole C-element
// rows: block (x tile, y, b) copies blockDim.y rows of out, blockDim.x threads along each
// row, in the widest words (16, 8, 4 or 2 bytes, never below the element) that the row
// length, the input's strides and both pointers allow, so any shape and stride works. The
// grid's indices are the tensor's, so no thread divides, and every grid dimension strides
// past its limit. Rows shorter than 128 words share a block (blockDim.x down to 1), so a
// warp still writes consecutive bytes of out. Words are moved untouched: the copy is exact.
// No shared-memory tile: rows of 16 bytes or more already coalesce on both sides. Launched
// the ordinary way (no PDL), like gated_residual_add and adaln_modulate.
// Oasis-500m's qkv at 32 frames, 32 x 144 x 3072 bf16: 57 MB read and written, 17 us
// (3.3 TB/s) back to back on an H200; 12 us would be 4.8 TB/s.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 128;
constexpr int kUnroll = 4;

// Strides and sizes in words of W.
template <class W>
struct TransposeParams {
  W* out;
  const W* in;
  int64_t in_sb, in_sx, in_sy;  // input [B, X, Y, row]
  int64_t out_sb, out_sy;       // out [B, Y, X, row], packed: its x stride is row
  int64_t row;                  // words per C-element row
  int64_t batch, x, y;
};

template <class W>
__global__ void __launch_bounds__(kThreads) transpose_tokens_kernel(const TransposeParams<W> p) {
  for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z)
    for (int64_t y = blockIdx.y; y < p.y; y += gridDim.y)
      for (int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; x < p.x;
           x += static_cast<int64_t>(gridDim.x) * blockDim.y) {
        const W* __restrict__ src = p.in + b * p.in_sb + x * p.in_sx + y * p.in_sy;
        W* __restrict__ dst = p.out + b * p.out_sb + y * p.out_sy + x * p.row;
        // All of a turn's loads are issued before its stores, so a thread keeps up to
        // kUnroll words in flight (Oasis' 3072-channel bf16 rows: 3 per thread).
        for (int64_t v0 = threadIdx.x; v0 < p.row; v0 += kUnroll * static_cast<int64_t>(blockDim.x)) {
          W w[kUnroll] = {};
#pragma unroll
          for (int k = 0; k < kUnroll; ++k) {
            const int64_t v = v0 + k * static_cast<int64_t>(blockDim.x);
            if (v < p.row) w[k] = __ldg(src + v);
          }
#pragma unroll
          for (int k = 0; k < kUnroll; ++k) {
            const int64_t v = v0 + k * static_cast<int64_t>(blockDim.x);
            if (v < p.row) dst[v] = w[k];
          }
        }
      }
}

template <class W>
void launch(const TransposeTokensArgs& a, cudaStream_t stream) {
  const TensorView& in = a.input;
  const int64_t es = in.element_size(), per_word = static_cast<int64_t>(sizeof(W)) / es;
  TransposeParams<W> p;
  p.out = static_cast<W*>(a.out.data);
  p.in = static_cast<const W*>(in.data);
  // A stride of a size-1 dimension is never used (its index is 0), so it need not divide.
  p.in_sb = in.strides[0] / per_word;
  p.in_sx = in.strides[1] / per_word;
  p.in_sy = in.strides[2] / per_word;
  p.batch = in.shape[0];
  p.x = in.shape[1];
  p.y = in.shape[2];
  p.row = in.shape[3] / per_word;
  // out's own strides are not read: a contiguous view may carry any stride on a size-1 dim.
  p.out_sy = p.x * p.row;
  p.out_sb = p.y * p.out_sy;
  int tx = 1;
  while (tx < kThreads && tx < p.row) tx *= 2;
  const int ty = kThreads / tx;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(p.x, ty), 0x7fffffff)),
                  static_cast<unsigned>(std::min<int64_t>(p.y, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  transpose_tokens_kernel<W><<<grid, dim3(tx, ty), 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

// The widest word that divides the row and every used input stride (in bytes) and aligns
// both pointers; the element size always does (views are element-aligned).
int word_bytes(const TransposeTokensArgs& a) {
  const TensorView& in = a.input;
  const int64_t es = in.element_size();
  for (int64_t w : {16, 8, 4}) {
    if (w <= es) break;
    bool ok = (in.shape[3] * es) % w == 0 && reinterpret_cast<uintptr_t>(in.data) % w == 0 &&
              reinterpret_cast<uintptr_t>(a.out.data) % w == 0;
    for (int d = 0; d < 3 && ok; ++d) ok = in.shape[d] == 1 || (in.strides[d] * es) % w == 0;
    if (ok) return static_cast<int>(w);
  }
  return static_cast<int>(es);
}

fk_status transpose_tokens_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const TransposeTokensArgs*>(args);
    validate_transpose_tokens(a, DeviceType::cuda);
    if (a.out.numel() == 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    switch (word_bytes(a)) {
      case 16: return launch<uint4>(a, s);
      case 8: return launch<uint2>(a, s);
      case 4: return launch<unsigned int>(a, s);
      default: return launch<unsigned short>(a, s);
    }
  });
}

FK_REGISTER_IMPL("transpose_tokens", cuda, transpose_tokens_cuda);

}  // namespace
}  // namespace fk::ops
