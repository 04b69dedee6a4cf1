// Row normalisation kernels shared by rms_norm, gemma_rms_norm, fused_add_rms_norm,
// gemma_fused_add_rms_norm, layer_norm and add_layer_norm. One kernel body; a NormSpec picks, at compile
// time, the statistics (rms or mean/variance), whether a residual is added first, and
// whether the weight scales as w or 1 + w.
//
// The ops are memory bound (a few flops per byte), so the design is about bytes in flight:
// - Fast path (H a multiple of the 16-byte vector, 16-byte aligned rows): the row is read
//   once with 16-byte loads, every load of a thread issued before the first use (kVecs
//   independent vectors; 2 x kVecs with a residual), kept in registers (packed, two 16-bit
//   elements a register) through the reduction, then scaled by the weight (read after the
//   reduction: it is shared by all rows and hits L1/L2) and written with 16-byte stores.
//   fp32 math. Registers (sm_90a, bf16): 58 for 4 vectors a thread, 86 for 8; no spills.
//     rows <= 128 vectors (bf16 H <= 1024): a group of 1..32 lanes per row (1, 2 or 4
//       vectors each), several rows per 128-thread block, shuffle-only reduction (no
//       shared memory, no barrier);
//     rows <= 4096 vectors (bf16 H <= 32768): one block per row, 64..512 threads holding
//       2, 4 or 8 vectors each (H = 4096 bf16: 128 threads x 4 vectors), block reduction
//       through 32 floats of shared memory (one word per warp: no bank conflicts).
// - Looped path (longer rows, or any H / alignment with 1-element "vectors"): one block per
//   row, streams the row twice (three times for layer_norm); the re-reads mostly hit L2.
//
// Residual add: the sum is rounded to the dtype, stored, and that rounded value is what is
// normalised (see FusedAddRmsNormArgs). Loads of the updated tensors use the coherent path;
// read-only tensors use ld.global.nc.
#pragma once
#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/vec.cuh"
#include "fk/tensor_view.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/norm/norm_variants.h"

