// moe_align_block_size CUDA baseline, and the grouping fused_experts runs first.
//
// Up to 2048 slots (decode) one CTA does everything: per-expert counts in shared memory,
// the padded offsets by a block scan, then the slots ranked 1024 at a time. More slots:
// three kernels, over chunks of 1024 slots: counts per chunk, one CTA turning them into
// per-chunk starting positions and the padded offsets, then each chunk ranked on its own.
// Ranking is stable (slot order within an expert): within a warp __match_any_sync gives
// each slot its rank among the warp's slots of the same expert, and the 32 warps of a CTA
// take turns adding their counts to the experts' running positions.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/op_registry.h"
#include "ops/moe/moe_align_cuda.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops::moe_cuda {
namespace {

constexpr int kChunk = 1024;        // slots per chunk (and per ranking CTA)
constexpr int kSingleMaxSlots = 2048;

// Exclusive prefix sum over the CTA of one int per thread; *total gets the sum. `scratch`
// holds 33 ints of shared memory.
__device__ int block_exclusive_scan(int v, int* scratch, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  int incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int n = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += n;
  }
  __syncthreads();  // scratch may still be read by an earlier scan
  if (lane == 31) scratch[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int w = lane < warps ? scratch[lane] : 0;
    int wi = w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int n = __shfl_up_sync(0xffffffffu, wi, o);
      if (lane >= o) wi += n;
    }
    scratch[lane] = wi - w;  // exclusive prefix of the warp sums
    if (lane == 31) scratch[32] = wi;
  }
  __syncthreads();
  *total = scratch[32];
  return scratch[warp] + incl - v;
}

// off[0..E] = exclusive prefix of the padded counts cnt[e] rounded up to block_size
// (shared memory arrays); every thread takes a run of consecutive experts.
__device__ void padded_offsets(const int* cnt, int E, int block_size, int* off, int* scratch) {
  const int per = (E + blockDim.x - 1) / blockDim.x;
  const int begin = min(E, static_cast<int>(threadIdx.x) * per), end = min(E, begin + per);
  int local = 0;
  for (int e = begin; e < end; ++e) local += (cnt[e] + block_size - 1) / block_size * block_size;
  int total;
  int run = block_exclusive_scan(local, scratch, &total);
  for (int e = begin; e < end; ++e) {
    off[e] = run;
    run += (cnt[e] + block_size - 1) / block_size * block_size;
  }
  if (threadIdx.x == 0) off[E] = total;
  __syncthreads();
}

// Everything but the slots themselves: the total, each block's expert (-1 past the end),
// the padding sentinels of each expert's range and the sentinels past the total.
__device__ void write_layout(const int* cnt, const int* off, int E, int block_size, int N, const AlignOutputs& out) {
  const int tid = threadIdx.x, nt = blockDim.x;
  const int total = off[E];
  if (tid == 0) *out.total = total;
  for (int e = tid; e < E; e += nt) {
    for (int b = off[e] / block_size; b < off[e + 1] / block_size; ++b) out.expert_ids[b] = e;
    for (int i = off[e] + cnt[e]; i < off[e + 1]; ++i) out.sorted_token_ids[i] = N;
  }
  for (int64_t b = total / block_size + tid; b < out.num_blocks; b += nt) out.expert_ids[b] = -1;
  for (int64_t i = total + tid; i < out.sorted_len; i += nt) out.sorted_token_ids[i] = N;
}

// Places slots [begin, begin + blockDim.x) at base[e] + (their rank among the tile's slots
// of expert e), advancing base (shared memory). Warps go in order, so ranks follow slot
// order. Every thread of the CTA must call it.
__device__ void rank_and_scatter(const int32_t* ids, int N, int E, int begin, int* base, int32_t* sorted) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int i = begin + static_cast<int>(threadIdx.x);
  const int e = i < N ? ids[i] : -1;
  const bool routed = e >= 0 && e < E;
  const int key = routed ? e : -1 - lane;  // slots routed nowhere match no other lane
  const unsigned group = __match_any_sync(0xffffffffu, key);
  const int rank = __popc(group & ((1u << lane) - 1u));
  for (int w = 0; w < warps; ++w) {
    if (warp == w) {
      const int pos = routed ? base[e] + rank : 0;
      __syncwarp();
      if (routed && rank == 0) base[e] += __popc(group);
      if (routed) sorted[pos] = i;
    }
    __syncthreads();
  }
}

// Shared memory: cnt[E], off[E + 1], scan scratch[33].
__global__ void __launch_bounds__(1024) align_single_kernel(const int32_t* ids, int N, int E, int block_size,
                                                            AlignOutputs out) {
  extern __shared__ int smem[];
  int* cnt = smem;
  int* off = cnt + E;
  int* scratch = off + E + 1;
  for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    const int e = ids[i];
    if (e >= 0 && e < E) atomicAdd(&cnt[e], 1);
  }
  __syncthreads();
  padded_offsets(cnt, E, block_size, off, scratch);
  for (int e = threadIdx.x; e <= E; e += blockDim.x) out.offsets[e] = off[e];
  write_layout(cnt, off, E, block_size, N, out);
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = off[e];  // cnt becomes the running positions
  __syncthreads();
  for (int begin = 0; begin < N; begin += blockDim.x) rank_and_scatter(ids, N, E, begin, cnt, out.sorted_token_ids);
}

