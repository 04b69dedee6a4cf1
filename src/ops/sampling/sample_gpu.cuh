// The building blocks of the CUDA sampler (sample.cu): shared-memory layout, the row slice
// a block streams, and reductions over a block and over the cluster of blocks that share a
// row. Every block of a cluster ends a reduction or merge with the same values, so all of
// them take the same decisions afterwards without further communication.
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "ops/sampling/sample_buckets.h"
#include "ops/sampling/sample_cluster.h"
#include "ops/sampling/sample_radix.h"

namespace fk::ops::sample_gpu {

namespace cg = cooperative_groups;
using u64 = unsigned long long;

constexpr int kThreads = 512;  // two blocks per SM
constexpr int kWarps = kThreads / 32;
constexpr int kBuckets = sample_radix::kNumBuckets;
constexpr int kDeadBucket = sample_radix::kDeadBucket;
constexpr int kCapacity = 4096;  // gathered candidates; a power of two (bitonic sort)
constexpr int kDigits = 256;     // radix fallback: 8 bits of the rank key per pass
constexpr int kMaxCluster = kSampleMaxCluster;
static_assert(kBuckets % kThreads == 0 && kCapacity % kThreads == 0, "scans give each thread whole runs");

constexpr int kMaxRanges = 2;  // range_at / base_at assume 2

struct BucketRange {
  int lo = 1, hi = 0;  // buckets lo..hi; empty when lo > hi
  __device__ bool empty() const { return lo > hi; }
};

// Which buckets the candidate arrays hold: whole buckets, in rank order.
struct Gathered {
  int num_ranges = 0;
  BucketRange range[kMaxRanges];
  int base[kMaxRanges] = {};  // index of each range's first candidate
  int n = 0;                  // candidates held
  // (Constant indices only, so that the struct stays in registers.)
  __device__ int range_of(int b) const {
#pragma unroll
    for (int j = 0; j < kMaxRanges; ++j)
      if (j < num_ranges && range[j].lo <= b && b <= range[j].hi) return j;
    return -1;
  }
  __device__ BucketRange range_at(int j) const { return j == 0 ? range[0] : range[1]; }
  __device__ int base_at(int j) const { return j == 0 ? base[0] : base[1]; }
  // Whether candidates 0..index are every token ranked up to candidate `index`.
  __device__ bool holds_rank_prefix_through(int index, const unsigned int* count_prefix) const {
    return num_ranges > 0 && range[0].lo == 0 && index >= 0 && index < n &&
           index < static_cast<int>(count_prefix[range[0].hi + 1]);
  }
};

struct Shared {
  u64 mass[kBuckets + 1];  // bucket masses, then their exclusive prefix (entry kBuckets: total)
  u64 cand_key[kCapacity];   // gathered candidates' rank keys, in rank order after the sort
  u64 cand_mass[kCapacity];  // their inclusive mass prefix; a gather stages its finds here
  u64 digit_mass[kDigits];
  u64 digit_key[kDigits];  // largest rank key per digit: the element once a digit holds one
  u64 warp_part[2][kWarps];
  u64 cluster_slot[2][2];  // [parity][value] of cluster reductions
  unsigned int count[kBuckets + 1];  // bucket counts, then their exclusive prefix
  unsigned int digit_count[kDigits];
  Gathered held;       // the buckets the candidate arrays hold
  unsigned int found;  // a gather's finds in this block
  int pick_digit;
  u64 pick_target, pick_above;
};

__device__ __forceinline__ Shared& shared_state() {
  extern __shared__ __align__(16) unsigned char sample_smem[];
  return *reinterpret_cast<Shared*>(sample_smem);
}

// The cluster of blocks that samples one row (a single block when the batch fills the GPU).
struct Cluster {
  int size = 1, rank = 0;
  int parity = 0;  // alternates the reduction slots, so one barrier per reduction suffices

  __device__ static Cluster current() {
    const cg::cluster_group c = cg::this_cluster();
    return {static_cast<int>(c.num_blocks()), static_cast<int>(c.block_rank()), 0};
  }
  // All threads of all blocks; with one block, a block barrier.
  __device__ void sync() const {
    if (size == 1) {
      __syncthreads();
    } else {
      cg::this_cluster().sync();
    }
  }
  template <class T>
  __device__ T* remote(T* p, int block) const {
    return size == 1 ? p : cg::this_cluster().map_shared_rank(p, static_cast<unsigned int>(block));
  }
};

struct MaxOp {
  __device__ u64 operator()(u64 a, u64 b) const { return a > b ? a : b; }
};
struct SumOp {
  __device__ u64 operator()(u64 a, u64 b) const { return a + b; }
};

// Every thread of the block gets the results.
template <int N, class Op>
__device__ void block_reduce(u64 (&v)[N], Shared& sh, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v[i] = op(v[i], __shfl_xor_sync(0xffffffffu, v[i], o));
  __syncthreads();  // a previous reduction may still read warp_part
  if (lane == 0)
#pragma unroll
    for (int i = 0; i < N; ++i) sh.warp_part[i][warp] = v[i];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    u64 r = sh.warp_part[i][0];
    for (int w = 1; w < kWarps; ++w) r = op(r, sh.warp_part[i][w]);
    v[i] = r;
  }
}