namespace fk::ops::norm_cuda {

enum class Stats { rms, mean_var };

template <Stats kStats_, bool kAddResidual_, bool kOnePlusWeight_>
struct NormSpec {
  static constexpr Stats kStats = kStats_;
  static constexpr bool kAddResidual = kAddResidual_;      // residual += input; normalise residual
  static constexpr bool kOnePlusWeight = kOnePlusWeight_;  // scale by 1 + w (Gemma)
};
using RmsNormSpec = NormSpec<Stats::rms, false, false>;
using GemmaRmsNormSpec = NormSpec<Stats::rms, false, true>;
using FusedAddRmsNormSpec = NormSpec<Stats::rms, true, false>;
using GemmaFusedAddRmsNormSpec = NormSpec<Stats::rms, true, true>;
using LayerNormSpec = NormSpec<Stats::mean_var, false, false>;
using AddLayerNormSpec = NormSpec<Stats::mean_var, true, false>;

template <class T>
struct NormParams {
  T* out;                   // [rows, H] written (fused add: the input tensor itself)
  int64_t out_stride;
  const T* in;              // [rows, H] read
  int64_t in_stride;
  const T* residual;        // [rows, H] read (fused add only, else null)
  int64_t residual_stride;
  T* residual_out;          // [rows, H] written with input + residual: residual itself (in place)
  int64_t residual_out_stride;  // or another tensor (rms_norm_linear's unfused path)
  const T* weight;          // [H]
  const T* bias;            // [H] or null (layer_norm only)
  int64_t rows;
  int H;
  float eps;
  // Launch geometry, set by launch_norm: threads per row and rows per block (1 = one
  // block per row, reduced through shared memory; > 1 = groups of lanes per row).
  int threads_per_row;
  int rows_per_block;
  int early_weight;  // norm_rows_in_registers reads weight before pdl_wait() (fk/ops/norm.h)
};

inline constexpr int kMaxRegisterThreads = 512;  // block per row, row in registers
inline constexpr int kMaxRegisterVecs = 8;       // vectors per thread (so rows <= 4096 vectors)
inline constexpr int kGroupBlockThreads = 128;   // block size when several rows share a block

template <class Spec>
__device__ __forceinline__ float weight_scale(float w) {
  if constexpr (Spec::kOnePlusWeight) return 1.f + w;
  else return w;
}

// Sum over the threads of one row: the whole block, or a group of `threads_per_row`
// (a power of two <= 32) aligned lanes of a warp. Every thread of the block must call it.
__device__ __forceinline__ float row_sum(float v, int threads_per_row, bool block_per_row, float* scratch) {
  if (block_per_row) return cuda::block_sum(v, scratch);
  for (int o = threads_per_row >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// round(x + r) to T, one vector: the residual the fused ops store and then normalise.
template <class T, int kN>
__device__ __forceinline__ cuda::PackedVec<T, kN> add_residual(const cuda::PackedVec<T, kN>& x,
                                                                const cuda::PackedVec<T, kN>& r) {
  float f[kN];
#pragma unroll
  for (int k = 0; k < kN; ++k) f[k] = cuda::unpack(x, k) + cuda::unpack(r, k);
  return cuda::pack<T, kN>(f);
}

// The vector's contribution to the first reduction: sum of squares (rms) or sum (mean).
template <class Spec, class T, int kN>
__device__ __forceinline__ float first_moment_part(const cuda::PackedVec<T, kN>& x) {
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const float f = cuda::unpack(x, k);
    acc += Spec::kStats == Stats::rms ? f * f : f;
  }
  return acc;
}

template <class T, int kN>
__device__ __forceinline__ float squared_deviation(const cuda::PackedVec<T, kN>& x, float mean) {
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const float d = cuda::unpack(x, k) - mean;
    acc += d * d;
  }
  return acc;
}

// y = (x - mean) * inv * scale(w) (+ b), one vector; bias_at null: no bias.
template <class Spec, class T, int kN>
__device__ __forceinline__ cuda::PackedVec<T, kN> normalise(const cuda::PackedVec<T, kN>& x,
                                                             const cuda::PackedVec<T, kN>& w, const T* bias_at,
                                                             float mean, float inv) {
  float y[kN];
  if constexpr (Spec::kStats == Stats::rms) {
#pragma unroll
    for (int k = 0; k < kN; ++k) y[k] = cuda::unpack(x, k) * inv * weight_scale<Spec>(cuda::unpack(w, k));
  } else {
#pragma unroll
    for (int k = 0; k < kN; ++k) y[k] = (cuda::unpack(x, k) - mean) * inv * weight_scale<Spec>(cuda::unpack(w, k));
    if (bias_at) {
      const auto b = cuda::load_packed_ro<kN>(bias_at);
#pragma unroll
      for (int k = 0; k < kN; ++k) y[k] += cuda::unpack(b, k);
    }
  }
  return cuda::pack<T, kN>(y);
}

// Fast path: rows of H = num_vec 16-byte vectors, each thread holding up to kVecs of them.
template <class T, int kVecs, class Spec>
__global__ void __launch_bounds__(kMaxRegisterThreads) norm_rows_in_registers(NormParams<T> p) {
  using V = cuda::Packed16Of<T>;
  constexpr int N = V::N;
  __shared__ float scratch[32];
  const bool block_per_row = p.rows_per_block == 1;
  const int tpr = p.threads_per_row;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + threadIdx.x / tpr;
  const int lane = threadIdx.x % tpr;
  // Spare groups of the last block stay to take part in the shuffles, loading nothing.
  const bool active = row < p.rows;
  const int num_vec = p.H / N;

  // The weight first, before the wait (unless the op's variant late_weight): it is a constant, never
  // written by the kernel right before this one (fk/ops/norm.h), and at decode it is not in
  // L2 (a step streams the model's weights through it), so read after the reduction it put
  // a trip to DRAM on the chain of dependent latencies that this kernel is (kVecs x 4
  // registers held across the reduction instead): Llama-3.1-8B batch 4 x 1k decode
  // 6.27 -> 6.16 ms a step on an H100 (bench/results/h100/norm_weight_early.json).
  V w[kVecs];
  auto load_weight = [&] {
#pragma unroll
    for (int c = 0; c < kVecs; ++c) {
      const int i = lane + c * tpr;
      w[c] = active && i < num_vec ? cuda::load_packed_ro<N>(p.weight + i * N) : V{};
    }
  };
  if (p.early_weight) load_weight();
  cuda::pdl_wait();  // launched with PDL (launch_norm): the input comes from the kernel before
  cuda::pdl_trigger();
  const T* x_row = p.in + row * p.in_stride;
  const T* r_row = Spec::kAddResidual ? p.residual + row * p.residual_stride : nullptr;
  T* r_out_row = Spec::kAddResidual ? p.residual_out + row * p.residual_out_stride : nullptr;

  // Every load of the row is issued before the first use. Vectors past the row's end are
  // zero: they add nothing to the sums and are never stored.
  V x[kVecs];
  [[maybe_unused]] V r[kVecs];
#pragma unroll
  for (int c = 0; c < kVecs; ++c) {
    const int i = lane + c * tpr;
    const bool valid = active && i < num_vec;
    if constexpr (Spec::kAddResidual) {
      x[c] = valid ? cuda::load_packed<N>(x_row + i * N) : V{};
      r[c] = valid ? cuda::load_packed<N>(r_row + i * N) : V{};
    } else {
      x[c] = valid ? cuda::load_packed_ro<N>(x_row + i * N) : V{};
    }
  }

  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < kVecs; ++c) {
    if constexpr (Spec::kAddResidual) {
      const int i = lane + c * tpr;
      x[c] = add_residual(x[c], r[c]);
      if (active && i < num_vec) cuda::store_packed<N>(r_out_row + i * N, x[c]);
    }
    acc += first_moment_part<Spec>(x[c]);
  }
  const float total = row_sum(acc, tpr, block_per_row, scratch);
  float mean = 0.f, inv;
  if constexpr (Spec::kStats == Stats::rms) {
    inv = rsqrtf(total / static_cast<float>(p.H) + p.eps);
  } else {
    mean = total / static_cast<float>(p.H);
    float dev = 0.f;
#pragma unroll
    for (int c = 0; c < kVecs; ++c) {
      const int i = lane + c * tpr;
      if (active && i < num_vec) dev += squared_deviation(x[c], mean);
    }
    inv = rsqrtf(row_sum(dev, tpr, block_per_row, scratch) / static_cast<float>(p.H) + p.eps);
  }

