// run_gate_up_silu (moe_gate_up.h) on sm_90a: a persistent, warp-specialized wgmma GEMM
// whose tile is one grouping block of 128 rows x 128 intermediate columns, with both the
// gate and the up weight rows of those columns in its B tile.
//
// Shapes (16-bit elements; a 4-stage ring of A and B tiles, 48 KB a stage):
//   A tile  [128 rows x 64 k]        cp.async from hidden, row r from the token of slot
//                                    sorted_ids[128 b + r] (the producer warpgroup)
//   B tile  [2 x 128 rows x 64 k]    one TMA box (64, 128, 2, 1, 1) over w13 viewed as
//                                    (k, row in block, gate|up, block j, expert)
//   acc     [128 x 256] f32          two consumer warpgroups of 64 rows, one wgmma 64x256x16
//                                    each per 16 k; columns 0-127 gate, 128-255 up
//   out     [128 x 128]              silu(acc[:, c]) * acc[:, 128 + c], stored from registers
//
// A wgmma accumulator fragment holds, per thread, columns 8 v + 2 (lane % 4) + {0, 1} of
// its rows for v in [0, 32): value i + 64 is column + 128 of value i, so each thread has
// both factors of its outputs and the epilogue needs no exchange.
//
// Warpgroup 0 produces (its thread 0 also issues the B copies), warpgroups 1 and 2
// consume. A CTA walks tiles blockIdx.x, + gridDim.x, ... in the order of tile_coords.
// Block count from the device (*total / 128): capturable.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/arch/barrier.h>

#include <algorithm>
#include <type_traits>

#include "fk/cuda/async_copy.cuh"
#include "fk/cuda/check.h"
#include "fk/cuda/sm_count.h"
#include "fk/cuda/tensor_map.cuh"
#include "fk/status.h"
#include "ops/activation/act_kernels.cuh"
#include "ops/moe/moe_gate_up.h"

namespace fk::ops::moe_grouped {
namespace {

using namespace cute;

constexpr int kBlockRows = kGateUpBlockRows;  // the grouping's block: one expert per tile
constexpr int kCols = 128;       // intermediate columns per tile (256 weight rows: gate and up)
constexpr int kBlockK = 64;      // one 128-byte swizzle row of 16-bit elements
constexpr int kStages = 4;       // 48 KB a stage
constexpr int kThreads = 384;    // producer warpgroup + two consumer warpgroups
constexpr int kConsumerThreads = 256;

template <class Element>
struct Traits {
  using SmemAtom = GMMA::Layout_K_SW128_Atom<Element>;  // 8 rows x 64 columns, 128-byte swizzle
  using SmemLayoutA = decltype(tile_to_shape(SmemAtom{}, Shape<Int<kBlockRows>, Int<kBlockK>, Int<kStages>>{}));
  using SmemLayoutB = decltype(tile_to_shape(SmemAtom{}, Shape<Int<2 * kCols>, Int<kBlockK>, Int<kStages>>{}));
  using MmaOp = decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<2 * kCols>, Int<kBlockK>>>());
  using TiledMma = decltype(make_tiled_mma(MmaOp{}, Layout<Shape<_2, _1, _1>>{}));  // warpgroups along M
  static constexpr int kStageA = kBlockRows * kBlockK;  // elements
  static constexpr int kStageB = 2 * kCols * kBlockK;
  static constexpr uint32_t kStageBytesB = kStageB * sizeof(Element);