// Chunk c's count of every expert -> chunk_counts[c * E + e].
__global__ void __launch_bounds__(256) align_count_kernel(const int32_t* ids, int N, int E, int32_t* chunk_counts) {
  extern __shared__ int cnt[];
  for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  const int begin = blockIdx.x * kChunk, end = min(N, begin + kChunk);
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const int e = ids[i];
    if (e >= 0 && e < E) atomicAdd(&cnt[e], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) chunk_counts[static_cast<int64_t>(blockIdx.x) * E + e] = cnt[e];
}

// One CTA: chunk counts -> each chunk's start within its expert (in place), expert totals,
// padded offsets (to out.offsets) and the layout.
__global__ void __launch_bounds__(1024) align_scan_kernel(int chunks, int N, int E, int block_size, AlignOutputs out) {
  extern __shared__ int smem[];
  int* cnt = smem;
  int* off = cnt + E;
  int* scratch = off + E + 1;
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int run = 0;
    for (int c = 0; c < chunks; ++c) {
      int32_t* p = out.chunk_counts + static_cast<int64_t>(c) * E + e;
      const int v = *p;
      *p = run;
      run += v;
    }
    cnt[e] = run;
  }
  __syncthreads();
  padded_offsets(cnt, E, block_size, off, scratch);
  for (int e = threadIdx.x; e <= E; e += blockDim.x) out.offsets[e] = off[e];
  write_layout(cnt, off, E, block_size, N, out);
}

// Chunk c's slots to their places: base[e] = offset of e + slots of e in earlier chunks.
__global__ void __launch_bounds__(kChunk) align_scatter_kernel(const int32_t* ids, int N, int E, AlignOutputs out) {
  extern __shared__ int base[];
  for (int e = threadIdx.x; e < E; e += blockDim.x)
    base[e] = out.offsets[e] + out.chunk_counts[static_cast<int64_t>(blockIdx.x) * E + e];
  __syncthreads();
  rank_and_scatter(ids, N, E, blockIdx.x * kChunk, base, out.sorted_token_ids);
}

}  // namespace

void launch_align(const int32_t* ids, int64_t num_slots, int num_experts, int block_size, const AlignOutputs& out,
                  void* stream) {
  FK_CHECK(num_experts >= 1 && num_experts <= kAlignMaxExperts, "moe_align_block_size (CUDA) handles 1..",
           kAlignMaxExperts, " experts, got ", num_experts);
  auto s = static_cast<cudaStream_t>(stream);
  const int N = static_cast<int>(num_slots), E = num_experts;
  const size_t layout_smem = static_cast<size_t>(2 * E + 1 + 33) * sizeof(int);
  static_assert(2 * kAlignMaxExperts * 4 + 34 * 4 <= 48 * 1024, "grouping fits the default shared memory");
  if (N <= kSingleMaxSlots) {
    align_single_kernel<<<1, 1024, layout_smem, s>>>(ids, N, E, block_size, out);
    FK_CUDA_CHECK_LAUNCH();
    return;
  }
  const int chunks = (N + kChunk - 1) / kChunk;
  align_count_kernel<<<chunks, 256, static_cast<size_t>(E) * sizeof(int), s>>>(ids, N, E, out.chunk_counts);
  FK_CUDA_CHECK_LAUNCH();
  align_scan_kernel<<<1, 1024, layout_smem, s>>>(chunks, N, E, block_size, out);
  FK_CUDA_CHECK_LAUNCH();
  align_scatter_kernel<<<chunks, kChunk, static_cast<size_t>(E) * sizeof(int), s>>>(ids, N, E, out);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::ops::moe_cuda

namespace fk::ops {
namespace {

fk_status align_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeAlignBlockSizeArgs*>(args);
    validate_align(a, DeviceType::cuda);
    FK_CHECK(a.num_experts <= moe_cuda::kAlignMaxExperts, a.kName, ": the CUDA baseline handles up to ",
             moe_cuda::kAlignMaxExperts, " experts, got ", a.num_experts);
    const int64_t N = a.topk_ids.numel(), E = a.num_experts;
    auto* ws = static_cast<int32_t*>(a.workspace.data);
    moe_cuda::AlignOutputs out{static_cast<int32_t*>(a.sorted_token_ids.data), a.sorted_token_ids.shape[0],
                               static_cast<int32_t*>(a.expert_ids.data),       a.expert_ids.shape[0],
                               static_cast<int32_t*>(a.num_tokens_post_padded.data), ws, ws + (E + 1)};
    moe_cuda::launch_align(static_cast<const int32_t*>(a.topk_ids.data), N, a.num_experts, a.block_size, out,
                           stream);
  });
}

FK_REGISTER_IMPL("moe_align_block_size", cuda, align_cuda);

}  // namespace
}  // namespace fk::ops