  T* y_row = p.out + row * p.out_stride;
  if (!p.early_weight) load_weight();
#pragma unroll
  for (int c = 0; c < kVecs; ++c) cuda::keep_packed(x[c]);
#pragma unroll
  for (int c = 0; c < kVecs; ++c) {
    const int i = lane + c * tpr;
    if (active && i < num_vec)
      cuda::store_packed<N>(y_row + i * N, normalise<Spec>(x[c], w[c], p.bias ? p.bias + i * N : nullptr, mean, inv));
  }
}

// Any row length: one block per row, the row streamed from memory per pass. kN is the
// vector width in elements (16 bytes, or 1 for any alignment).
template <class T, int kN, class Spec>
__global__ void __launch_bounds__(kMaxRegisterThreads) norm_rows_looped(NormParams<T> p) {
  cuda::pdl_wait();
  cuda::pdl_trigger();
  using V = cuda::PackedVec<T, kN>;
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const int num_vec = p.H / kN;
  const T* x_row = p.in + row * p.in_stride;
  const T* r_row = Spec::kAddResidual ? p.residual + row * p.residual_stride : nullptr;
  T* r_out_row = Spec::kAddResidual ? p.residual_out + row * p.residual_out_stride : nullptr;

  float acc = 0.f;
#pragma unroll 4
  for (int i = threadIdx.x; i < num_vec; i += blockDim.x) {
    V x;
    if constexpr (Spec::kAddResidual) {
      x = add_residual(cuda::load_packed<kN>(x_row + i * kN), cuda::load_packed<kN>(r_row + i * kN));
      cuda::store_packed<kN>(r_out_row + i * kN, x);
    } else {
      x = cuda::load_packed_ro<kN>(x_row + i * kN);
    }
    acc += first_moment_part<Spec>(x);
  }
  const float total = cuda::block_sum(acc, scratch);
  float mean = 0.f, inv;
  if constexpr (Spec::kStats == Stats::rms) {
    inv = rsqrtf(total / static_cast<float>(p.H) + p.eps);
  } else {
    mean = total / static_cast<float>(p.H);
    float dev = 0.f;
#pragma unroll 4
    for (int i = threadIdx.x; i < num_vec; i += blockDim.x)
      dev += squared_deviation(Spec::kAddResidual ? cuda::load_packed<kN>(r_out_row + i * kN)
                                                  : cuda::load_packed_ro<kN>(x_row + i * kN),
                               mean);
    inv = rsqrtf(cuda::block_sum(dev, scratch) / static_cast<float>(p.H) + p.eps);
  }

  // With a residual, normalise the rounded sums this thread stored in the first pass
  // (same thread, same addresses: its own writes are visible to its coherent loads).
  T* y_row = p.out + row * p.out_stride;
#pragma unroll 4
  for (int i = threadIdx.x; i < num_vec; i += blockDim.x) {
    const V x = Spec::kAddResidual ? cuda::load_packed<kN>(r_out_row + i * kN) : cuda::load_packed_ro<kN>(x_row + i * kN);
    const V w = cuda::load_packed_ro<kN>(p.weight + i * kN);
    cuda::store_packed<kN>(y_row + i * kN, normalise<Spec>(x, w, p.bias ? p.bias + i * kN : nullptr, mean, inv));
  }
}

template <class T, int kVecs, class Spec>
void launch_in_registers(const NormParams<T>& p, int64_t blocks, int threads, cudaStream_t stream) {
  cuda::launch_pdl(norm_rows_in_registers<T, kVecs, Spec>, dim3(static_cast<unsigned>(blocks)), dim3(threads), 0, stream, p);
}

