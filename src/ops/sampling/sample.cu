// sample CUDA baseline: a cluster of up to 8 blocks per row when the batch leaves SMs idle
// (one block per row when it does not, or with the variant max_cluster_1; see cluster_size),
// each streaming a slice of the row; no sort of the row.
//
// Semantics (fk/ops/sampling.h) in integers: every token has a 64-bit rank key (the logit
// as an order-preserving uint32 in the high half, ~token id in the low half; larger key =
// earlier in rank order, and keys are distinct) and a fixed-point weight
// W = round(exp(-(max - x) / T) * 2^40) (sample_radix.h). Integer sums are exact and
// independent of summation order, so the draw is deterministic, and every filter and the
// draw reduce to "the token at position `target` of the rank order", counted in tokens or
// in W: the token e with before(e) <= target < before(e) + own(e).
//   top-k:  Z = W-mass through the token at count position k - 1 (all live tokens when it
//           is dead, see below)
//   top-p:  Z = W-mass through the token at W position floor(p * Z), if that is < Z
//   min-p:  Z = total W of the survivors with w >= min_p (a pass; a sum over the candidates
//           when they hold every survivor)
//   draw:   the token at W position floor(u * Z).
// The boundary keys of the filters never need to be known: a target below the survivors'
// total always lands on a survivor.
//
// Per row (passes read the row slice from memory):
//   1. max pass: the largest rank key (the greedy token, argmax with the lowest id on
//      ties; temperature <= 0 stops here) and the smallest finite logit.
//   2. histogram pass over 2048 buckets of d = (max - x) / T (sample_buckets.h): a
//      monotone map, so each bucket is a run of the rank order. Count, and W-mass except
//      on top-k rows. The last bucket holds the dead tokens (W = 0, d >= 29.5); they are
//      only counted.
//   3. gather pass: the tokens of the bucket(s) a query needs, sorted by rank key in
//      shared memory (bitonic sort, at most 4096 candidates) with their mass prefix. The
//      histogram prefix plus a binary search over the candidates answers the query.
//      top-k rows gather every bucket up to the k-th token's, so top-p, min-p and the draw
//      are answered from the candidates with no further pass. Other rows gather the
//      bucket of the top-p cut together with the buckets the draw can land in, or just
//      the draw's bucket.
// So a greedy row reads its logits once; top-k, top-p, min-p and plain rows three times;
// top-p with min-p but no top-k five times (a min-p pass, then the draw's bucket). The
// radix kernel before this one made 6-13 passes, each with 64-bit shared atomics on the
// 2-4 of its 256 buckets that a row's logits fall in (the top 8 bits of a float). A
// bucket larger than the candidate arrays (thousands of equal logits) falls back to a radix select inside the bucket,
// 8 bits of the rank key per pass.
//
// A cluster splits the row into slices; histograms are summed through distributed
// shared memory and every block gathers all blocks' candidates, so all blocks of a
// cluster hold the same state and take the same decisions.
#include <cfloat>
#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/op_registry.h"
#include "fk/philox.h"
#include "ops/sampling/sample_rank_order.cuh"
#include "ops/sampling/sampling_validate.h"

