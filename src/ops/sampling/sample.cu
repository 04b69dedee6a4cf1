// sample CUDA baseline: one block of 1024 threads per row, no sort.
//
// Every token gets a 64-bit rank key: the logit as an order-preserving uint32 in the high
// half, ~token_id in the low half. Larger key = earlier in rank order, and keys are
// distinct, so "the first n tokens in rank order" is "keys >= some boundary key".
// Weights w = exp((x - max) / T) are held in 40-bit fixed point (W = round(w * 2^40)):
// integer sums are exact and independent of summation order, so the draw is deterministic
// and every total agrees with the per-bucket sums it is compared against.
//
// Per row:
//   1. one pass: the maximum rank key = the greedy token (argmax, lowest id on ties);
//      temperature <= 0 stops here.
//   2. top-k: radix select of the k-th key by count; also gives Z = mass of the top k.
//      Without top-k, one pass sums Z.
//   3. top-p: radix select by mass of the element where the prefix mass crosses p * Z.
//   4. min-p: one pass over the survivors keeps w >= min_p (a prefix: w falls with rank).
//   5. draw: radix select by mass of the element where the prefix mass crosses u * Z.
// A radix select walks the key 8 bits per pass from the top: a 256-bucket histogram (count
// and mass) of the candidates matching the prefix found so far, then one warp picks the
// bucket where the running total from the top crosses the target. It stops as soon as the
// chosen bucket holds one element (after 2-4 passes for distinct logits; ties in the
// logit continue into the id bits). Histograms use 8 copies (lane % 8) so that lanes
// hitting one bucket contend at most 4-way.
//
// Fast path to come: several blocks (a cluster sharing histograms through distributed
// shared memory) per row for small batches; for top-k, a first pass
// that gathers the candidates above a cheap threshold into shared memory so that the
// later passes do not re-read the row.
#include <cuda_bf16.h>

#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/op_registry.h"
#include "fk/philox.h"
#include "ops/sampling/sample_radix.h"
#include "ops/sampling/sampling_validate.h"

namespace fk::ops {
namespace {

using u64 = unsigned long long;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
static_assert(kWarps == 32, "block_reduce folds one value per warp into one warp");
constexpr int kBuckets = 256;
constexpr int kCopies = 8;
constexpr int kPitch = kBuckets + 1;  // odd pitch: copies of one bucket sit in different banks
using sample_radix::kFixedBits;
using sample_radix::kMaxVocab;

__device__ __forceinline__ float load_logit(const float* row, int i) { return row[i]; }
__device__ __forceinline__ float load_logit(const __nv_bfloat16* row, int i) { return __bfloat162float(row[i]); }

__device__ __forceinline__ u64 rank_key(float x, int id) {
  return sample_radix::rank_key(x, static_cast<uint32_t>(id));
}
__device__ __forceinline__ int key_id(u64 key) { return static_cast<int>(sample_radix::key_id(key)); }

struct Shared {
  u64 mass[kCopies * kPitch];
  u64 reduce[kWarps];
  unsigned int count[kCopies * kPitch];
  int any_id[kBuckets];
  u64 pick_target, pick_mass_above;
  int pick_digit;
};

template <class T>
struct RowView {
  const T* x;
  int V;
  bool vector_loads;  // the row starts 16-byte aligned
  float max_logit = 0, inv_t = 1;
  __device__ float logit(int i) const { return load_logit(x, i); }
  __device__ float weight(float logit) const { return expf((logit - max_logit) * inv_t); }
  __device__ static u64 fixed(float w) { return __float2ull_rn(ldexpf(w, kFixedBits)); }