template <class T, class Spec>
void launch_norm(NormParams<T> p, cudaStream_t stream) {
  if (p.rows == 0) return;
  constexpr int N = cuda::Packed16Of<T>::N;
  const bool vec_ok = p.H % N == 0 && p.in_stride % N == 0 && p.out_stride % N == 0 &&
                      (p.residual == nullptr || (p.residual_stride % N == 0 && p.residual_out_stride % N == 0)) &&
                      cuda::all_aligned16(p.out, p.in, p.residual, p.residual_out, p.weight, p.bias);
  const int64_t num_vec = vec_ok ? p.H / N : p.H;
  if (vec_ok && num_vec <= 4 * 32) {
    // Short rows: a power-of-two group of lanes per row, several rows per block; two
    // vectors per thread where the row allows (Qwen3's 128-wide q/k norm: 8 lanes x 2).
    const int kv = num_vec <= 8 ? 1 : num_vec <= 64 ? 2 : 4;
    int tpr = 1;
    while (tpr < 32 && tpr * kv < num_vec) tpr *= 2;
    p.threads_per_row = tpr;
    p.rows_per_block = kGroupBlockThreads / tpr;
    const int64_t blocks = cuda::ceil_div(p.rows, p.rows_per_block);
    if (kv == 1) launch_in_registers<T, 1, Spec>(p, blocks, kGroupBlockThreads, stream);
    else if (kv == 2) launch_in_registers<T, 2, Spec>(p, blocks, kGroupBlockThreads, stream);
    else launch_in_registers<T, 4, Spec>(p, blocks, kGroupBlockThreads, stream);
  } else if (vec_ok && num_vec <= kMaxRegisterVecs * kMaxRegisterThreads) {
    // One block per row; about 128 threads for rows up to 1024 vectors (bf16 H = 8192).
    const int kv = num_vec <= 256 ? 2 : num_vec <= 512 ? 4 : 8;
    const int threads = cuda::round_up(static_cast<int>(cuda::ceil_div(num_vec, kv)), 32);
    p.threads_per_row = threads;
    p.rows_per_block = 1;
    if (kv == 2) launch_in_registers<T, 2, Spec>(p, p.rows, threads, stream);
    else if (kv == 4) launch_in_registers<T, 4, Spec>(p, p.rows, threads, stream);
    else launch_in_registers<T, 8, Spec>(p, p.rows, threads, stream);
  } else {
    // About 4 vectors per thread and pass, at most kMaxRegisterThreads threads.
    const int threads = std::min(kMaxRegisterThreads, cuda::round_up(static_cast<int>(cuda::ceil_div(num_vec, 4)), 32));
    p.threads_per_row = threads;
    p.rows_per_block = 1;
    if (vec_ok) cuda::launch_pdl(norm_rows_looped<T, N, Spec>, dim3(static_cast<unsigned>(p.rows)), dim3(threads), 0, stream, p);
    else cuda::launch_pdl(norm_rows_looped<T, 1, Spec>, dim3(static_cast<unsigned>(p.rows)), dim3(threads), 0, stream, p);
  }
}

// Builds the parameters from views (already validated) and launches for the input's dtype.
// `residual` and `bias` may be null; the sum input + residual goes to `residual_out`, or
// back into `residual` when that is null.
template <class Spec>
void run_norm(const char* op, const TensorView& out, const TensorView& in, const TensorView* residual,
              const TensorView& weight, const TensorView* bias, float eps, void* stream,
              const TensorView* residual_out = nullptr) {
  cuda::dispatch_float_dtype(weight.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    NormParams<T> p{};
    p.out = out.ptr<T>();
    p.out_stride = out.strides[0];
    p.in = in.ptr<T>();
    p.in_stride = in.strides[0];
    p.residual = residual ? residual->ptr<T>() : nullptr;
    p.residual_stride = residual ? residual->strides[0] : 0;
    const TensorView* r_out = residual_out ? residual_out : residual;
    p.residual_out = r_out ? r_out->ptr<T>() : nullptr;
    p.residual_out_stride = r_out ? r_out->strides[0] : 0;
    p.weight = weight.ptr<T>();
    p.bias = bias && bias->data ? bias->ptr<T>() : nullptr;
    p.rows = in.shape[0];
    p.H = static_cast<int>(in.shape[1]);
    p.eps = eps;
    p.early_weight = norm_late_weight(op) ? 0 : 1;
    const cuda::PdlOffScope pdl(pdl_off_for(op));
    launch_norm<T, Spec>(p, static_cast<cudaStream_t>(stream));
  });
}

}  // namespace fk::ops::norm_cuda