  struct Smem {
    alignas(1024) Element a[kStages * kStageA];  // 1024: the swizzle atom, which wgmma descriptors assume
    alignas(1024) Element b[kStages * kStageB];
    uint64_t full[kStages];   // stage loaded: B's TMA bytes and the 128 gathering threads' cp.async
    uint64_t empty[kStages];  // stage consumed: one arrival per consumer warp
  };
  static constexpr int kSmemBytes = sizeof(Smem) + 1024;  // + the manual alignment of the base
};

struct KernelParams {
  CUtensorMap w_map;
  const char* hidden;
  int64_t ld_hidden_bytes;
  const int32_t* sorted_ids;
  int32_t* slot_rows;
  int num_slots, top_k;
  int64_t h_bytes;
  void* out;
  const int32_t* expert_ids;
  const int32_t* offsets;  // [E + 1] the grouping's padded offsets
  const int32_t* total;
  int64_t I;
  int col_blocks;  // I / 128
  int k_tiles;     // ceil(H / 64): the columns past H read as zeros
};

// Tile t -> (block, j). An expert's blocks are consecutive, so its tiles are the range
// [first * C, (first + n) * C) of t (C = col_blocks, first = off[e] / 128, n its block
// count), and t / C is one of its blocks. Inside that range the tiles go in bands of
// blocks, column block by column block with the block fastest: the CTAs in flight share
// each weight tile (e, j) across the band's blocks, and the band's A rows across its j.
// An expert of up to kMaxBand blocks is one band, so its weights stream from DRAM once;
// a larger one is cut into bands of equal size (+-1): a band of one leftover block would
// stream the whole expert again for that block.
constexpr int kMaxBand = 16;

struct TileCoords {
  int block, j;
};
__device__ __forceinline__ TileCoords tile_coords(int tile, const KernelParams& p) {
  const int C = p.col_blocks;
  const int expert = p.expert_ids[tile / C];
  const int first = p.offsets[expert] / kBlockRows, n = p.offsets[expert + 1] / kBlockRows - first;
  const int bands = (n + kMaxBand - 1) / kMaxBand, size = n / bands, larger = n % bands;  // `larger` of size + 1
  const int local = tile - first * C, lb = local / C;  // lb: a block of the tile's band
  const int band = lb < larger * (size + 1) ? lb / (size + 1) : larger + (lb - larger * (size + 1)) / size;
  const int band_first = band * size + min(band, larger), band_size = size + (band < larger);
  const int rem = local - band_first * C;
  return {first + band_first + rem % band_size, rem / band_size};
}

constexpr int kConsumerWarps = kConsumerThreads / 32;
constexpr int kGatherThreads = 128;  // the producer warpgroup: 8 threads a 128-byte row slice

// Producer: thread t copies 16-byte chunk t % 8 of rows t / 8 + 16 i (i < 8) of the block
// with cp.async (a warp reads 4 whole 128-byte row slices a step), into the 128-byte
// swizzle that TMA would have written: chunk c of row r at r * 128 + (c ^ (r % 8)) * 16.
// Thread 0 also issues the B tile's TMA copy. (TMA loads of rows gathered beforehand make
// the mainloop ~4% faster, but the separate gather pass costs more than that on every
// shape this kernel runs: bench/results/h100/fused_experts_gate_up_silu.json.)

template <class Element, class Act>
__global__ void __launch_bounds__(kThreads, 1) gate_up_silu_kernel(const __grid_constant__ KernelParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = Traits<Element>;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ char smem_raw[];
  auto& smem = *reinterpret_cast<typename T::Smem*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  const int warp_group = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      Barrier::init(&smem.full[s], kGatherThreads + 1);
      Barrier::init(&smem.empty[s], kConsumerWarps);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();  // barriers initialised before any thread uses them

  const int num_tiles = *p.total / kBlockRows * p.col_blocks;
  constexpr auto kHint = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);

