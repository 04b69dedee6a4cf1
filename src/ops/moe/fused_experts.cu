// fused_experts CUDA baseline: four launches, all sized from T, k, E, H, I on the host
// (no device-to-host read, no per-expert host loop: capturable in a CUDA graph).
//   1. moe_align_block_size into the workspace, block size = the GEMM's rows per block
//   2. grouped GEMM gate_up with silu(gate) * up in its epilogue -> intermediate (16-bit)
//   3. grouped GEMM down, times the routing weight -> y[slot, :] (16-bit)
//   4. out[t] = sum_j y[t * k + j] in fp32, fixed order (deterministic, no atomics)
// Blocks past the padded slot count exit at once; the grid covers the most blocks any
// routing can need. Decode (few slots per expert) uses 16..64-row blocks so that each
// expert's weights are streamed once by many CTAs. With 16-bit weights, up to 4 tokens take
// the GEMV path instead (moe_decode_gemv.h) and prefill the grouped TMA + wgmma path
// (moe_grouped_prefill.h); fp8 weights always run here.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/moe/fused_experts_cuda.h"
#include "ops/moe/moe_align_cuda.h"
#include "ops/moe/moe_decode_gemv.h"
#include "ops/moe/moe_gemm.cuh"
#include "ops/moe/moe_grouped_prefill.h"
#include "ops/moe/moe_validate.h"
#include "ops/moe/moe_workspace.h"

namespace fk::ops {
namespace {

using moe_gemm::GemmParams;
using moe_gemm::Kind;
using moe_gemm::Tile;

struct Cfg16 {
  static constexpr Tile kTile = moe_gemm::kTile16;
};
struct Cfg32 {
  static constexpr Tile kTile = moe_gemm::kTile32;
};
struct Cfg64 {
  static constexpr Tile kTile = moe_gemm::kTile64;
};
struct Cfg128 {
  static constexpr Tile kTile = moe_gemm::kTile128;
};

// out[t, h..h+7] = sum_j y[t * k + j, h..h+7] over the routed slots (fp32, j in order).
template <class Act>
__global__ void __launch_bounds__(128) combine_kernel(Act* out, const Act* y, const int32_t* ids, int k, int H, int E) {
  const int t = blockIdx.x;
  const int h = (blockIdx.y * blockDim.x + threadIdx.x) * 8;
  if (h >= H) return;
  float acc[8] = {};
  for (int j = 0; j < k; ++j) {
    const int e = ids[static_cast<int64_t>(t) * k + j];
    if (e < 0 || e >= E) continue;
    const cuda::Vec16<Act> v = cuda::load16(y + (static_cast<int64_t>(t) * k + j) * H + h);
#pragma unroll
    for (int q = 0; q < 8; ++q) acc[q] += cuda::to_float(v.v[q]);
  }
  cuda::Vec16<Act> r;
#pragma unroll
  for (int q = 0; q < 8; ++q) r.v[q] = cuda::from_float<Act>(acc[q]);
  cuda::store16(out + static_cast<int64_t>(t) * H + h, r);
}

template <class Cfg, Kind kKind, class Act, bool kFp8>
void launch_gemm(const GemmParams& p, int64_t n_size, int64_t blocks, cudaStream_t s) {
  constexpr Tile t = Cfg::kTile;
  constexpr int smem = t.smem_bytes(kFp8 ? 1 : 2);
  auto kernel = moe_gemm::moe_gemm_kernel<Cfg, kKind, Act, kFp8>;
  static const bool attribute_set = [&] {  // once per kernel, before its first launch
    FK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  }();
  (void)attribute_set;
  const dim3 grid(static_cast<unsigned>((n_size + t.out_cols(kKind) - 1) / t.out_cols(kKind)),
                  static_cast<unsigned>(blocks));
  kernel<<<grid, t.threads(), smem, s>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

template <class Cfg, class Act, bool kFp8>
void run_experts(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws, cudaStream_t s) {
  constexpr Tile t = Cfg::kTile;
  const int64_t N = sh.T * sh.k;
  const int64_t sorted_len = moe_align_max_padded(N, sh.E, t.bm);
  const int64_t blocks = (sorted_len + t.bm - 1) / t.bm;
  FK_CHECK(blocks <= 65535, a.kName, ": ", blocks, " GEMM blocks exceed the grid limit");
  moe_cuda::launch_align(static_cast<const int32_t*>(a.topk_ids.data), N, static_cast<int>(sh.E), t.bm,
                         {ws.sorted_ids, sorted_len, ws.expert_ids, blocks, ws.total, ws.offsets, ws.chunk_counts}, s);
  GemmParams p{};
  p.sorted_ids = ws.sorted_ids;
  p.expert_ids = ws.expert_ids;
  p.num_post_padded = ws.total;
  p.topk_weights = static_cast<const float*>(a.topk_weights.data);
  p.num_slots = static_cast<int32_t>(N);
  p.top_k = static_cast<int32_t>(sh.k);

  // gate_up: hidden rows gathered by token -> intermediate
  p.a = a.hidden.data;
  p.lda = a.hidden.strides[0];
  p.w = a.w13.data;
  p.w_scale = kFp8 ? static_cast<const float*>(a.w13_scale.data) : nullptr;
  p.w_rows = 2 * sh.I;
  p.K = sh.H;
  p.n_size = sh.I;
  p.c = ws.intermediate;
  launch_gemm<Cfg, Kind::gate_up, Act, kFp8>(p, sh.I, blocks, s);

  // down: intermediate rows (sorted positions) -> y, weighted
  p.a = ws.intermediate;
  p.lda = sh.I;
  p.w = a.w2.data;
  p.w_scale = kFp8 ? static_cast<const float*>(a.w2_scale.data) : nullptr;
  p.w_rows = sh.H;
  p.K = sh.I;
  p.n_size = sh.H;
  p.c = ws.y;
  launch_gemm<Cfg, Kind::down, Act, kFp8>(p, sh.H, blocks, s);

  const dim3 grid(static_cast<unsigned>(sh.T), static_cast<unsigned>((sh.H / 8 + 127) / 128));
  combine_kernel<Act><<<grid, 128, 0, s>>>(static_cast<Act*>(a.out.data), static_cast<const Act*>(ws.y),
                                            static_cast<const int32_t*>(a.topk_ids.data), static_cast<int>(sh.k),
                                            static_cast<int>(sh.H), static_cast<int>(sh.E));
  FK_CUDA_CHECK_LAUNCH();
}

template <class Act, bool kFp8>
void run_with_tile(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws, cudaStream_t s) {
  switch (moe_gemm::choose_block_rows(sh.T * sh.k, sh.E)) {
    case 16: return run_experts<Cfg16, Act, kFp8>(a, sh, ws, s);
    case 32: return run_experts<Cfg32, Act, kFp8>(a, sh, ws, s);
    case 64: return run_experts<Cfg64, Act, kFp8>(a, sh, ws, s);
    default: return run_experts<Cfg128, Act, kFp8>(a, sh, ws, s);
  }
}

}  // namespace

void moe_cuda::expect_fused_experts_supported(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const char* op) {
  const int64_t align = sh.fp8 ? 16 : 8;
  if (sh.H % align != 0 || sh.I % align != 0)
    FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline needs hidden and intermediate sizes that are multiples of ",
            align, ", got H = ", sh.H, ", I = ", sh.I);
  if (sh.E > moe_cuda::kAlignMaxExperts)
    FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline handles up to ", moe_cuda::kAlignMaxExperts, " experts");
  if (sh.T == 0) return;  // no rows: nothing is loaded, alignment does not matter
  if (!cuda::aligned16(a.hidden.data) || a.hidden.strides[0] % 8 != 0 || !cuda::aligned16(a.out.data) ||
      !cuda::aligned16(a.w13.data) || !cuda::aligned16(a.w2.data))
    FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline needs 16-byte aligned hidden, out, w13 and w2 and a hidden "
            "row stride that is a multiple of 8");
}

