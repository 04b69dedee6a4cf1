// expect: PASSED
// A plain CUDA gated delta rule: one block per value head walks the call's sequences in
// order and their tokens one by one, the [K, V] state in registers (a thread per value
// column), in fp32. Slow but honest: inside Qwen3-Next's engine (fk e2e eval --device cuda)
// it replaces the chunked form in every gated-DeltaNet layer's prefill and must pass.
// gdn_leak/ builds it with LEAK_STATE_ACROSS_SEQUENCES, gdn_decode_stale/ as the recurrent
// (decode) form with DROP_FINAL_STATE.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/ops/gated_delta.h"

namespace {

constexpr int kMaxK = 128, kThreads = 128;

__device__ float load(const void* p, int64_t i, fk::DType t) {
  switch (t) {
    case fk::DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case fk::DType::f16: return __half2float(static_cast<const __half*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
__device__ void store(void* p, int64_t i, fk::DType t, float x) {
  switch (t) {
    case fk::DType::bf16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(x); break;
    case fk::DType::f16: static_cast<__half*>(p)[i] = __float2half(x); break;
    default: static_cast<float*>(p)[i] = x;
  }
}

// Sum over the block (every thread gets it).
__device__ float block_sum(float x, float* scratch) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = x;
  __syncthreads();
  float s = 0;
  for (int w = 0; w < kThreads / 32; ++w) s += scratch[w];
  __syncthreads();
  return s;
}

__global__ void delta_rule(fk::ops::GatedDeltaRuleArgs a, int N, int Hk, int K, int Hv, int V, float scale) {
  __shared__ float q[kMaxK], k[kMaxK], scratch[kThreads / 32];
  const int h = blockIdx.x, kh = h / (Hv / Hk), j = threadIdx.x;
  const int* cu = static_cast<const int*>(a.cu_seqlens.data);
  const int* slots = static_cast<const int*>(a.state_indices.data);
  const int* flags = a.has_initial_state.numel() > 0 ? static_cast<const int*>(a.has_initial_state.data) : nullptr;
  float S[kMaxK];  // column j of the state
  for (int i = 0; i < K; ++i) S[i] = 0.f;
  for (int n = 0; n < N; ++n) {
    const int slot = slots[n];
    float* state = slot >= 0 ? static_cast<float*>(a.state.data) + slot * a.state.strides[0] + h * K * V : nullptr;
    const bool from_slot = state != nullptr && (flags == nullptr || flags[n] != 0);
#ifdef LEAK_STATE_ACROSS_SEQUENCES
    // The bug: a fresh sequence keeps the state the one before it in the call ended with.
    if (from_slot && j < V)
      for (int i = 0; i < K; ++i) S[i] = state[i * V + j];
#else
    for (int i = 0; i < K; ++i) S[i] = from_slot && j < V ? state[i * V + j] : 0.f;
#endif
    for (int t = cu[n]; t < cu[n + 1]; ++t) {
      const float qi = j < K ? load(a.q.data, t * a.q.strides[0] + kh * K + j, a.q.dtype) : 0.f;
      const float ki = j < K ? load(a.k.data, t * a.k.strides[0] + kh * K + j, a.k.dtype) : 0.f;
      const float qn = a.use_qk_l2norm_in_kernel ? rsqrtf(block_sum(qi * qi, scratch) + 1e-6f) : 1.f;
      const float kn = a.use_qk_l2norm_in_kernel ? rsqrtf(block_sum(ki * ki, scratch) + 1e-6f) : 1.f;
      if (j < K) q[j] = qi * qn, k[j] = ki * kn;
      __syncthreads();
      if (j < V) {
        const float decay = __expf(static_cast<const float*>(a.g.data)[t * Hv + h]);
        const float beta = load(a.beta.data, t * Hv + h, a.beta.dtype);
        float sk = 0;
        for (int i = 0; i < K; ++i) sk += (S[i] *= decay) * k[i];
        const float delta = beta * (load(a.v.data, t * a.v.strides[0] + h * V + j, a.v.dtype) - sk);
        float o = 0;
        for (int i = 0; i < K; ++i) o += (S[i] += k[i] * delta) * q[i];
        store(a.o.data, (static_cast<int64_t>(t) * Hv + h) * V + j, a.o.dtype, scale * o);
      }
      __syncthreads();
    }
#ifndef DROP_FINAL_STATE
    if (state != nullptr && j < V)
      for (int i = 0; i < K; ++i) state[i * V + j] = S[i];
#endif
  }
}

fk_status run(const void* raw, void* stream) {
  const auto& a = *static_cast<const fk::ops::GatedDeltaRuleArgs*>(raw);
  const int N = static_cast<int>(a.cu_seqlens.shape[0] - 1), Hk = static_cast<int>(a.q.shape[1]),
            K = static_cast<int>(a.q.shape[2]), Hv = static_cast<int>(a.v.shape[1]), V = static_cast<int>(a.v.shape[2]);
  if (K > kMaxK || V > kThreads) return FK_ERR_UNSUPPORTED;
  if (N <= 0 || Hv == 0) return FK_OK;
  const float scale = a.scale > 0 ? a.scale : rsqrtf(static_cast<float>(K));
  delta_rule<<<Hv, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(a, N, Hk, K, Hv, V, scale);
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

}  // namespace

#ifdef EXPORT_AS_RECURRENT
FK_EXPORT_CANDIDATE(fused_recurrent_gated_delta_rule, run)
#else
FK_EXPORT_CANDIDATE(chunk_gated_delta_rule, run)
#endif
