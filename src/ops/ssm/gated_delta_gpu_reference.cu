// The gated delta rule's GPU reference (OpRegistry::gpu_reference, both ops), for workloads
// too large for the CPU oracle: the token loop of gated_delta_reference.cpp in double on the
// device. One block per (sequence, value head); thread j owns value column j of the state
// (several columns when V exceeds the block) and updates it in place in the oracle's f64
// copy of the pool (its slot is the sequence's own, so no other block touches it). q and k
// of each token are normalised in double in shared memory by one thread, in the CPU
// reference's order. Plain code, independent of the baselines: a 32k-token sequence takes
// a few hundred milliseconds.
#include <cuda_runtime.h>

#include "fk/op_registry.h"
#include "fk/ops/gated_delta.h"
#include "ops/common/gpu_reference.cuh"
#include "ops/ssm/gated_delta_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 128;

struct RefParams {
  double* o;      // [T, Hv, V] f64
  double* state;  // [slots, Hv, K, V] f64, slots slot_stride apart, updated in place
  const void *q, *k, *v, *beta;
  DType dtype, beta_dtype;
  const float* g;
  const int32_t *cu_seqlens, *state_indices, *has_initial;  // has_initial null: all from slots
  int64_t q_stride, k_stride, v_stride, slot_stride;
  int hk, hv, dk, dv, slots, l2norm;
  double scale;
};

__global__ void __launch_bounds__(kThreads) gdn_reference_kernel(const RefParams p) {
  extern __shared__ double qk[];  // q [K], then k [K]
  double* qs = qk;
  double* ks = qk + p.dk;
  const int n = static_cast<int>(blockIdx.x) / p.hv, h = static_cast<int>(blockIdx.x) % p.hv;
  const int hk = h / (p.hv / p.hk);
  const int64_t slot = p.state_indices[n];
  if (slot < 0 || slot >= p.slots) return;  // the op's contract; validated on the host side
  double* s = p.state + slot * p.slot_stride + static_cast<int64_t>(h) * p.dk * p.dv;  // [K, V] of this head
  const bool from_slot = p.has_initial == nullptr || p.has_initial[n] != 0;
  if (!from_slot)
    for (int64_t i = threadIdx.x; i < static_cast<int64_t>(p.dk) * p.dv; i += blockDim.x) s[i] = 0;
  __syncthreads();

  const int64_t bos = p.cu_seqlens[n], eos = p.cu_seqlens[n + 1];
  for (int64_t t = bos; t < eos; ++t) {
    for (int i = threadIdx.x; i < p.dk; i += blockDim.x) {
      qs[i] = gpu_ref::load_double(p.q, p.dtype, t * p.q_stride + static_cast<int64_t>(hk) * p.dk + i);
      ks[i] = gpu_ref::load_double(p.k, p.dtype, t * p.k_stride + static_cast<int64_t>(hk) * p.dk + i);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double qq = 0, kk = 0;
      for (int i = 0; i < p.dk; ++i) qq += qs[i] * qs[i], kk += ks[i] * ks[i];
      const double qn = p.l2norm ? 1.0 / sqrt(qq + 1e-6) : 1.0, kn = p.l2norm ? 1.0 / sqrt(kk + 1e-6) : 1.0;
      for (int i = 0; i < p.dk; ++i) qs[i] *= qn * p.scale, ks[i] *= kn;
    }
    __syncthreads();
    const double decay = exp(static_cast<double>(p.g[t * p.hv + h]));
    const double beta = gpu_ref::load_double(p.beta, p.beta_dtype, t * p.hv + h);
    for (int j = threadIdx.x; j < p.dv; j += blockDim.x) {
      double kv = 0;
      for (int i = 0; i < p.dk; ++i) {
        s[static_cast<int64_t>(i) * p.dv + j] *= decay;
        kv += s[static_cast<int64_t>(i) * p.dv + j] * ks[i];
      }
      const double delta =
          beta * (gpu_ref::load_double(p.v, p.dtype, t * p.v_stride + static_cast<int64_t>(h) * p.dv + j) - kv);
      double o = 0;
      for (int i = 0; i < p.dk; ++i) {
        s[static_cast<int64_t>(i) * p.dv + j] += ks[i] * delta;
        o += s[static_cast<int64_t>(i) * p.dv + j] * qs[i];
      }
      p.o[(t * p.hv + h) * p.dv + j] = o;
    }
    __syncthreads();  // qs and ks are rewritten for the next token
  }
}

template <class Args>
fk_status gated_delta_gpu_reference(const void* args, void* stream_ptr) {
  return op_guard([&] {
    const GatedDeltaRuleArgs& a = *static_cast<const Args*>(args);
    constexpr const char* op = Args::kName;
    // The op's checks on the CUDA backend expect o in the dtype of q and an f32 pool: run them
    // on a copy that says so, and check the reference's f64 outputs separately.
    GatedDeltaRuleArgs checked = a;
    checked.o.dtype = a.q.dtype;
    checked.state.dtype = DType::f32;
    const GatedDeltaDims d = validate_gated_delta_rule(op, checked, DeviceType::cuda);
    expect_dtype(op, "o", a.o, DType::f64);
    expect_dtype(op, "state", a.state, DType::f64);
    if (d.seqs == 0) return;
    gpu_ref::expect_grid_x(op, d.seqs * d.hv);
    RefParams p{};
    p.o = a.o.ptr<double>(), p.state = a.state.ptr<double>();
    p.q = a.q.data, p.k = a.k.data, p.v = a.v.data, p.beta = a.beta.data;
    p.dtype = a.q.dtype, p.beta_dtype = a.beta.dtype;
    p.g = a.g.ptr<float>();
    p.cu_seqlens = a.cu_seqlens.ptr<int32_t>(), p.state_indices = a.state_indices.ptr<int32_t>();
    p.has_initial = arg_present(a.has_initial_state) ? a.has_initial_state.ptr<int32_t>() : nullptr;
    p.q_stride = a.q.strides[0], p.k_stride = a.k.strides[0], p.v_stride = a.v.strides[0];
    p.slot_stride = a.state.strides[0];
    p.hk = static_cast<int>(d.hk), p.hv = static_cast<int>(d.hv), p.dk = static_cast<int>(d.dk);
    p.dv = static_cast<int>(d.dv), p.slots = static_cast<int>(d.slots), p.l2norm = a.use_qk_l2norm_in_kernel;
    p.scale = a.scale > 0 ? static_cast<double>(a.scale) : 1.0 / std::sqrt(static_cast<double>(d.dk));
    const size_t smem = 2 * static_cast<size_t>(d.dk) * sizeof(double);
    FK_CHECK(smem <= 48 * 1024, op, " GPU reference: key heads of ", d.dk, " elements need too much shared memory");
    auto stream = static_cast<cudaStream_t>(stream_ptr);
    gdn_reference_kernel<<<static_cast<unsigned>(d.seqs * d.hv), kThreads, smem, stream>>>(p);
    FK_CUDA_CHECK_LAUNCH();
    FK_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
}

FK_REGISTER_GPU_REFERENCE("chunk_gated_delta_rule", gated_delta_gpu_reference<ChunkGatedDeltaRuleArgs>);
FK_REGISTER_GPU_REFERENCE("fused_recurrent_gated_delta_rule",
                          gated_delta_gpu_reference<FusedRecurrentGatedDeltaRuleArgs>);

}  // namespace
}  // namespace fk::ops
