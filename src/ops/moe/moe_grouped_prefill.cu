// The grouped prefill path of fused_experts (moe_grouped_prefill.h). Launches after the
// grouping, all sized on the host from T, k, E, H, I (capturable):
//   1. slot_rows = -1; gather: y[p] = hidden[token of slot sorted_ids[p]], slot_rows[slot] = p
//   2. grouped GEMM: intermediate[p, :2I] = y[p] @ w13[e]^T            (gate | up)
//   3. in place: intermediate[p, :I] = silu(gate) * up, rounded to 16 bits (row stride 2I)
//   or, for 1-3 where the fused kernel applies (moe_gate_up.h; I a multiple of 128, up to
//   kFusedGateUpMaxInter): slot_rows = -1; one GEMM gathering its rows from hidden,
//        intermediate[p, :I] = silu(x[p] @ w13[e][:I]^T) * (x[p] @ w13[e][I:]^T)  (row stride I)
//   4. grouped GEMM: y[p] = intermediate[p, :I] @ w2[e]^T
//   5. out[t] = sum_j topk_weights[t, j] * y[slot_rows[t * k + j]]      (fp32, j in order)
// Rows past the padded total and sentinel rows exit at once; the grids cover the most rows
// any routing can need.
#include "ops/moe/moe_grouped_prefill.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "ops/activation/act_kernels.cuh"
#include "ops/common/variant_flag.h"
#include "ops/moe/moe_align_cuda.h"
#include "ops/moe/moe_gate_up.h"
#include "ops/moe/moe_gemm_layout.h"
#include "ops/moe/moe_grouped_gemm.h"
#include "ops/moe/moe_unpermute_cuda.h"