void moe_cuda::launch_fused_experts(const FusedExpertsArgs& a, const FusedExpertsShape& sh, void* stream) {
  if (sh.T == 0) return;
  const MoeWorkspace ws = carve_moe_workspace(a.workspace.data, sh.T, sh.k, sh.E, sh.H, sh.I);
  auto s = static_cast<cudaStream_t>(stream);
  const bool bf16 = a.hidden.dtype == DType::bf16;
  if (sh.fp8) {
    if (bf16) run_with_tile<__nv_bfloat16, true>(a, sh, ws, s);
    else run_with_tile<__half, true>(a, sh, ws, s);
  } else if (moe_decode::use_decode_gemv(sh)) {
    if (bf16) moe_decode::run_decode_gemv<__nv_bfloat16>(a, sh, ws, s);
    else moe_decode::run_decode_gemv<__half>(a, sh, ws, s);
  } else if (moe_grouped::use_grouped_prefill(sh)) {
    if (bf16) moe_grouped::run_grouped_prefill<__nv_bfloat16>(a, sh, ws, s);
    else moe_grouped::run_grouped_prefill<__half>(a, sh, ws, s);
  } else {
    if (bf16) run_with_tile<__nv_bfloat16, false>(a, sh, ws, s);
    else run_with_tile<__half, false>(a, sh, ws, s);
  }
}

namespace {

fk_status fused_experts_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedExpertsArgs*>(args);
    const FusedExpertsShape sh = validate_fused_experts(a, DeviceType::cuda);
    moe_cuda::expect_fused_experts_supported(a, sh, a.kName);
    const cuda::PdlOffScope pdl(pdl_off_for(a.kName));
    moe_cuda::launch_fused_experts(a, sh, stream);
  });
}

FK_REGISTER_IMPL("fused_experts", cuda, fused_experts_cuda);

}  // namespace
}  // namespace fk::ops
