// Row-chunked element-wise kernels shared by the activation ops (and the geometry helper
// the embedding gather reuses).
//
// Each block handles `threads x kVecs` vectors of one row (blockIdx.x = row, blockIdx.y =
// chunk of the row, grid-striding over chunks if a row has more than 65535): rows may have
// any stride, and a gated op finds its `up` half at a fixed column offset, so no division
// is needed to locate an element. Every thread issues all its loads (kVecs, or 2 x kVecs
// for gated ops) before the first use; math is fp32; 16-byte loads and stores when the
// row length, row strides and pointers allow, else one element at a time (any shape).
#pragma once
#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/sm_count.h"
#include "fk/cuda/vec.cuh"
#include "fk/tensor_view.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"

namespace fk::ops::act_cuda {

template <class T>
struct RowwiseParams {
  T* out;             // [rows, cols]
  int64_t out_stride;
  const T* in;        // [rows, cols], or [rows, 2 cols] for gated ops (gate | up)
  int64_t in_stride;
  int64_t rows;
  int cols;           // output columns
};

inline constexpr int kMaxThreads = 256;

// How `rows` rows of `vecs` vectors are split into blocks.
struct RowChunks {
  int vecs_per_thread;  // kVecs: 2, or 1 when there are too few rows to fill the GPU
  int threads;          // multiple of 32, <= kMaxThreads
  int64_t chunks;       // blocks per row
};

// Up to 256 threads x 2 vectors per block, the row split evenly (silu_and_mul 14336 bf16:
// 1792 vectors = 4 chunks of 224 threads x 2). With few rows (decode) the rows are cut
// into smaller chunks of 1 vector per thread, so that about 4 blocks per SM exist.
inline RowChunks row_chunks(int64_t rows, int64_t vecs) {
  const int64_t target_blocks = 4 * static_cast<int64_t>(cuda::current_sm_count());
  RowChunks g{2, kMaxThreads, cuda::ceil_div(vecs, kMaxThreads * 2)};
  if (rows * g.chunks < target_blocks) {
    g.vecs_per_thread = 1;
    g.chunks = std::min(cuda::ceil_div(vecs, 64), std::max(g.chunks, cuda::ceil_div(target_blocks, rows)));
  }
  // Never more threads than the kernel's launch bounds: with one vector per thread a chunk
  // covers at most kMaxThreads vectors (rows 76..131 of a 14336-wide row needed this).
  g.chunks = std::max(g.chunks, cuda::ceil_div(vecs, static_cast<int64_t>(kMaxThreads) * g.vecs_per_thread));
  g.threads = cuda::round_up(static_cast<int>(cuda::ceil_div(vecs, g.chunks * g.vecs_per_thread)), 32);
  return g;
}

inline dim3 row_chunk_grid(int64_t rows, const RowChunks& g) {
  return dim3(static_cast<unsigned>(rows), static_cast<unsigned>(std::min<int64_t>(g.chunks, 65535)));
}

// out = op(in) or, gated, out = op(gate, up). kInPlace: out aliases in (coherent loads).
template <class T, int kN, int kVecs, class Op, bool kInPlace>
__global__ void __launch_bounds__(kMaxThreads) rowwise_activation(RowwiseParams<T> p, Op op) {
  cuda::pdl_wait();  // launched with PDL (launch_with_width): the input comes from the kernel before
  cuda::pdl_trigger();
  using V = cuda::PackedVec<T, kN>;
  const int64_t row = blockIdx.x;
  const int num_vec = p.cols / kN;
  const T* x_row = p.in + row * p.in_stride;
  T* y_row = p.out + row * p.out_stride;
  const int64_t chunk = static_cast<int64_t>(blockDim.x) * kVecs;
  for (int64_t base = blockIdx.y * chunk + threadIdx.x; base < num_vec; base += gridDim.y * chunk) {
    V a[kVecs];
    [[maybe_unused]] V b[kVecs];
#pragma unroll
    for (int c = 0; c < kVecs; ++c) {
      const int64_t i = base + c * blockDim.x;
      if (i < num_vec) {
        a[c] = kInPlace ? cuda::load_packed<kN>(x_row + i * kN) : cuda::load_packed_ro<kN>(x_row + i * kN);
        if constexpr (Op::kGated) b[c] = cuda::load_packed_ro<kN>(x_row + p.cols + i * kN);
      }
    }
#pragma unroll
    for (int c = 0; c < kVecs; ++c) {
      const int64_t i = base + c * blockDim.x;
      if (i < num_vec) {
        float y[kN];
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          if constexpr (Op::kGated) y[k] = op(cuda::unpack(a[c], k), cuda::unpack(b[c], k));
          else y[k] = op(cuda::unpack(a[c], k));
        }
        cuda::store_packed<kN>(y_row + i * kN, cuda::pack<T, kN>(y));
      }
    }
  }
}