  if (warp_group == 0) {
    cutlass::arch::warpgroup_reg_dealloc<56>();
    const int chunk = threadIdx.x % 8, row0 = threadIdx.x / 8;
    int stage = 0;
    uint32_t phase = 1;  // the empty barriers' phase before the first: passes at once
    for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
      const auto [block, j] = tile_coords(tile, p);
      const int expert = p.expert_ids[block];
      int64_t src[kBlockRows / 16];  // byte offset of each row's source, -1: a sentinel (zeros)
      CUTE_UNROLL
      for (int i = 0; i < kBlockRows / 16; ++i) {
        const int row = block * kBlockRows + row0 + 16 * i;
        const int slot = p.sorted_ids[row];
        const bool valid = slot < p.num_slots;
        src[i] = valid ? static_cast<int64_t>(slot / p.top_k) * p.ld_hidden_bytes : -1;
        if (valid && j == 0 && chunk == 0) p.slot_rows[slot] = row;
      }
      for (int k = 0; k < p.k_tiles; ++k) {
        Barrier::wait(&smem.empty[stage], phase);
        if (threadIdx.x == 0) {
          Barrier::arrive_and_expect_tx(&smem.full[stage], T::kStageBytesB);
          SM90_TMA_LOAD_5D::copy(&p.w_map, &smem.full[stage], kHint, smem.b + stage * T::kStageB, k * kBlockK, 0, 0,
                                 j, expert);
        }
        const int64_t col_bytes = (static_cast<int64_t>(k) * kBlockK + chunk * 8) * 2;
        auto* a_stage = reinterpret_cast<char*>(smem.a + stage * T::kStageA);
        CUTE_UNROLL
        for (int i = 0; i < kBlockRows / 16; ++i) {
          const int r = row0 + 16 * i;
          const bool read = src[i] >= 0 && col_bytes < p.h_bytes;  // else zeros: a sentinel row, or past H
          cuda::cp_async16(a_stage + r * 128 + ((chunk ^ (r & 7)) * 16), p.hidden + (read ? src[i] + col_bytes : 0),
                           read ? 16 : 0);
        }
        cuda::cp_async_mbarrier_arrive_noinc(&smem.full[stage]);
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
    cuda::cp_async_wait_all();
    return;
  }

  cutlass::arch::warpgroup_reg_alloc<224>();
  typename T::TiledMma mma;
  auto thr = mma.get_thread_slice(threadIdx.x - 128);
  Tensor sA = make_tensor(make_smem_ptr(smem.a), typename T::SmemLayoutA{});  // (128, 64, stage)
  Tensor sB = make_tensor(make_smem_ptr(smem.b), typename T::SmemLayoutB{});  // (256, 64, stage)
  Tensor tCrA = thr.make_fragment_A(thr.partition_A(sA));                     // (MMA, 1, 4, stage) descriptors
  Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));
  Tensor acc = partition_fragment_C(mma, Shape<Int<kBlockRows>, Int<2 * kCols>>{});  // ((2, 2, 32), 1, 1)
  Tensor coord = thr.partition_C(make_identity_tensor(Shape<Int<kBlockRows>, Int<2 * kCols>>{}));
  constexpr int kHalf = decltype(size(acc))::value / 2;
  static_assert(kHalf == 64, "a thread holds 2 rows x 64 gate columns and the same of up");
  const bool warp_leader = threadIdx.x % 32 == 0;

  const act_cuda::SiluAndMulOp</*kFast=*/true> silu_and_mul;
  int stage = 0;
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const auto [block, j] = tile_coords(tile, p);
    mma.accumulate_ = GMMA::ScaleOut::Zero;
    int previous = -1;
    for (int k = 0; k < p.k_tiles; ++k) {
      Barrier::wait(&smem.full[stage], phase);
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        gemm(mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), acc);
        mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_wait<1>();  // the previous k tile's wgmma are done: its stage may be refilled
      warpgroup_fence_operand(acc);
      if (previous >= 0 && warp_leader) Barrier::arrive(&smem.empty[previous]);
      previous = stage;
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    if (warp_leader) Barrier::arrive(&smem.empty[previous]);

    // Epilogue: value i is (row, column c) with c even; i + 1 is column c + 1 and
    // i + kHalf column c + 128, the up factor of the same output.
    Act* out = static_cast<Act*>(p.out) + static_cast<int64_t>(block) * kBlockRows * p.I + j * kCols;
    CUTE_UNROLL
    for (int i = 0; i < kHalf; i += 2) {
      const int r = get<0>(coord(i)), c = get<1>(coord(i));
      using Pair = std::conditional_t<std::is_same_v<Act, __nv_bfloat16>, __nv_bfloat162, __half2>;
      Pair v;
      if constexpr (std::is_same_v<Act, __nv_bfloat16>) {
        v = __floats2bfloat162_rn(silu_and_mul(acc(i), acc(i + kHalf)), silu_and_mul(acc(i + 1), acc(i + 1 + kHalf)));
      } else {
        v = __floats2half2_rn(silu_and_mul(acc(i), acc(i + kHalf)), silu_and_mul(acc(i + 1), acc(i + 1 + kHalf)));
      }
      *reinterpret_cast<Pair*>(out + static_cast<int64_t>(r) * p.I + c) = v;
    }
  }
