// chunk_gated_delta_rule CUDA baseline: the chunked algorithm (gated_delta_reference.h
// writes the same steps out on the host), one block per (sequence, value head, slice of
// 32 value columns), walking the sequence's chunks of 64 tokens in order with the [K, 32]
// state slice in shared memory. Per chunk, all in f32 shared memory:
//   load k, q (normalised, q scaled), v, beta and g; gc = cumulative sum of g
//   L[i][j] = beta_i k_i.k_j exp(gc_i - gc_j) (j < i), P[i][j] = q_i.k_j exp(gc_i - gc_j) (j <= i)
//   T = (I + L)^-1 by forward substitution (row by row)
//   u = T (beta v), w = T (beta exp(gc) k)
//   v_new = u - w S;  o = exp(gc) (q S) + P v_new;  S = exp(gc_last) S + (k exp(gc_last - gc))^T v_new
// Every exponent is a difference gc_i - gc_j with j <= i or a cumulative sum itself, <= 0
// for the decays models produce (g <= 0), so nothing overflows; a strong decay underflows
// to 0, its limit. The state slice is read from its slot once and written once.
//
// Correctness first: the products are plain FMA loops over shared memory (no tensor cores),
// the K-side work of a chunk (L, T, w) is recomputed by each of the V / 32 blocks of a head,
// and one block walks a whole sequence (a long sequence is as slow as its chunk count, with
// N * Hv * V / 32 blocks in flight: 128 for one sequence of Qwen3-Next's 32 heads). What is
// left: tensor-core (wgmma/mma) products in bf16 with f32 accumulation, the K-side of all
// chunks computed in parallel before the sequential state pass (flash-linear-attention's
// split into a WY kernel, a state kernel and an output kernel), and a state pass over
// 64-column slices.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/op_registry.h"
#include "ops/ssm/gated_delta_cuda.cuh"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kC = static_cast<int>(kGatedDeltaChunk);
constexpr int kBV = 32;  // value columns a block
static_assert(kThreads == 4 * kC, "the triangular solve gives four threads to each of a chunk's rows");

// Shared memory layout (floats). Rows of k, q and w are padded by one float (pitch K + 1)
// so that threads reading row j of consecutive j hit distinct banks.
struct Smem {
  int pk;  // pitch of the K-wide rows
  int ks, qs, ws, tm, pm, vs, us, ss, gc, eg, dl, bt, row, total;
};
__host__ __device__ inline Smem smem_layout(int dk) {
  Smem m{};
  m.pk = dk + 1;
  int o = 0;
  m.ks = o, o += kC * m.pk;
  m.qs = o, o += kC * m.pk;
  m.ws = o, o += kC * m.pk;
  m.tm = o, o += kC * (kC + 1);
  m.pm = o, o += kC * (kC + 1);
  m.vs = o, o += kC * kBV;
  m.us = o, o += kC * kBV;
  m.ss = o, o += dk * kBV;
  m.gc = o, o += kC;
  m.eg = o, o += kC;
  m.dl = o, o += kC;
  m.bt = o, o += kC;
  m.row = o, o += kC;
  m.total = o;
  return m;
}