  // f(logit, id) for every token of the row, spread over the block. 16-byte loads (4 f32 or
  // 8 bf16 per thread and step, four steps in flight) keep enough bytes in flight for one
  // block to stream its row; the order of calls does not matter to any caller.
  template <class F>
  __device__ void for_each(F&& f) const {
    int first_scalar = 0;
    if (vector_loads) {
      constexpr int N = 16 / sizeof(T);
      const int num_vec = V / N;
      const auto* vec = reinterpret_cast<const uint4*>(x);
#pragma unroll 4
      for (int j = threadIdx.x; j < num_vec; j += blockDim.x) {
        const uint4 raw = vec[j];
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int q = 0; q < N; ++q) f(load_logit(e, q), j * N + q);
      }
      first_scalar = num_vec * N;
    }
    for (int i = first_scalar + threadIdx.x; i < V; i += blockDim.x) f(logit(i), i);
  }
};

struct MaxOp {
  __device__ u64 operator()(u64 a, u64 b) const { return a > b ? a : b; }
};
struct MinOp {
  __device__ u64 operator()(u64 a, u64 b) const { return a < b ? a : b; }
};
struct SumOp {
  __device__ u64 operator()(u64 a, u64 b) const { return a + b; }
};

// Every thread gets the result.
template <class Op>
__device__ u64 block_reduce(u64 v, Shared& sh, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // sh.reduce may still be read by a previous reduction
  if (lane == 0) sh.reduce[warp] = v;
  __syncthreads();
  v = sh.reduce[lane];  // kWarps == 32: one entry per lane
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Warp 0: finds the bucket where the running weight from the top bucket down crosses
// `target`. Lane l owns buckets 255 - 8l ... 248 - 8l.
template <bool kByCount>
__device__ void pick_bucket(Shared& sh, u64 target) {
  const int lane = threadIdx.x;
  u64 wsum = 0, msum = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int b = kBuckets - 1 - 8 * lane - j;
    wsum += kByCount ? static_cast<u64>(sh.count[b]) : sh.mass[b];
    msum += sh.mass[b];
  }
  u64 wex = wsum, mex = msum;  // inclusive scans over lanes, then made exclusive
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 wu = __shfl_up_sync(0xffffffffu, wex, o), mu = __shfl_up_sync(0xffffffffu, mex, o);
    if (lane >= o) wex += wu, mex += mu;
  }
  const u64 total = __shfl_sync(0xffffffffu, wex, 31);
  wex -= wsum;
  mex -= msum;
  if (target >= total) target = total > 0 ? total - 1 : 0;  // guard; totals are exact, so never taken
  const unsigned owners = __ballot_sync(0xffffffffu, wsum > 0 && wex <= target && target < wex + wsum);
  const int owner = owners ? __ffs(owners) - 1 : 31;
  if (lane == owner) {
    u64 acc = wex, macc = mex;
    int digit = 8 * (31 - lane);  // lowest bucket of the lane if nothing matches
    for (int j = 0; j < 8; ++j) {
      const int b = kBuckets - 1 - 8 * lane - j;
      const u64 wb = kByCount ? static_cast<u64>(sh.count[b]) : sh.mass[b];
      if (target < acc + wb) {
        digit = b;
        break;
      }
      acc += wb;
      macc += sh.mass[b];
    }
    sh.pick_digit = digit;
    sh.pick_target = target - acc;
    sh.pick_mass_above = macc;
  }
}

struct Selection {
  int id;            // the boundary token
  u64 key;           // its rank key
  u64 mass_through;  // mass of the candidates ranked before it, plus its own
};