#else
  __trap();  // built for sm_90a only (the launcher runs it on Hopper)
#endif
}

CUtensorMap encode_map(const void* base, int rank, const cuuint64_t* dims, const cuuint64_t* byte_strides,
                       const cuuint32_t* box, const char* what) {
  CUtensorMap map;
  const CUresult r = cuda::encode_tensor_map_16bit_sw128(map, base, rank, dims, byte_strides, box);
  FK_CHECK(r == CUDA_SUCCESS, "fused_experts gate_up: encoding the tensor map of ", what, " failed (CUresult ",
           static_cast<int>(r), ")");
  return map;
}

template <class Act>
using CuteElement = std::conditional_t<std::is_same_v<Act, __nv_bfloat16>, cutlass::bfloat16_t, cutlass::half_t>;

}  // namespace

bool gate_up_silu_supported(int64_t H, int64_t I) { return I > 0 && I % kCols == 0 && H > 0 && H % 8 == 0; }

template <class Act>
void run_gate_up_silu(const GateUpSilu& g, void* stream) {
  using Element = CuteElement<Act>;
  using T = Traits<Element>;
  FK_CHECK(gate_up_silu_supported(g.H, g.I), "fused_experts gate_up: H = ", g.H, ", I = ", g.I,
           " (needs I % 128 == 0 and H % 8 == 0)");
  FK_CHECK(g.max_blocks > 0, "fused_experts gate_up: ", g.max_blocks, " blocks");
  FK_CHECK(reinterpret_cast<uintptr_t>(g.hidden) % 16 == 0 && g.ld_hidden % 8 == 0,
           "fused_experts gate_up: hidden rows must be 16-byte aligned");
  KernelParams p{};
  const cuuint64_t h_bytes = static_cast<cuuint64_t>(g.H) * 2;
  p.hidden = static_cast<const char*>(g.hidden);
  p.ld_hidden_bytes = g.ld_hidden * 2;
  p.sorted_ids = g.sorted_ids;
  p.slot_rows = g.slot_rows;
  p.num_slots = g.num_slots;
  p.top_k = g.top_k;
  p.h_bytes = static_cast<int64_t>(h_bytes);
  {
    const cuuint64_t dims[5] = {static_cast<cuuint64_t>(g.H), kCols, 2, static_cast<cuuint64_t>(g.I / kCols),
                                static_cast<cuuint64_t>(g.E)};
    const cuuint64_t strides[4] = {h_bytes, static_cast<cuuint64_t>(g.I) * h_bytes, kCols * h_bytes,
                                   2 * static_cast<cuuint64_t>(g.I) * h_bytes};
    const cuuint32_t box[5] = {kBlockK, kCols, 2, 1, 1};
    p.w_map = encode_map(g.w13, 5, dims, strides, box, "w13");
  }
  p.out = g.out;
  p.expert_ids = g.expert_ids;
  p.offsets = g.offsets;
  p.total = g.total;
  p.I = g.I;
  p.col_blocks = static_cast<int>(g.I / kCols);
  p.k_tiles = static_cast<int>((g.H + kBlockK - 1) / kBlockK);


  auto kernel = gate_up_silu_kernel<Element, Act>;
  static const bool attributes_set = [&] {
    FK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
    return true;
  }();
  (void)attributes_set;
  const int64_t max_tiles = g.max_blocks * p.col_blocks;
  const auto grid = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(cuda::current_sm_count(), max_tiles)));
  kernel<<<grid, kThreads, T::kSmemBytes, static_cast<cudaStream_t>(stream)>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

template void run_gate_up_silu<__nv_bfloat16>(const GateUpSilu&, void*);
template void run_gate_up_silu<__half>(const GateUpSilu&, void*);

}  // namespace fk::ops::moe_grouped
