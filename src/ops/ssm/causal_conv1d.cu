// causal_conv1d CUDA baseline: two kernels on the caller's stream.
//
// 1. Outputs. A thread takes kN adjacent channels (a 16-byte vector where D, the row
//    strides and the pointers allow, else one channel) over a run of kRun consecutive
//    tokens; consecutive threads take consecutive channel groups of the same tokens, so a
//    warp reads and writes whole rows of x and out, coalesced. The thread finds its first
//    token's sequence by binary search in cu_seqlens, fills the window of the W - 1 inputs
//    before it (from x, or before the sequence's start from its slot's state or zeros), then
//    slides the window along its run in registers (the run's x rows loaded up front),
//    reloading it where a new sequence starts. Each x row is read once by its own run and W - 1 more times by the next run's
//    window (3 of 16 rows at W = 4: from L2). fp32 math, rounded once to the dtype.
// 2. States. One thread per (sequence, channel) writes the slot's new state: the last W - 1
//    inputs of the sequence, preceded by the old state (or zeros) where the sequence is
//    shorter. This runs after every output is computed, because kernel 1's windows read the
//    old states: done in kernel 1, a slot could be overwritten before a later run of the
//    same sequence read it.
// Qwen3-Next prefill, 32768 x 8192 bf16: 1.07 GB (x read, out written): 360 us at 3.0 TB/s.
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/ssm/causal_conv1d_kernels.cuh"
#include "ops/ssm/causal_conv1d_validate.h"

