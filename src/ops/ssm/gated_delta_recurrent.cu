// fused_recurrent_gated_delta_rule CUDA baseline: token by token, the state in registers.
//
// One block per (sequence, value head, slice of 32 value columns): 4 warps, lane = column,
// warp w holding rows w, w + 4, ... of the [K, 32] state slice (K <= 128: at most 32 rows a
// thread). The slice is read from its slot once, carried through all of the sequence's
// tokens in registers, and written back once, so a decode step moves each state byte twice
// (the op is bound by that traffic: 64 KiB per head and sequence at K = V = 128). Warps
// read whole 128-byte rows of the slice, coalesced. Per token: q and k (normalised with a
// block reduction when asked) go through shared memory, S^T k and S^T q are per-warp
// partial sums over rows reduced across the 4 warps in shared memory. Math in f32.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/op_registry.h"
#include "ops/ssm/gated_delta_cuda.cuh"

namespace fk::ops {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kCols = 32;                                      // value columns a block
constexpr int kRows = static_cast<int>(kGatedDeltaMaxHeadK) / kWarps;  // state rows a thread

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <class T, class TB>
__global__ void __launch_bounds__(kThreads) gdn_recurrent_kernel(const gdn::Params<T, TB> p) {
  __shared__ float qs[kGatedDeltaMaxHeadK], ks[kGatedDeltaMaxHeadK];
  __shared__ float part[kWarps][kCols];
  __shared__ float norms[2][kWarps];
  const int n = static_cast<int>(blockIdx.x) / p.hv, h = static_cast<int>(blockIdx.x) % p.hv;
  const int hk = h / (p.hv / p.hk);
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int col = static_cast<int>(blockIdx.y) * kCols + lane;
  const bool col_ok = col < p.dv;
  int64_t read_slot, write_slot;
  gdn::sequence_slots(p, n, read_slot, write_slot);

  // This thread's state entries: rows warp + kWarps * r of column col.
  float s[kRows];
  const int64_t head_off = static_cast<int64_t>(h) * p.dk * p.dv;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int row = warp + kWarps * r;
    s[r] = 0.f;
    if (read_slot >= 0 && row < p.dk && col_ok)
      s[r] = p.state[read_slot * p.slot_stride + head_off + static_cast<int64_t>(row) * p.dv + col];
  }

  const int64_t bos = p.cu_seqlens[n], eos = p.cu_seqlens[n + 1];
  for (int64_t t = bos; t < eos; ++t) {
    __syncthreads();  // the previous token's readers of qs, ks, part are done
    float qv = 0.f, kv = 0.f;
    if (tid < p.dk) {
      qv = gdn::ld(p.q, t * p.q_stride + static_cast<int64_t>(hk) * p.dk + tid);
      kv = gdn::ld(p.k, t * p.k_stride + static_cast<int64_t>(hk) * p.dk + tid);
    }
    float qscale = p.scale, kscale = 1.f;
    if (p.l2norm) {
      const float sq = warp_sum(qv * qv), sk = warp_sum(kv * kv);
      if (lane == 0) norms[0][warp] = sq, norms[1][warp] = sk;
      __syncthreads();
      float tq = 0.f, tk = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) tq += norms[0][w], tk += norms[1][w];
      qscale *= 1.f / sqrtf(tq + 1e-6f);
      kscale = 1.f / sqrtf(tk + 1e-6f);
    }
    if (tid < p.dk) qs[tid] = qv * qscale, ks[tid] = kv * kscale;
    const int64_t gi = t * p.hv + h;
    const float decay = expf(p.g[gi]), beta = gdn::ld(p.beta, gi);
    const float vv = col_ok ? gdn::ld(p.v, t * p.v_stride + static_cast<int64_t>(h) * p.dv + col) : 0.f;
    __syncthreads();

    // S = S * exp(g); partial (S^T k)[col] over this thread's rows.
    float acc = 0.f;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int row = warp + kWarps * r;
      s[r] *= decay;
      if (row < p.dk) acc += s[r] * ks[row];
    }
    part[warp][lane] = acc;
    __syncthreads();
    float kvmem = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) kvmem += part[w][lane];
    const float delta = beta * (vv - kvmem);
    // S += k delta^T; partial (S^T q)[col].
    float out = 0.f;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int row = warp + kWarps * r;
      if (row < p.dk) {
        s[r] += ks[row] * delta;
        out += s[r] * qs[row];
      }
    }
    __syncthreads();  // every warp has read part (S^T k) before it holds S^T q
    part[warp][lane] = out;
    __syncthreads();
    if (warp == 0 && col_ok) {
      float o = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) o += part[w][lane];
      p.o[gi * p.dv + col] = cuda::from_float<T>(o);
    }
  }

  if (write_slot < 0 || !col_ok) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int row = warp + kWarps * r;
    if (row < p.dk) p.state[write_slot * p.slot_stride + head_off + static_cast<int64_t>(row) * p.dv + col] = s[r];
  }
}

fk_status fused_recurrent_gated_delta_rule_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedRecurrentGatedDeltaRuleArgs*>(args);
    const char* op = FusedRecurrentGatedDeltaRuleArgs::kName;
    const GatedDeltaDims d = validate_gated_delta_rule(op, a, DeviceType::cuda);
    gdn::check_cuda_limits(op, d);
    if (d.seqs == 0) return;
    gdn::dispatch(op, a, d, [&](const auto& p) {
      const dim3 grid(static_cast<unsigned>(d.seqs * d.hv), static_cast<unsigned>(cuda::ceil_div(d.dv, kCols)));
      gdn_recurrent_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p);
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("fused_recurrent_gated_delta_rule", cuda, fused_recurrent_gated_delta_rule_cuda);

}  // namespace
}  // namespace fk::ops