template <class T, int kN, class Op, bool kInPlace>
void launch_with_width(const RowwiseParams<T>& p, const Op& op, cudaStream_t stream) {
  const RowChunks g = row_chunks(p.rows, p.cols / kN);
  const dim3 grid = row_chunk_grid(p.rows, g);
  if (g.vecs_per_thread == 2)
    cuda::launch_pdl(rowwise_activation<T, kN, 2, Op, kInPlace>, grid, dim3(g.threads), 0, stream, p, op);
  else
    cuda::launch_pdl(rowwise_activation<T, kN, 1, Op, kInPlace>, grid, dim3(g.threads), 0, stream, p, op);
}

// Picks 16-byte vectors when the row length (and the gated op's up offset), the strides and
// the pointers allow, else the element-at-a-time path.
template <class T, class Op, bool kInPlace = false>
void launch_rowwise(const RowwiseParams<T>& p, const Op& op, cudaStream_t stream) {
  if (p.rows == 0 || p.cols == 0) return;
  constexpr int N = cuda::Packed16Of<T>::N;
  const bool vec_ok = p.cols % N == 0 && p.in_stride % N == 0 && p.out_stride % N == 0 &&
                      cuda::all_aligned16(p.out, p.in);
  if (vec_ok) launch_with_width<T, N, Op, kInPlace>(p, op, stream);
  else launch_with_width<T, 1, Op, kInPlace>(p, op, stream);
}

// Builds the parameters from validated [T, *] views and launches make_op(TypeTag<T>)'s op.
template <bool kInPlace = false, class MakeOp>
void run_rowwise(const char* op_name, const TensorView& out, const TensorView& in, void* stream, MakeOp make_op) {
  const cuda::PdlOffScope pdl(pdl_off_for(op_name));
  cuda::dispatch_float_dtype(in.dtype, op_name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    RowwiseParams<T> p{out.ptr<T>(), out.strides[0], in.ptr<T>(), in.strides[0], out.shape[0],
                       static_cast<int>(out.shape[1])};
    launch_rowwise<T, decltype(make_op(tag)), kInPlace>(p, make_op(tag), static_cast<cudaStream_t>(stream));
  });
}

// ---- the activation functions (fp32) ------------------------------------------------------
// kFast (16-bit outputs): __expf / __fdividef, whose few-ulp fp32 errors are far below half
// an ulp of bf16/f16; f32 outputs use the accurate library functions.

template <bool kFast>
struct SiluAndMulOp {
  static constexpr bool kGated = true;
  __device__ __forceinline__ float operator()(float g, float u) const {
    if constexpr (kFast) return __fdividef(g, 1.f + __expf(-g)) * u;  // g < -88: exp overflows, result -0
    else return g / (1.f + expf(-g)) * u;
  }
};

template <bool kTanh>
__device__ __forceinline__ float gelu(float x) {
  if constexpr (kTanh) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * x * (1.f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  } else {
    constexpr float kInvSqrt2 = 0.7071067811865476f;
    return 0.5f * x * (1.f + erff(x * kInvSqrt2));
  }
}

template <bool kTanh>
struct GeluAndMulOp {
  static constexpr bool kGated = true;
  __device__ __forceinline__ float operator()(float g, float u) const { return gelu<kTanh>(g) * u; }
};

template <bool kTanh>
struct GeluOp {
  static constexpr bool kGated = false;
  __device__ __forceinline__ float operator()(float x) const { return gelu<kTanh>(x); }
};

struct Relu2Op {
  static constexpr bool kGated = false;
  __device__ __forceinline__ float operator()(float x) const { return x < 0.f ? 0.f : x * x; }  // NaN stays NaN
};

struct SoftcapOp {
  static constexpr bool kGated = false;
  float cap, inv_cap;
  __device__ __forceinline__ float operator()(float x) const { return cap * tanhf(x * inv_cap); }
};

}  // namespace fk::ops::act_cuda