// The candidate (rank key >= lower) that `target` falls on, walking rank order and adding
// 1 (kByCount) or W per candidate: the element e with before(e) <= target < before(e) + own(e).
template <bool kByCount, class T>
__device__ Selection radix_select(const RowView<T>& r, u64 lower, u64 target, Shared& sh) {
  u64 prefix = 0, prefix_mask = 0, mass_above = 0;
  const int copy = threadIdx.x & (kCopies - 1);
  for (int shift = 56;; shift -= 8) {
    for (int i = threadIdx.x; i < kCopies * kPitch; i += blockDim.x) {
      sh.count[i] = 0;
      sh.mass[i] = 0;
    }
    __syncthreads();
    r.for_each([&](float x, int i) {
      const u64 key = rank_key(x, i);
      if (key < lower || (key & prefix_mask) != prefix) return;
      const int digit = static_cast<int>((key >> shift) & 0xFF);
      atomicAdd(&sh.count[copy * kPitch + digit], 1u);
      const u64 w = RowView<T>::fixed(r.weight(x));
      if (w) atomicAdd(&sh.mass[copy * kPitch + digit], w);
      sh.any_id[digit] = i;  // racy on purpose: exact whenever the bucket holds one element
    });
    __syncthreads();
    if (threadIdx.x < kBuckets) {  // fold the copies into copy 0 (one thread per bucket)
      unsigned int c = 0;
      u64 m = 0;
      for (int j = 0; j < kCopies; ++j) {
        c += sh.count[j * kPitch + threadIdx.x];
        m += sh.mass[j * kPitch + threadIdx.x];
      }
      sh.count[threadIdx.x] = c;
      sh.mass[threadIdx.x] = m;
    }
    __syncthreads();
    if (threadIdx.x < 32) pick_bucket<kByCount>(sh, target);
    __syncthreads();
    const int digit = sh.pick_digit;
    target = sh.pick_target;
    mass_above += sh.pick_mass_above;
    prefix |= static_cast<u64>(digit) << shift;
    prefix_mask |= u64{0xFF} << shift;
    const bool found = sh.count[digit] == 1 || shift == 0;
    Selection s{};
    if (found) {
      s.id = min(max(sh.any_id[digit], 0), r.V - 1);
      s.mass_through = mass_above + sh.mass[digit];
    }
    __syncthreads();  // everyone has read the histograms before they are cleared or reused
    if (found) {
      s.key = rank_key(r.logit(s.id), s.id);
      return s;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(int64_t* __restrict__ out, const T* __restrict__ logits, int64_t row_stride, int V, bool vector_loads,
                  const float* __restrict__ temperature, const int32_t* __restrict__ top_k,
                  const float* __restrict__ top_p, const float* __restrict__ min_p, const int64_t* __restrict__ seed,
                  const int64_t* __restrict__ offset) {
  __shared__ Shared sh;
  const int64_t b = blockIdx.x;
  RowView<T> r{logits + b * row_stride, V, vector_loads};

  u64 best = 0;
  r.for_each([&](float x, int i) { best = max(best, rank_key(x, i)); });
  best = block_reduce(best, sh, MaxOp{});
  const int top = key_id(best);
  r.max_logit = r.logit(top);
  const float t = temperature[b];
  if (!(t > 0.f) || !isfinite(r.max_logit)) {  // greedy (also for invalid temperatures)
    if (threadIdx.x == 0) out[b] = top;
    return;
  }
  r.inv_t = 1.f / t;

  u64 lower = 0;  // survivors: rank key >= lower
  u64 Z = 0;      // their total fixed-point weight
  const int k = top_k[b];
  if (k > 0 && k < V) {
    const Selection s = radix_select<true>(r, 0, static_cast<u64>(k - 1), sh);
    lower = s.key;
    Z = s.mass_through;
  } else {
    u64 sum = 0;
    r.for_each([&](float x, int) { sum += RowView<T>::fixed(r.weight(x)); });
    Z = block_reduce(sum, sh, SumOp{});
  }

  const float p = top_p[b];
  if (p < 1.f) {  // NaN: off
    const u64 limit = sample_radix::top_p_limit(p, Z);
    if (limit < Z) {
      const Selection s = radix_select<false>(r, lower, limit, sh);
      lower = s.key;
      Z = s.mass_through;
    }
  }

  const float mp = min_p[b];
  if (mp > 0.f) {  // NaN: off
    const float threshold = fminf(mp, 1.f);
    u64 sum = 0, lowest = ~u64{0};
    r.for_each([&](float x, int i) {
      const u64 key = rank_key(x, i);
      if (key < lower) return;
      const float w = r.weight(x);
      if (w >= threshold) {
        sum += RowView<T>::fixed(w);
        lowest = min(lowest, key);
      }
    });
    sum = block_reduce(sum, sh, SumOp{});
    lowest = block_reduce(lowest, sh, MinOp{});
    if (lowest != ~u64{0}) {  // the top token (w = 1) always passes
      lower = lowest;
      Z = sum;
    }
  }

  const u64 target = sample_radix::draw_target(
      Z, philox_u32(static_cast<uint64_t>(seed[b]), static_cast<uint64_t>(offset[b]), 0));
  const Selection s = radix_select<false>(r, lower, target, sh);
  if (threadIdx.x == 0) out[b] = s.id;
}

template <class T>
void launch(const SampleArgs& a, cudaStream_t stream) {
  const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
  if (B == 0) return;
  FK_CHECK(V <= kMaxVocab, SampleArgs::kName, ": the CUDA baseline supports vocabularies up to ", kMaxVocab,
           " tokens, got ", describe(a.logits));
  FK_CHECK(B <= 0x7fffffff, SampleArgs::kName, ": too many rows for one launch: ", B);
  // Every row starts 16-byte aligned when the first does and the row stride keeps it.
  const bool vector_loads = reinterpret_cast<uintptr_t>(a.logits.data) % 16 == 0 &&
                            (B == 1 || (a.logits.strides[0] * static_cast<int64_t>(sizeof(T))) % 16 == 0);
  sample_kernel<T><<<static_cast<unsigned>(B), kThreads, 0, stream>>>(
      a.out.ptr<int64_t>(), a.logits.ptr<const T>(), a.logits.strides[0], static_cast<int>(V), vector_loads,
      a.temperature.ptr<const float>(), a.top_k.ptr<const int32_t>(), a.top_p.ptr<const float>(),
      a.min_p.ptr<const float>(), a.seed.ptr<const int64_t>(), a.offset.ptr<const int64_t>());
  FK_CUDA_CHECK_LAUNCH();
}

fk_status sample_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const SampleArgs*>(args);
    validate_sample(a);
    expect_sample_device(a, DeviceType::cuda);
    const auto s = static_cast<cudaStream_t>(stream);
    switch (a.logits.dtype) {
      case DType::f32: return launch<float>(a, s);
      case DType::bf16: return launch<__nv_bfloat16>(a, s);
      default: FK_FAIL(FK_ERR_UNSUPPORTED, SampleArgs::kName, ": logits dtype ", dtype_name(a.logits.dtype));
    }
  });
}

FK_REGISTER_IMPL("sample", cuda, sample_cuda);

}  // namespace
}  // namespace fk::ops