namespace fk::ops {
namespace {

using namespace sample_gpu;
using sample_radix::kMaxVocab;

constexpr int kMinSlice = 4096;  // tokens per block below which a row gets no more blocks

struct RowParams {
  float temperature, top_p, min_p;
  int top_k;
  uint32_t philox_bits;  // the draw's u = (bits >> 8) * 2^-24
};

// The row's token. Every block of the cluster returns the same.
template <class T>
__device__ int sample_row(const RowSlice<T>& slice, int V, const RowParams& prm, Shared& sh, Cluster& cl) {
  const bool greedy = !(prm.temperature > 0.f);  // also NaN
  u64 best[2] = {0, 0};  // the largest rank key; the largest ~logit_key of a finite logit
  if (greedy) {
    slice.for_each([&](float x, int i) { best[0] = max(best[0], static_cast<u64>(sample_radix::rank_key(x, static_cast<uint32_t>(i)))); });
  } else {
    slice.for_each([&](float x, int i) {
      best[0] = max(best[0], static_cast<u64>(sample_radix::rank_key(x, static_cast<uint32_t>(i))));
      if (isfinite(x)) best[1] = max(best[1], static_cast<u64>(~sample_radix::logit_key(x)));
    });
  }
  cluster_reduce(best, sh, cl, MaxOp{});
  const int top = static_cast<int>(sample_radix::key_id(best[0]));
  const float max_logit = sample_radix::key_logit(best[0]);
  const float inv_t = 1.f / prm.temperature;
  // A temperature so small that 1 / T overflows (T < 2.9e-39) would weigh even the top
  // token NaN (the radix kernel returned an arbitrary token): such rows are greedy.
  if (greedy || !isfinite(max_logit) || !(inv_t <= FLT_MAX)) return top;
  const float min_finite = best[1] ? sample_radix::key32_logit(~static_cast<uint32_t>(best[1])) : max_logit;

  if (threadIdx.x == 0) sh.held = Gathered{};  // published by the histogram's barriers
  RankOrder<T> order{sh, cl, slice, sample_radix::BucketMap::make(max_logit, min_finite, inv_t), sh.held};
  const bool top_k_on = prm.top_k > 0 && prm.top_k < V;
  const bool min_p_on = prm.min_p > 0.f;  // NaN: off
  const float min_p_threshold = min_p_on ? fminf(prm.min_p, 1.f) : INFINITY;

  // Histogram. A top-k row whose first k tokens fit the candidate arrays gathers them
  // right away and needs no masses beyond them.
  bool have_mass = false;
  u64 min_p_all = 0;  // min-p over the whole row
  int k_bucket = kDeadBucket;
  if (top_k_on) {
    order.template histogram<false>(min_p_threshold);
    k_bucket = order.bucket_at(true, static_cast<u64>(prm.top_k - 1));
    if (k_bucket != kDeadBucket && sh.count[k_bucket + 1] <= static_cast<unsigned int>(kCapacity)) {
      order.gather_prefix(k_bucket);
      order.mass_prefix_from_candidates();
      have_mass = true;
    }
  }
  if (!have_mass) min_p_all = order.template histogram<true>(min_p_threshold);

  u64 Z = sh.mass[kBuckets];  // W-mass of the survivors so far
  Hit last;                   // the last survivor, once a filter has cut
  bool cut = false;
  if (top_k_on && k_bucket != kDeadBucket) {  // a dead k-th token keeps every live token
    last = order.fetch(true, static_cast<u64>(prm.top_k - 1));
    Z = last.mass_through;
    cut = true;
  }
  if (prm.top_p < 1.f) {  // NaN: off
    const u64 limit = sample_radix::top_p_limit(prm.top_p, Z);
    if (limit < Z) {
      BucketRange draw_buckets;  // where the draw can land: Z will be in (mass[b], mass[b + 1]]
      if (!min_p_on) {
        const int b = order.bucket_at(false, limit);
        draw_buckets.lo = order.bucket_at(false, sample_radix::draw_target(sh.mass[b] + 1, prm.philox_bits));
        draw_buckets.hi = order.bucket_at(false, sample_radix::draw_target(sh.mass[b + 1], prm.philox_bits));
      }
      last = order.fetch(false, limit, draw_buckets);
      Z = last.mass_through;
      cut = true;
    }
  }
  if (min_p_on) {
    u64 z;
    if (!cut) {
      z = min_p_all;
    } else if (order.held.holds_rank_prefix_through(last.index, sh.count)) {
      z = order.min_p_mass_of_candidates(last.index, min_p_threshold);  // candidates 0..index: every survivor
    } else {
      z = order.min_p_mass_streaming(last.key, min_p_threshold);
    }
    if (z > 0) Z = z;  // the top token (w = 1) always passes
  }
  return static_cast<int>(sample_radix::key_id(order.fetch(false, sample_radix::draw_target(Z, prm.philox_bits)).key));
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2)
    sample_kernel(int64_t* __restrict__ out, const T* __restrict__ logits, int64_t row_stride, int V, bool vector_loads,
                  const float* __restrict__ temperature, const int32_t* __restrict__ top_k,
                  const float* __restrict__ top_p, const float* __restrict__ min_p, const int64_t* __restrict__ seed,
                  const int64_t* __restrict__ offset) {
  Shared& sh = shared_state();
  Cluster cl = Cluster::current();
  const int64_t b = blockIdx.x / cl.size;
  // Slices are multiples of 8 tokens, so each starts 16-byte aligned when the row does.
  const int per = ((V + cl.size - 1) / cl.size + 7) & ~7;
  const int begin = min(V, cl.rank * per);
  const RowSlice<T> slice{logits + b * row_stride, begin, min(V, begin + per), vector_loads};
  const RowParams prm{temperature[b], top_p[b], min_p[b], top_k[b],
                      philox_u32(static_cast<uint64_t>(seed[b]), static_cast<uint64_t>(offset[b]), 0)};
  const int token = sample_row(slice, V, prm, sh, cl);
  if (cl.rank == 0 && threadIdx.x == 0) out[b] = token;
  cl.sync();  // no block exits while another may still read its shared memory
}

// Blocks per row: doubled while the batch leaves room for two blocks per SM and each
// block keeps at least kMinSlice tokens, up to sample_max_cluster() (8 unless one of the
// op's variants max_cluster_<n> says less). Without clusters a row takes 20.7 us at batch 1 (11.2
// with clusters) and 188 us at batch 256 (the same). The cluster path used to hang now
// and then on an H100 on rows of 128256 equal logits at batch 30 (clusters of 4): a top-k row whose k-th bucket is too large to gather builds a
// second histogram, and a warp still reading the first one's counts while another warp
// zeroed them for the second took other branches and missed cluster barriers (see
// RankOrder::histogram).
int cluster_size(int64_t B, int64_t V, int sms) {
  const int cap = sample_max_cluster();
  int c = 1;
  while (c < cap && B * 2 * c <= 2 * static_cast<int64_t>(sms) && V / (2 * c) >= kMinSlice) c *= 2;
  return c;
}

template <class T>
void launch(const SampleArgs& a, cudaStream_t stream) {
  const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
  if (B == 0) return;
  FK_CHECK(V <= kMaxVocab, SampleArgs::kName, ": the CUDA baseline supports vocabularies up to ", kMaxVocab,
           " tokens, got ", describe(a.logits));
  FK_CHECK(B <= 0x7fffffff / kMaxCluster, SampleArgs::kName, ": too many rows for one launch: ", B);
  // Every row starts 16-byte aligned when the first does and the row stride keeps it.
  const bool vector_loads = reinterpret_cast<uintptr_t>(a.logits.data) % 16 == 0 &&
                            (B == 1 || (a.logits.strides[0] * static_cast<int64_t>(sizeof(T))) % 16 == 0);
  int device = 0, sms = 0;
  FK_CUDA_CHECK(cudaGetDevice(&device));
  FK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int cluster = cluster_size(B, V, sms);
  static const bool attribute_set = [] {  // once per kernel, before its first launch
    FK_CUDA_CHECK(cudaFuncSetAttribute(sample_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(sizeof(Shared))));
    return true;
  }();
  (void)attribute_set;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned int>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned int>(B * cluster));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = sizeof(Shared);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  FK_CUDA_CHECK(cudaLaunchKernelEx(&config, sample_kernel<T>, a.out.ptr<int64_t>(), a.logits.ptr<const T>(),
                                   a.logits.strides[0], static_cast<int>(V), vector_loads,
                                   a.temperature.ptr<const float>(), a.top_k.ptr<const int32_t>(),
                                   a.top_p.ptr<const float>(), a.min_p.ptr<const float>(), a.seed.ptr<const int64_t>(),
                                   a.offset.ptr<const int64_t>()));
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