// Every thread of every block of the cluster gets the results. The slot written here is
// rewritten two reductions later, after the barrier of the next one has seen every block
// finish reading it.
template <int N, class Op>
__device__ void cluster_reduce(u64 (&v)[N], Shared& sh, Cluster& cl, Op op) {
  static_assert(N <= 2, "two slots per parity");
  block_reduce(v, sh, op);
  if (cl.size == 1) return;
  u64* slot = sh.cluster_slot[cl.parity];
  if (threadIdx.x == 0)
#pragma unroll
    for (int i = 0; i < N; ++i) slot[i] = v[i];
  cl.sync();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    u64 r = *cl.remote(&slot[i], 0);
    for (int b = 1; b < cl.size; ++b) r = op(r, *cl.remote(&slot[i], b));
    v[i] = r;
  }
  cl.parity ^= 1;
}

// Turns each block's table of n entries into the cluster's total, in place: block r folds
// entries [r n / size, (r + 1) n / size) of every block and writes the result back to all
// of them. merge_one(i) does that for entry i (see merge_entry). Ends with every block's
// table merged and visible to all its threads.
template <class F>
__device__ void cluster_merge(const Cluster& cl, int n, F&& merge_one) {
  if (cl.size == 1) {
    __syncthreads();
    return;
  }
  cl.sync();  // every block's own table is complete
  const int per = (n + cl.size - 1) / cl.size;
  const int lo = cl.rank * per, hi = min(n, lo + per);
  for (int i = lo + static_cast<int>(threadIdx.x); i < hi; i += kThreads) merge_one(i);
  cl.sync();
}

template <class T, class Op>
__device__ void merge_entry(const Cluster& cl, T* table, int i, Op op) {
  T acc = *cl.remote(table + i, 0);
  for (int b = 1; b < cl.size; ++b) acc = static_cast<T>(op(acc, *cl.remote(table + i, b)));
  for (int b = 0; b < cl.size; ++b) *cl.remote(table + i, b) = acc;
}

// 64-bit shared-memory add from two native 32-bit atomics: whoever wraps the low word
// carries one into the high word, so the pair ends as the exact 64-bit sum.
__device__ __forceinline__ void add_mass(u64* slot, u64 w) {
  auto* word = reinterpret_cast<unsigned int*>(slot);  // little endian: word[0] is the low half
  const auto lo = static_cast<unsigned int>(w);
  const unsigned int old = atomicAdd(&word[0], lo);
  const unsigned int hi = static_cast<unsigned int>(w >> 32) + (old + lo < old ? 1u : 0u);
  if (hi) atomicAdd(&word[1], hi);
}

__device__ __forceinline__ float load_logit(const float* p, int i) { return p[i]; }
__device__ __forceinline__ float load_logit(const __nv_bfloat16* p, int i) { return __bfloat162float(p[i]); }

// The fixed-point weight of a token at distance d (sample_buckets.h).
__device__ __forceinline__ u64 fixed_weight(float w) {
  return __float2ull_rn(ldexpf(w, sample_radix::kFixedBits));
}

// This block's slice [begin, end) of one row.
template <class T>
struct RowSlice {
  const T* x;  // the row
  int begin, end;
  bool vector_loads;  // the row starts 16-byte aligned (begin is a multiple of 8)

  // f(logit, token id) for every token of the slice, spread over the block. 16-byte loads
  // (4 f32 or 8 bf16 per thread and step, four steps in flight) keep enough bytes in flight
  // to stream the slice; the order of calls does not matter to any caller.
  template <class F>
  __device__ void for_each(F&& f) const {
    const T* p = x + begin;
    const int n = end - begin;
    int first_scalar = 0;
    if (vector_loads) {
      constexpr int N = 16 / sizeof(T);
      const int num_vec = n / N;
      const auto* vec = reinterpret_cast<const uint4*>(p);
#pragma unroll 4
      for (int j = threadIdx.x; j < num_vec; j += kThreads) {
        const uint4 raw = vec[j];
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int q = 0; q < N; ++q) f(load_logit(e, q), begin + j * N + q);
      }
      first_scalar = num_vec * N;
    }
    for (int i = first_scalar + static_cast<int>(threadIdx.x); i < n; i += kThreads) f(load_logit(p, i), begin + i);
  }
};

}  // namespace fk::ops::sample_gpu