template <class T, class TB>
__global__ void __launch_bounds__(kThreads) gdn_chunk_kernel(const gdn::Params<T, TB> p) {
  extern __shared__ float sm[];
  const int dk = p.dk;
  const Smem L = smem_layout(dk);
  const int pk = L.pk, pt = kC + 1;
  float *Ks = sm + L.ks, *Qs = sm + L.qs, *Ws = sm + L.ws, *Tm = sm + L.tm, *Pm = sm + L.pm;
  float *Vs = sm + L.vs, *Us = sm + L.us, *Ss = sm + L.ss;
  float *gc = sm + L.gc, *eg = sm + L.eg, *dl = sm + L.dl, *bt = sm + L.bt, *row = sm + L.row;

  const int n = static_cast<int>(blockIdx.x) / p.hv, h = static_cast<int>(blockIdx.x) % p.hv;
  const int hk = h / (p.hv / p.hk);
  const int v0 = static_cast<int>(blockIdx.y) * kBV;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  int64_t read_slot, write_slot;
  gdn::sequence_slots(p, n, read_slot, write_slot);
  const int64_t head_off = static_cast<int64_t>(h) * dk * p.dv;

  for (int idx = tid; idx < dk * kBV; idx += kThreads) {
    const int x = idx / kBV, y = idx % kBV;
    float s = 0.f;
    if (read_slot >= 0 && v0 + y < p.dv) s = p.state[read_slot * p.slot_stride + head_off + static_cast<int64_t>(x) * p.dv + v0 + y];
    Ss[idx] = s;
  }

  const int64_t bos = p.cu_seqlens[n], eos = p.cu_seqlens[n + 1];
  for (int64_t c0 = bos; c0 < eos; c0 += kC) {
    const int c = static_cast<int>(eos - c0 < kC ? eos - c0 : kC);
    __syncthreads();  // the previous chunk is done with every buffer
    // Load the chunk; rows past its end are zeros (beta 0 and g 0 make them inert).
    for (int idx = tid; idx < kC * dk; idx += kThreads) {
      const int i = idx / dk, x = idx % dk;
      float kv = 0.f, qv = 0.f;
      if (i < c) {
        kv = gdn::ld(p.k, (c0 + i) * p.k_stride + static_cast<int64_t>(hk) * dk + x);
        qv = gdn::ld(p.q, (c0 + i) * p.q_stride + static_cast<int64_t>(hk) * dk + x);
      }
      Ks[i * pk + x] = kv;
      Qs[i * pk + x] = qv;
    }
    for (int idx = tid; idx < kC * kBV; idx += kThreads) {
      const int i = idx / kBV, y = idx % kBV;
      Vs[idx] = i < c && v0 + y < p.dv ? gdn::ld(p.v, (c0 + i) * p.v_stride + static_cast<int64_t>(h) * p.dv + v0 + y) : 0.f;
    }
    if (tid < kC) {
      const int64_t gi = (c0 + tid) * p.hv + h;
      bt[tid] = tid < c ? gdn::ld(p.beta, gi) : 0.f;
      gc[tid] = tid < c ? p.g[gi] : 0.f;
    }
    __syncthreads();
    // Cumulative decay (one thread: 64 adds), and q, k rows normalised (a warp a row).
    if (tid == 0)
      for (int i = 1; i < kC; ++i) gc[i] += gc[i - 1];
    for (int i = warp; i < kC; i += kThreads / 32) {
      float sq = 0.f, sk = 0.f;
      for (int x = lane; x < dk; x += 32) sq += Qs[i * pk + x] * Qs[i * pk + x], sk += Ks[i * pk + x] * Ks[i * pk + x];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o), sk += __shfl_xor_sync(0xffffffffu, sk, o);
      const float qn = p.scale * (p.l2norm ? 1.f / sqrtf(sq + 1e-6f) : 1.f);
      const float kn = p.l2norm ? 1.f / sqrtf(sk + 1e-6f) : 1.f;
      for (int x = lane; x < dk; x += 32) Qs[i * pk + x] *= qn, Ks[i * pk + x] *= kn;
    }
    __syncthreads();
    const float glast = gc[c - 1];
    if (tid < kC) eg[tid] = expf(gc[tid]), dl[tid] = expf(glast - gc[tid]);
    // L (into Tm, strictly lower) and P (lower with the diagonal).
    for (int idx = tid; idx < kC * kC; idx += kThreads) {
      const int i = idx / kC, j = idx % kC;
      float l = 0.f, pv = 0.f;
      if (j <= i) {
        float kk = 0.f, qk = 0.f;
        for (int x = 0; x < dk; ++x) {
          const float kj = Ks[j * pk + x];
          kk += Ks[i * pk + x] * kj;
          qk += Qs[i * pk + x] * kj;
        }
        const float decay = expf(gc[i] - gc[j]);
        l = j < i ? bt[i] * kk * decay : 0.f;
        pv = qk * decay;
      }
      Tm[i * pt + j] = l;
      Pm[i * pt + j] = pv;
    }
    __syncthreads();
    // T = (I + L)^-1, row by row: T[i][j] = -(L[i][j] + sum_{j<m<i} L[i][m] T[m][j]) for j < i.
    // Four threads (adjacent lanes) per j split the sum, which shortens the dependent chain of
    // each row fourfold; rows above i are final, row i still holds L until it is rewritten.
    for (int i = 1; i < c; ++i) {
      const int j = tid >> 2, part = tid & 3;
      float sum = 0.f;
      if (j < i)
        for (int m = j + 1 + part; m < i; m += 4) sum += Tm[i * pt + m] * Tm[m * pt + j];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      if (j < i && part == 0) row[j] = -(Tm[i * pt + j] + sum);
      __syncthreads();
      if (tid < i) Tm[i * pt + tid] = row[tid];
      __syncthreads();
    }
    if (tid < kC) Tm[tid * pt + tid] = 1.f;
    __syncthreads();
    // u = T (beta v), w = T (beta exp(gc) k).
    for (int idx = tid; idx < kC * kBV; idx += kThreads) {
      const int i = idx / kBV, y = idx % kBV;
      float sum = 0.f;
      for (int j = 0; j <= i; ++j) sum += Tm[i * pt + j] * bt[j] * Vs[j * kBV + y];
      Us[idx] = sum;
    }
    for (int idx = tid; idx < kC * dk; idx += kThreads) {
      const int i = idx / dk, x = idx % dk;
      float sum = 0.f;
      for (int j = 0; j <= i; ++j) sum += Tm[i * pt + j] * bt[j] * eg[j] * Ks[j * pk + x];
      Ws[i * pk + x] = sum;
    }
    __syncthreads();
    // v_new = u - w S.
    for (int idx = tid; idx < kC * kBV; idx += kThreads) {
      const int i = idx / kBV, y = idx % kBV;
      float sum = 0.f;
      for (int x = 0; x < dk; ++x) sum += Ws[i * pk + x] * Ss[x * kBV + y];
      Us[idx] -= sum;
    }
    __syncthreads();
    // o = exp(gc) (q S) + P v_new.
    for (int idx = tid; idx < kC * kBV; idx += kThreads) {
      const int i = idx / kBV, y = idx % kBV;
      if (i >= c || v0 + y >= p.dv) continue;
      float inter = 0.f, intra = 0.f;
      for (int x = 0; x < dk; ++x) inter += Qs[i * pk + x] * Ss[x * kBV + y];
      for (int j = 0; j <= i; ++j) intra += Pm[i * pt + j] * Us[j * kBV + y];
      p.o[((c0 + i) * p.hv + h) * p.dv + v0 + y] = cuda::from_float<T>(eg[i] * inter + intra);
    }
    __syncthreads();  // S is read above and updated below
    // S = exp(gc_last) S + (k exp(gc_last - gc))^T v_new.
    const float elast = expf(glast);
    for (int idx = tid; idx < dk * kBV; idx += kThreads) {
      const int x = idx / kBV, y = idx % kBV;
      float sum = elast * Ss[idx];
      for (int j = 0; j < c; ++j) sum += Ks[j * pk + x] * dl[j] * Us[j * kBV + y];
      Ss[idx] = sum;
    }
  }
  __syncthreads();

  if (write_slot < 0) return;
  for (int idx = tid; idx < dk * kBV; idx += kThreads) {
    const int x = idx / kBV, y = idx % kBV;
    if (v0 + y < p.dv) p.state[write_slot * p.slot_stride + head_off + static_cast<int64_t>(x) * p.dv + v0 + y] = Ss[idx];
  }
}

