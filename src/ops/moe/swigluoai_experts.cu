// CUDA baseline of fused_experts_swigluoai (fk/ops/moe_swigluoai.h): two GEMV-style passes
// with one warp per output value, no grouping of slots by expert.
//   1. act[slot, i] (f32, workspace): a block per (slot, 8 rows i); the slot's hidden row is
//      staged in shared memory as f32; each warp takes the dot products of gate row i and
//      up row I + i with it, adds the biases, clamps and applies the gated activation.
//   2. out[t, h]: a block per (token, 8 rows h); each warp sums over the token's k slots
//      weight * (w2[e, h, :] . act[slot] + w2_bias[e, h]) and rounds once.
// Weight rows load 16 bytes a lane where H and I are multiples of 8. Every slot reads its
// expert's weights on its own, so prefill reads them once per routed
// token: correct at every shape, bandwidth-optimal only for decode (one token per expert),
// which is where gpt-oss's batch-1 latency is spent. A grouped GEMM over expert-sorted slots
// (fused_experts' prefill path) is the candidate's to bring.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/moe/swigluoai_experts_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One lane's share of row . x over n values. kVec: 16-byte loads of the weight row (8
// 16-bit values a lane; the row 16-byte aligned and n a multiple of 8), which keeps more
// bytes in flight per warp than 2-byte loads; else one value a lane per step.
template <class T, bool kVec>
__device__ __forceinline__ float lane_dot(const T* row, const float* x, int n, int lane) {
  float s = 0.f;
  if constexpr (kVec) {
    constexpr int N = cuda::Vec16<T>::N;
    for (int h = lane * N; h < n; h += 32 * N) {
      const cuda::Vec16<T> w = cuda::load16(row + h);
#pragma unroll
      for (int j = 0; j < N; ++j) s += cuda::to_float(w.v[j]) * x[h + j];
    }
  } else {
    for (int h = lane; h < n; h += 32) s += cuda::to_float(row[h]) * x[h];
  }
  return s;
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    swigluoai_act_kernel(float* act, const T* hidden, int64_t hidden_stride, const T* w13, const T* w13_bias,
                         const int32_t* topk_ids, int k, int E, int H, int I, float alpha, float limit) {
  extern __shared__ float x[];
  const int64_t slot = blockIdx.x;
  const int64_t t = slot / k;
  const int e = topk_ids[slot];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int i = blockIdx.y * kWarps + warp;
  if (e < 0 || e >= E) {  // routed nowhere: the second pass skips the slot
    if (i < I && lane == 0) act[slot * I + i] = 0.f;
    return;
  }
  for (int h = threadIdx.x; h < H; h += kThreads) x[h] = cuda::to_float(hidden[t * hidden_stride + h]);
  __syncthreads();
  if (i >= I) return;
  const T* gate_row = w13 + (static_cast<int64_t>(e) * 2 * I + i) * H;
  const T* up_row = gate_row + static_cast<int64_t>(I) * H;
  float g = warp_sum(lane_dot<T, kVec>(gate_row, x, H, lane));
  float u = warp_sum(lane_dot<T, kVec>(up_row, x, H, lane));
  if (lane == 0) {
    g = fminf(g + cuda::to_float(w13_bias[static_cast<int64_t>(e) * 2 * I + i]), limit);
    u = fminf(fmaxf(u + cuda::to_float(w13_bias[static_cast<int64_t>(e) * 2 * I + I + i]), -limit), limit);
    act[slot * I + i] = (u + 1.f) * g / (1.f + expf(-alpha * g));
  }
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    swigluoai_down_kernel(T* out, const float* act, const T* w2, const T* w2_bias, const float* topk_weights,
                          const int32_t* topk_ids, int k, int E, int H, int I) {
  const int64_t t = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int h = blockIdx.y * kWarps + warp;
  if (h >= H) return;
  float total = 0.f;
  for (int j = 0; j < k; ++j) {
    const int64_t slot = t * k + j;
    const int e = topk_ids[slot];
    if (e < 0 || e >= E) continue;
    const T* row = w2 + (static_cast<int64_t>(e) * H + h) * I;
    const float* a = act + slot * I;
    const float y = warp_sum(lane_dot<T, kVec>(row, a, I, lane)) + cuda::to_float(w2_bias[static_cast<int64_t>(e) * H + h]);
    total += topk_weights[slot] * y;
  }
  if (lane == 0) out[t * H + h] = cuda::from_float<T>(total);
}

fk_status swigluoai_experts_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedExpertsSwigluOaiArgs*>(args);
    const SwigluOaiShape s = validate_fused_experts_swigluoai(a, DeviceType::cuda);
    if (s.T == 0) return;
    const size_t smem = static_cast<size_t>(s.H) * sizeof(float);
    if (smem > 48 * 1024)
      FK_FAIL(FK_ERR_UNSUPPORTED, a.kName, ": hidden size ", s.H, " exceeds the baseline's staged row (at most 12288)");
    if ((s.I + kWarps - 1) / kWarps > 65535 || (s.H + kWarps - 1) / kWarps > 65535)
      FK_FAIL(FK_ERR_UNSUPPORTED, a.kName, ": hidden or intermediate size too large for the baseline's grid");
    auto* act = static_cast<float*>(a.workspace.data);
    const auto st = static_cast<cudaStream_t>(stream);
    // Vector loads where every weight row starts 16-byte aligned and holds whole vectors
    // (H and I multiples of 8: gpt-oss's 2880); the activations are f32 in the workspace,
    // read element by element either way.
    const bool vec = s.H % 8 == 0 && s.I % 8 == 0 && cuda::aligned16(a.w13.data) && cuda::aligned16(a.w2.data);
    cuda::dispatch_float_dtype(a.hidden.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto launch = [&](auto vec_tag) {
        constexpr bool kVec = decltype(vec_tag)::value;
        const dim3 grid1(static_cast<unsigned>(s.T * s.k), static_cast<unsigned>((s.I + kWarps - 1) / kWarps));
        swigluoai_act_kernel<T, kVec><<<grid1, kThreads, smem, st>>>(
            act, a.hidden.ptr<T>(), a.hidden.strides[0], a.w13.ptr<T>(), a.w13_bias.ptr<T>(),
            a.topk_ids.ptr<int32_t>(), static_cast<int>(s.k), static_cast<int>(s.E), static_cast<int>(s.H),
            static_cast<int>(s.I), a.alpha, a.limit);
        FK_CUDA_CHECK_LAUNCH();
        const dim3 grid2(static_cast<unsigned>(s.T), static_cast<unsigned>((s.H + kWarps - 1) / kWarps));
        swigluoai_down_kernel<T, kVec><<<grid2, kThreads, 0, st>>>(
            a.out.ptr<T>(), act, a.w2.ptr<T>(), a.w2_bias.ptr<T>(), a.topk_weights.ptr<float>(),
            a.topk_ids.ptr<int32_t>(), static_cast<int>(s.k), static_cast<int>(s.E), static_cast<int>(s.H),
            static_cast<int>(s.I));
        FK_CUDA_CHECK_LAUNCH();
      };
      if (vec)
        launch(std::true_type{});
      else
        launch(std::false_type{});
    });
  });
}

FK_REGISTER_IMPL("fused_experts_swigluoai", cuda, swigluoai_experts_cuda);

}  // namespace
}  // namespace fk::ops
