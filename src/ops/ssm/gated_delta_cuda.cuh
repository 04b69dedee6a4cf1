// What the gated delta rule's CUDA kernels share: their parameters (raw pointers and the
// sizes of one call) and element loads, and the host-side dispatch over the dtypes of
// q/k/v/o and of beta.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/vec.cuh"
#include "fk/ops/gated_delta.h"
#include "ops/ssm/gated_delta_validate.h"

namespace fk::ops::gdn {

template <class T, class TB>
struct Params {
  T* o;                 // [T, Hv, V] contiguous
  float* state;         // [slots, Hv, K, V], slots slot_stride apart, each packed
  const T* q;           // [T, Hk, K], token stride q_stride
  const T* k;           // [T, Hk, K], token stride k_stride
  const T* v;           // [T, Hv, V], token stride v_stride
  const float* g;       // [T, Hv]
  const TB* beta;       // [T, Hv]
  const int32_t* cu_seqlens;
  const int32_t* state_indices;
  const int32_t* has_initial;  // null: every sequence starts from its slot
  int64_t q_stride, k_stride, v_stride, slot_stride;
  int seqs, slots, hk, hv, dk, dv;
  float scale;          // resolved: > 0
  int l2norm;
};

// The slot a sequence reads its initial state from (-1: none, start from zeros) and the
// slot it writes (-1: a slot outside the pool, which the host validation cannot see on the
// device: nothing is written).
template <class T, class TB>
__device__ __forceinline__ void sequence_slots(const Params<T, TB>& p, int n, int64_t& read_slot,
                                               int64_t& write_slot) {
  const int64_t s = p.state_indices[n];
  write_slot = s >= 0 && s < p.slots ? s : -1;
  read_slot = (p.has_initial == nullptr || p.has_initial[n] != 0) ? write_slot : -1;
}

template <class T>
__device__ __forceinline__ float ld(const T* p, int64_t i) {
  return cuda::to_float(p[i]);
}

// Fills the kernel parameters from validated args and calls f(params) with the element types.
template <class F>
void dispatch(const char* op, const GatedDeltaRuleArgs& a, const GatedDeltaDims& d, F&& f) {
  cuda::dispatch_float_dtype(a.q.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto run = [&](auto beta_tag) {
      using TB = typename decltype(beta_tag)::type;
      Params<T, TB> p{};
      p.o = a.o.ptr<T>();
      p.state = a.state.ptr<float>();
      p.q = a.q.ptr<T>(), p.k = a.k.ptr<T>(), p.v = a.v.ptr<T>();
      p.g = a.g.ptr<float>();
      p.beta = a.beta.ptr<TB>();
      p.cu_seqlens = a.cu_seqlens.ptr<int32_t>();
      p.state_indices = a.state_indices.ptr<int32_t>();
      p.has_initial = arg_present(a.has_initial_state) ? a.has_initial_state.ptr<int32_t>() : nullptr;
      p.q_stride = a.q.strides[0], p.k_stride = a.k.strides[0], p.v_stride = a.v.strides[0];
      p.slot_stride = a.state.strides[0];
      p.seqs = static_cast<int>(d.seqs), p.slots = static_cast<int>(d.slots);
      p.hk = static_cast<int>(d.hk), p.hv = static_cast<int>(d.hv);
      p.dk = static_cast<int>(d.dk), p.dv = static_cast<int>(d.dv);
      p.scale = a.scale > 0 ? a.scale : 1.f / sqrtf(static_cast<float>(d.dk));
      p.l2norm = a.use_qk_l2norm_in_kernel;
      f(p);
    };
    if (a.beta.dtype == DType::f32)
      run(cuda::TypeTag<float>{});
    else
      run(cuda::TypeTag<T>{});
  });
}

// The checks only the CUDA kernels need (sizes they were built for).
inline void check_cuda_limits(const char* op, const GatedDeltaDims& d) {
  FK_CHECK(d.dk <= kGatedDeltaMaxHeadK, op, ": the CUDA baseline takes key heads of at most ", kGatedDeltaMaxHeadK,
           " elements, got K = ", d.dk);
  FK_CHECK(d.seqs * d.hv < (int64_t{1} << 31) && d.slots < (int64_t{1} << 31), op,
           ": too many sequences x value heads or slots for one launch (", d.seqs, " x ", d.hv, ", ", d.slots,
           " slots)");
}

}  // namespace fk::ops::gdn