template <class T, class TB>
void launch(const gdn::Params<T, TB>& p, cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(smem_layout(p.dk).total) * sizeof(float);
  // Above 48 KiB of dynamic shared memory needs an opt-in; set on every launch (it is per
  // device, and cheap), as the paged prefill attention does.
  FK_CUDA_CHECK(cudaFuncSetAttribute(gdn_chunk_kernel<T, TB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>(p.seqs) * static_cast<unsigned>(p.hv),
                  static_cast<unsigned>(cuda::ceil_div(p.dv, kBV)));
  gdn_chunk_kernel<T, TB><<<grid, kThreads, bytes, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status chunk_gated_delta_rule_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ChunkGatedDeltaRuleArgs*>(args);
    const char* op = ChunkGatedDeltaRuleArgs::kName;
    const GatedDeltaDims d = validate_gated_delta_rule(op, a, DeviceType::cuda);
    gdn::check_cuda_limits(op, d);
    if (d.seqs == 0) return;
    gdn::dispatch(op, a, d, [&](const auto& p) { launch(p, static_cast<cudaStream_t>(stream)); });
  });
}

FK_REGISTER_IMPL("chunk_gated_delta_rule", cuda, chunk_gated_delta_rule_cuda);

}  // namespace
}  // namespace fk::ops