namespace fk::ops::moe_grouped {
namespace {

constexpr int kBlockRows = 128;  // the grouping's block size
static_assert(kBlockRows == kGateUpBlockRows, "the fused gate_up kernel takes the grouping's blocks as its tiles");

// The fused gate_up kernel (moe_gate_up.h) runs for experts up to this wide. It wins on
// narrow experts, where the gather and silu passes it saves are a large part of the op
// (H100, Qwen3-30B-A3B's I = 768 at 8192 tokens: 1,475-1,540 -> 1,250-1,300 us; OLMoE's
// 1024: 930 -> 825-845 us), and loses 1-2% on Mixtral's 14336, where its mainloop reads
// 1.7x the DRAM bytes of CUTLASS's gate_up GEMM (4.3 against 2.5 GB):
// bench/results/h100/fused_experts_gate_up_silu.json.
constexpr int64_t kFusedGateUpMaxInter = 4096;
constexpr int kThreads = 128;

// One warp per sorted position p (kGatherRowsPerBlock a block): copies the slot's hidden
// row, 16 bytes per lane and step with every step's load issued before the stores, and
// records where the slot went. At 8192 tokens x top-8 it writes 268 MB in 161 us a layer
// (a CTA of 128 threads per row: 163 us): the kernel is bound by DRAM writes, so the way to
// a faster grouped prefill is not to write the gathered rows at all.
constexpr int kGatherRowsPerBlock = 8;
constexpr int kGatherUnroll = 8;  // 16-byte steps per lane in flight: H = 2048 bf16 in one round

template <class Act>
__global__ void __launch_bounds__(kGatherRowsPerBlock * 32)
    gather_rows_kernel(Act* rows, const Act* hidden, int64_t ld_hidden, const int32_t* sorted_ids,
                       const int32_t* total, int32_t* slot_rows, int num_slots, int top_k, int H) {
  const int lane = threadIdx.x & 31;
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kGatherRowsPerBlock + (threadIdx.x >> 5);
  if (p >= *total) return;
  const int s = sorted_ids[p];
  if (s >= num_slots) return;
  if (lane == 0) slot_rows[s] = static_cast<int32_t>(p);
  const uint4* src = reinterpret_cast<const uint4*>(hidden + static_cast<int64_t>(s / top_k) * ld_hidden);
  uint4* dst = reinterpret_cast<uint4*>(rows + p * H);
  const int chunks = H / 8;  // H is a multiple of 8 (16-byte rows)
  for (int c0 = 0; c0 < chunks; c0 += 32 * kGatherUnroll) {
    uint4 v[kGatherUnroll];
#pragma unroll
    for (int u = 0; u < kGatherUnroll; ++u) {
      const int c = c0 + u * 32 + lane;
      if (c < chunks) v[u] = __ldg(src + c);
    }
#pragma unroll
    for (int u = 0; u < kGatherUnroll; ++u) {
      const int c = c0 + u * 32 + lane;
      if (c < chunks) dst[c] = v[u];
    }
  }
}

// intermediate[p, i] = silu(intermediate[p, i]) * intermediate[p, I + i] for i < I: each
// thread reads and writes only its own 8 columns, so the update in place is safe.
template <class Act>
__global__ void __launch_bounds__(kThreads) silu_mul_rows_kernel(Act* inter, const int32_t* sorted_ids,
                                                                 const int32_t* total, int num_slots, int I) {
  const int p = blockIdx.x;
  if (p >= *total || sorted_ids[p] >= num_slots) return;
  Act* row = inter + static_cast<int64_t>(p) * 2 * I;
  const act_cuda::SiluAndMulOp</*kFast=*/true> silu_and_mul;
  for (int i = threadIdx.x * 8; i < I; i += kThreads * 8) {
    const cuda::Vec16<Act> g = cuda::load16(row + i), u = cuda::load16(row + I + i);
    cuda::Vec16<Act> r;
#pragma unroll
    for (int q = 0; q < 8; ++q)
      r.v[q] = cuda::from_float<Act>(silu_and_mul(cuda::to_float(g.v[q]), cuda::to_float(u.v[q])));
    cuda::store16(row + i, r);
  }
}

}  // namespace

bool use_grouped_prefill(const FusedExpertsShape& sh) {
  static const VariantFlag no_grouped("fused_experts", "no_grouped_gemm");
  return !no_grouped.on() && !sh.fp8 && moe_gemm::choose_block_rows(sh.T * sh.k, sh.E) == kBlockRows;
}

template <class Act>
void run_grouped_prefill(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws,
                         cudaStream_t s) {
  const int64_t N = sh.T * sh.k;
  const int64_t sorted_len = moe_align_max_padded(N, sh.E, kBlockRows);
  const int64_t blocks = (sorted_len + kBlockRows - 1) / kBlockRows;
  moe_cuda::launch_align(static_cast<const int32_t*>(a.topk_ids.data), N, static_cast<int>(sh.E), kBlockRows,
                         {ws.sorted_ids, sorted_len, ws.expert_ids, blocks, ws.total, ws.offsets, ws.chunk_counts}, s);
  FK_CHECK(sorted_len <= 0x7fffffff, a.kName, ": ", sorted_len, " sorted rows exceed the grid limit");

  FK_CUDA_CHECK(cudaMemsetAsync(ws.slot_rows, 0xff, 4 * N, s));  // -1: a slot in no group adds nothing
  const auto grid = static_cast<unsigned>(sorted_len);
  // The fused gate_up: rows gathered in its loads, silu in its epilogue, the intermediate
  // written once, I columns wide. The variant unfused_gate_up keeps the three passes.
  static const VariantFlag unfused("fused_experts", "unfused_gate_up");
  const bool fused = !unfused.on() && sh.I <= kFusedGateUpMaxInter && gate_up_silu_supported(sh.H, sh.I);
  if (!fused) {
    const auto gather_grid = static_cast<unsigned>((sorted_len + kGatherRowsPerBlock - 1) / kGatherRowsPerBlock);
    gather_rows_kernel<Act><<<gather_grid, kGatherRowsPerBlock * 32, 0, s>>>(
        static_cast<Act*>(ws.y), static_cast<const Act*>(a.hidden.data), a.hidden.strides[0], ws.sorted_ids,
        ws.total, ws.slot_rows, static_cast<int>(N), static_cast<int>(sh.k), static_cast<int>(sh.H));
    FK_CUDA_CHECK_LAUNCH();
  }

  GroupedGemm g{};
  g.num_experts = static_cast<int32_t>(sh.E);
  g.offsets = ws.offsets;
  g.sorted_ids = ws.sorted_ids;
  g.num_slots = static_cast<int32_t>(N);
  g.block_size = kBlockRows;
  g.scratch = ws.grouped_scratch;
  g.scratch_bytes = fused_experts_grouped_scratch_bytes(sh.E);

  if (fused) {
    GateUpSilu gu{};
    gu.hidden = a.hidden.data;
    gu.ld_hidden = a.hidden.strides[0];
    gu.sorted_ids = ws.sorted_ids;
    gu.num_slots = static_cast<int32_t>(N);
    gu.top_k = static_cast<int32_t>(sh.k);
    gu.slot_rows = ws.slot_rows;
    gu.w13 = a.w13.data;
    gu.out = ws.intermediate;
    gu.expert_ids = ws.expert_ids;
    gu.offsets = ws.offsets;
    gu.total = ws.total;
    gu.max_blocks = blocks;
    gu.E = sh.E;
    gu.H = sh.H;
    gu.I = sh.I;
    run_gate_up_silu<Act>(gu, s);
  } else {
    g.a = ws.y;  // gate | up
    g.lda = sh.H;
    g.w = a.w13.data;
    g.d = ws.intermediate;
    g.ldd = 2 * sh.I;
    g.N = 2 * sh.I;
    g.K = sh.H;
    run_grouped_gemm<Act>(g, s);

    silu_mul_rows_kernel<Act><<<grid, kThreads, 0, s>>>(static_cast<Act*>(ws.intermediate), ws.sorted_ids, ws.total,
                                                        static_cast<int>(N), static_cast<int>(sh.I));
    FK_CUDA_CHECK_LAUNCH();
  }

  g.a = ws.intermediate;  // down
  g.lda = fused ? sh.I : 2 * sh.I;
  g.w = a.w2.data;
  g.d = ws.y;
  g.ldd = sh.H;
  g.N = sh.H;
  g.K = sh.I;
  run_grouped_gemm<Act>(g, s);

  moe_cuda::UnpermuteParams u{};
  u.out = a.out.data;
  u.ld_out = a.out.strides[0];
  u.permuted = ws.y;
  u.ld_perm = sh.H;
  u.inv_perm = ws.slot_rows;
  u.weights = static_cast<const float*>(a.topk_weights.data);
  u.k = static_cast<int>(sh.k);
  u.H = static_cast<int>(sh.H);
  u.P = static_cast<int>(sorted_len);
  moe_cuda::launch_unpermute(u, sh.T, a.out.dtype, /*vectorised=*/true, s);
}

template void run_grouped_prefill<__nv_bfloat16>(const FusedExpertsArgs&, const FusedExpertsShape&,
                                                 const MoeWorkspace&, cudaStream_t);
template void run_grouped_prefill<__half>(const FusedExpertsArgs&, const FusedExpertsShape&, const MoeWorkspace&,
                                          cudaStream_t);

}  // namespace fk::ops::moe_grouped