namespace fk::ops {
namespace {

using conv_cuda::ChannelFilter;
using conv_cuda::ConvStatePool;

constexpr int kThreads = 128;
constexpr int kRun = 16;  // tokens per thread

template <class T>
struct PrefillParams {
  T* out;
  int64_t out_stride;
  const T* x;
  int64_t x_stride;
  const T* weight;
  const T* bias;  // null: none
  ConvStatePool<T> state;
  const int32_t* cu_seqlens;
  const int32_t* state_indices;
  const uint8_t* has_initial_state;  // null: every sequence is fresh
  int batch;
  int64_t tokens;
  int64_t channels;
  int silu;
};

// Whether sequence b starts from its slot's state (a padding or out-of-range slot never does).
template <class T>
__device__ __forceinline__ bool starts_from_state(const PrefillParams<T>& p, int b) {
  return p.has_initial_state != nullptr && p.has_initial_state[b] != 0 && p.state.holds(p.state_indices[b]);
}

// Largest b with cu_seqlens[b] <= t: the sequence holding token t (empty sequences, which
// share their start with the next, are skipped). Kept inside [0, batch - 1].
__device__ __forceinline__ int sequence_of(const int32_t* cu, int batch, int64_t t) {
  int lo = 0, hi = batch;  // cu[lo] <= t holds for lo = 0 on valid input
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (cu[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

// The W - 1 inputs before token t of sequence b, oldest first.
template <class T, int kW, int kN>
__device__ __forceinline__ void load_window(const PrefillParams<T>& p, int b, int64_t t, int64_t c0,
                                            float (&window)[kW - 1][kN]) {
  const int64_t start = p.cu_seqlens[b];
  const bool from_state = starts_from_state(p, b);
  const int64_t slot = p.state_indices[b];
#pragma unroll
  for (int j = 0; j < kW - 1; ++j) {
    const int64_t pos = t - (kW - 1) + j;
    if (pos >= start) {
      const auto v = cuda::load_packed_ro<kN>(p.x + pos * p.x_stride + c0);
#pragma unroll
      for (int i = 0; i < kN; ++i) window[j][i] = cuda::unpack(v, i);
    } else {
      // pos - start in [-(W - 1), -1]: state tap W - 1 + (pos - start).
      const int tap = static_cast<int>(kW - 1 + (pos - start));
#pragma unroll
      for (int i = 0; i < kN; ++i) window[j][i] = from_state ? cuda::to_float(*p.state.at(slot, c0 + i, tap)) : 0.f;
    }
  }
}

template <class T, int kW, int kN>
__global__ void __launch_bounds__(kThreads) conv_prefill_outputs(const PrefillParams<T> p) {
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kRun;
  const int64_t t_end = t0 + kRun < p.tokens ? t0 + kRun : p.tokens;
  const int64_t groups = p.channels / kN;
  for (int64_t g = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; g < groups;
       g += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const int64_t c0 = g * kN;
    ChannelFilter<T, kW, kN> f;
    f.load(p.weight, p.bias, c0);
    int b = sequence_of(p.cu_seqlens, p.batch, t0);
    int64_t next_start = p.cu_seqlens[b + 1];
    float window[kW - 1][kN];
    load_window<T, kW, kN>(p, b, t0, c0, window);
    // Every load of the run is issued before the first use (bytes in flight).
    cuda::PackedVec<T, kN> xs[kRun];
#pragma unroll
    for (int r = 0; r < kRun; ++r)
      xs[r] = t0 + r < t_end ? cuda::load_packed_ro<kN>(p.x + (t0 + r) * p.x_stride + c0) : cuda::PackedVec<T, kN>{};
#pragma unroll
    for (int r = 0; r < kRun; ++r) {
      const int64_t t = t0 + r;
      if (t >= t_end) break;
      if (t >= next_start) {  // a new sequence starts at t (skipping empty ones)
        while (b + 1 < p.batch && p.cu_seqlens[b + 1] <= t) ++b;
        next_start = p.cu_seqlens[b + 1];
        load_window<T, kW, kN>(p, b, t, c0, window);
      }
      float cur[kN], y[kN];
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        cur[i] = cuda::unpack(xs[r], i);
        y[i] = f.apply(i, window, cur[i], p.silu != 0);
      }
      cuda::store_packed<kN>(p.out + t * p.out_stride + c0, cuda::pack<T, kN>(y));
      conv_cuda::shift_window<kW, kN>(window, cur);
    }
  }
}

// One thread per (sequence, channel): the slot's new state.
template <class T, int kW>
__global__ void __launch_bounds__(kThreads) conv_prefill_states(const PrefillParams<T> p) {
  const int b = blockIdx.x;
  const int64_t slot = p.state_indices[b];
  if (!p.state.holds(slot)) return;
  const int64_t start = p.cu_seqlens[b], len = p.cu_seqlens[b + 1] - start;
  const bool from_state = starts_from_state(p, b);
  for (int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; c < p.channels;
       c += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    T v[kW - 1];
#pragma unroll
    for (int j = 0; j < kW - 1; ++j) {
      const int64_t pos = len - (kW - 1) + j;  // relative to the sequence's start
      v[j] = pos >= 0 ? p.x[(start + pos) * p.x_stride + c]
                      : from_state ? *p.state.at(slot, c, static_cast<int>(kW - 1 + pos)) : cuda::from_float<T>(0.f);
    }
#pragma unroll
    for (int j = 0; j < kW - 1; ++j) *p.state.at(slot, c, j) = v[j];
  }
}

template <class T, int kW, int kN>
void launch_outputs(const PrefillParams<T>& p, cudaStream_t stream) {
  const int64_t groups = p.channels / kN;
  const dim3 grid(static_cast<unsigned>(cuda::ceil_div(p.tokens, kRun)),
                  static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(groups, kThreads), 65535)));
  conv_prefill_outputs<T, kW, kN><<<grid, kThreads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status causal_conv1d_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const CausalConv1dArgs*>(args);
    validate_causal_conv1d(a, DeviceType::cuda);
    const int64_t B = a.cu_seqlens.shape[0] - 1;
    if (B == 0) return;  // no sequences, so no tokens either
    const auto s = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.x.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      PrefillParams<T> p{a.out.ptr<T>(),
                         a.out.strides[0],
                         a.x.ptr<T>(),
                         a.x.strides[0],
                         a.weight.ptr<T>(),
                         arg_present(a.bias) ? a.bias.ptr<T>() : nullptr,
                         conv_cuda::state_pool<T>(a.conv_state),
                         a.cu_seqlens.ptr<int32_t>(),
                         a.state_indices.ptr<int32_t>(),
                         arg_present(a.has_initial_state) ? a.has_initial_state.ptr<uint8_t>() : nullptr,
                         static_cast<int>(B),
                         a.x.shape[0],
                         a.x.shape[1],
                         a.silu};
      constexpr int N = 16 / static_cast<int>(sizeof(T));
      const bool vec_ok = p.channels % N == 0 && p.x_stride % N == 0 && p.out_stride % N == 0 &&
                          cuda::aligned16(p.x) && cuda::aligned16(p.out);
      conv_cuda::dispatch_width(a.weight.shape[1], [&](auto w) {
        constexpr int W = decltype(w)::value;
        if (p.tokens > 0) {
          if (vec_ok) launch_outputs<T, W, N>(p, s);
          else launch_outputs<T, W, 1>(p, s);
        }
        const dim3 grid(static_cast<unsigned>(B),
                        static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(p.channels, kThreads), 65535)));
        conv_prefill_states<T, W><<<grid, kThreads, 0, s>>>(p);
        FK_CUDA_CHECK_LAUNCH();
      });
    });
  });
}

FK_REGISTER_IMPL("causal_conv1d", cuda, causal_conv1d_cuda);

}  // namespace
}  // namespace fk::ops
