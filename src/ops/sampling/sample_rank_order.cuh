// The rank order of one row as the CUDA sampler (sample.cu) queries it: a histogram of the
// buckets of sample_buckets.h (count and fixed-point mass, exact), the tokens of a few
// buckets gathered into shared memory and sorted by rank key, and a radix select inside
// one bucket for buckets too large to gather.
//
// Every query is "the token at position `target` of the rank order", counted in tokens or
// in fixed-point mass: the token e with before(e) <= target < before(e) + own(e). The
// histogram's prefix sums name the bucket; the bucket's sorted tokens name the token.
#pragma once
#include "ops/sampling/sample_gpu.cuh"

namespace fk::ops::sample_gpu {

// A token found in the rank order.
struct Hit {
  bool found = false;
  int bucket = 0;         // where it lies (when not found: the bucket to fetch)
  u64 key = 0;            // its rank key
  u64 mass_through = 0;   // mass of the tokens ranked before it, plus its own
  int index = -1;         // its position in the candidate arrays, -1 when not there
};

template <class T>
struct RankOrder {
  Shared& sh;
  Cluster& cl;
  RowSlice<T> row;
  sample_radix::BucketMap map;
  Gathered& held;  // in shared memory: it lives through the whole row

  __device__ unsigned int bucket_size(int b) const { return sh.count[b + 1] - sh.count[b]; }

  // Pass over the slice: the bucket histogram (count; with kMass also the fixed-point mass),
  // merged over the cluster and turned into exclusive prefix sums. With min_p_threshold <= 1,
  // also returns the cluster's total weight of the tokens with w >= min_p_threshold.
  template <bool kMass>
  __device__ u64 histogram(float min_p_threshold) {
    // Every thread is done with the previous histogram: a top-k row whose k-th bucket is
    // too large to gather reads the count-only one (bucket_at) right before building the
    // one with masses. A warp that read counts being zeroed would take other branches and
    // miss barriers (with clusters, a hang).
    __syncthreads();
    for (int i = threadIdx.x; i <= kBuckets; i += kThreads) {
      sh.count[i] = 0;
      sh.mass[i] = 0;
    }
    __syncthreads();
    unsigned int dead = 0;  // counted in a register: at low temperature most tokens are dead
    u64 min_p_mass[1] = {0};
    row.for_each([&](float x, int) {
      const float d = map.distance(x);
      const int b = map.bucket(d);
      if (b == kDeadBucket) {
        ++dead;
        return;
      }
      atomicAdd(&sh.count[b], 1u);
      if (kMass) {
        const float w = expf(-d);
        const u64 fw = fixed_weight(w);
        add_mass(&sh.mass[b], fw);
        if (w >= min_p_threshold) min_p_mass[0] += fw;
      }
    });
    if (dead) atomicAdd(&sh.count[kDeadBucket], dead);
    cluster_merge(cl, kBuckets, [&](int i) {
      merge_entry(cl, sh.count, i, SumOp{});
      merge_entry(cl, sh.mass, i, SumOp{});
    });
    prefix_scan();
    if (kMass && min_p_threshold <= 1.f) cluster_reduce(min_p_mass, sh, cl, SumOp{});
    return min_p_mass[0];
  }

  // Exclusive prefix over threads of two values per thread; also their totals.
  __device__ void block_exclusive_scan(u64 (&v)[2], u64 (&total)[2]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 inc[2] = {v[0], v[1]};
#pragma unroll
    for (int o = 1; o < 32; o <<= 1)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const u64 up = __shfl_up_sync(0xffffffffu, inc[i], o);
        if (lane >= o) inc[i] += up;
      }
    __syncthreads();  // a previous reduction may still read warp_part
    if (lane == 31)
#pragma unroll
      for (int i = 0; i < 2; ++i) sh.warp_part[i][warp] = inc[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      u64 before = 0, all = 0;
      for (int w = 0; w < kWarps; ++w) {
        const u64 part = sh.warp_part[i][w];
        before += w < warp ? part : 0;
        all += part;
      }
      total[i] = all;
      v[i] = before + inc[i] - v[i];
    }
  }

  // count[] and mass[] become exclusive prefix sums; entry kBuckets holds the totals.
  __device__ void prefix_scan() {
    constexpr int kPer = kBuckets / kThreads;
    const int first = threadIdx.x * kPer;
    unsigned int c[kPer];
    u64 m[kPer];
    u64 v[2] = {0, 0}, total[2];
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      c[q] = sh.count[first + q];
      m[q] = sh.mass[first + q];
      v[0] += c[q];
      v[1] += m[q];
    }
    block_exclusive_scan(v, total);  // its barriers also order the reads above before the writes below
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      sh.count[first + q] = static_cast<unsigned int>(v[0]);
      sh.mass[first + q] = v[1];
      v[0] += c[q];
      v[1] += m[q];
    }
    if (threadIdx.x == 0) {
      sh.count[kBuckets] = static_cast<unsigned int>(total[0]);
      sh.mass[kBuckets] = total[1];
    }
    __syncthreads();
  }

  // The bucket holding position `target`: the last b with prefix[b] <= target (so never an
  // empty bucket while target < the total). Every thread computes it from shared memory.
  template <class P>
  __device__ static int bucket_at(const P* prefix, u64 target) {
    int lo = 0, hi = kBuckets - 1;  // prefix[0] == 0 <= target
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (static_cast<u64>(prefix[mid]) <= target) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }
  __device__ int bucket_at(bool by_count, u64 target) const {
    return by_count ? bucket_at(sh.count, target) : bucket_at(sh.mass, target);
  }

  // Pass over the slice: the tokens of the buckets in `want` (at most kCapacity, as the
  // histogram says) into every block's candidate arrays, sorted by rank key, with their
  // inclusive mass prefix.
  __device__ void gather(const Gathered& want) {
    __syncthreads();  // every thread is done with the previous candidates
    if (threadIdx.x == 0) sh.found = 0;
    __syncthreads();
    const BucketRange r0 = want.range[0], r1 = want.num_ranges > 1 ? want.range[1] : BucketRange{};
    row.for_each([&](float x, int i) {
      const int b = map.bucket(map.distance(x));
      if (!(r0.lo <= b && b <= r0.hi) && !(r1.lo <= b && b <= r1.hi)) return;
      const unsigned int slot = atomicAdd(&sh.found, 1u);
      if (slot < kCapacity) sh.cand_mass[slot] = sample_radix::rank_key(x, static_cast<uint32_t>(i));
    });
    cl.sync();  // every block's finds are staged
    int at = 0;
    for (int b = 0; b < cl.size; ++b) {
      const int n_b = static_cast<int>(min(*cl.remote(&sh.found, b), static_cast<unsigned int>(kCapacity)));
      const u64* staged = cl.remote(sh.cand_mass, b);
      for (int i = threadIdx.x; i < n_b && at + i < kCapacity; i += kThreads) sh.cand_key[at + i] = staged[i];
      at += n_b;
    }
    cl.sync();  // every block has copied the others' finds before cand_mass is reused
    const int n = min(at, kCapacity);
    if (threadIdx.x == 0) {
      held = want;
      held.n = n;
    }
    sort_candidates(n);  // its barriers publish `held`
    candidate_mass_prefix(n);
  }

  // Bitonic sort of cand_key[0, n) into descending order (rank order); keys are distinct,
  // so every block gets the same array.
  __device__ void sort_candidates(int n) {
    int size = 1;
    while (size < n) size <<= 1;
    for (int i = n + static_cast<int>(threadIdx.x); i < size; i += kThreads) sh.cand_key[i] = 0;  // no token's key
    __syncthreads();
    for (int k = 2; k <= size; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int p = threadIdx.x; p < size / 2; p += kThreads) {
          const int lo = ((p & ~(j - 1)) << 1) | (p & (j - 1)), hi = lo + j;
          const u64 a = sh.cand_key[lo], b = sh.cand_key[hi];
          if ((lo & k) == 0 ? a < b : a > b) {
            sh.cand_key[lo] = b;
            sh.cand_key[hi] = a;
          }
        }
        __syncthreads();
      }
    }
  }

  // The fixed-point weight of a candidate, from its key (the same float logit as its pass).
  __device__ u64 candidate_weight(int i) const {
    return fixed_weight(expf(-map.distance(sample_radix::key_logit(sh.cand_key[i]))));
  }

  __device__ void candidate_mass_prefix(int n) {
    constexpr int kPer = kCapacity / kThreads;
    const int first = threadIdx.x * kPer;
    u64 w[kPer];
    u64 v[2] = {0, 0}, total[2];
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      w[q] = first + q < n ? candidate_weight(first + q) : 0;
      v[0] += w[q];
    }
    block_exclusive_scan(v, total);
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      v[0] += w[q];
      if (first + q < n) sh.cand_mass[first + q] = v[0];
    }
    __syncthreads();
  }

  // After gathering buckets 0..hi from a count-only histogram: the mass prefix of every
  // bucket from the candidates (buckets past hi read as empty).
  __device__ void mass_prefix_from_candidates() {
    for (int b = threadIdx.x; b <= kBuckets; b += kThreads) {
      const int first = static_cast<int>(min(sh.count[b], static_cast<unsigned int>(held.n)));
      sh.mass[b] = first > 0 ? sh.cand_mass[first - 1] : 0;
    }
    __syncthreads();
  }

  // The token at `target` if its bucket is held.
  __device__ Hit locate(bool by_count, u64 target) const {
    Hit h;
    h.bucket = bucket_at(by_count, target);
    const int j = held.range_of(h.bucket);
    if (j < 0 || held.n == 0) return h;
    const BucketRange r = held.range_at(j);
    const int first = held.base_at(j);
    const int last = min(first + static_cast<int>(sh.count[r.hi + 1] - sh.count[r.lo]), held.n) - 1;
    if (last < first) return h;
    const u64 before = first > 0 ? sh.cand_mass[first - 1] : 0;
    int i;
    if (by_count) {
      i = first + static_cast<int>(target - sh.count[r.lo]);
    } else {  // the first candidate whose inclusive mass exceeds the target
      const u64 goal = before + (target - sh.mass[r.lo]);
      int lo = first, hi = last;
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (sh.cand_mass[mid] > goal) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      i = lo;
    }
    i = min(max(i, first), last);
    h.found = true;
    h.key = sh.cand_key[i];
    h.mass_through = sh.mass[r.lo] + (sh.cand_mass[i] - before);
    h.index = i;
    return h;
  }

  // The token at `target`: held, or gathered with its bucket (and `extra` when both fit),
  // or selected inside its bucket by radix passes when the bucket alone is too large.
  __device__ Hit fetch(bool by_count, u64 target, BucketRange extra = {}) {
    Hit h = locate(by_count, target);
    if (h.found) return h;
    const int b = h.bucket;
    if (b != kDeadBucket && bucket_size(b) <= kCapacity) {
      Gathered want;
      want.num_ranges = 1;
      want.range[0] = {b, b};
      extra.hi = min(extra.hi, kDeadBucket - 1);
      if (!extra.empty()) {
        if (extra.lo <= b + 1 && b <= extra.hi + 1) {  // overlapping or adjacent: one range
          want.range[0] = {min(b, extra.lo), max(b, extra.hi)};
        } else {
          want.num_ranges = 2;
          want.range[0] = extra.lo < b ? extra : BucketRange{b, b};
          want.range[1] = extra.lo < b ? BucketRange{b, b} : extra;
        }
        if (gathered_size(want) > kCapacity) {
          want.num_ranges = 1;
          want.range[0] = {b, b};
        }
      }
      want.base[0] = 0;
      if (want.num_ranges == 2)
        want.base[1] = static_cast<int>(sh.count[want.range[0].hi + 1] - sh.count[want.range[0].lo]);
      gather(want);
      h = locate(by_count, target);
      if (h.found) return h;
    }
    return radix_in_bucket(b, target - (by_count ? static_cast<u64>(sh.count[b]) : sh.mass[b]), by_count);
  }

  __device__ unsigned int gathered_size(const Gathered& want) const {
    unsigned int n = 0;
#pragma unroll
    for (int j = 0; j < kMaxRanges; ++j)
      if (j < want.num_ranges) n += sh.count[want.range[j].hi + 1] - sh.count[want.range[j].lo];
    return n;
  }

  // Gathers buckets 0..hi (hi < kDeadBucket, at most kCapacity tokens).
  __device__ void gather_prefix(int hi) {
    Gathered want;
    want.num_ranges = 1;
    want.range[0] = {0, hi};
    gather(want);
  }

  // The token at `target` (counted within bucket b) by radix select over the rank keys of
  // the bucket's tokens, 8 bits per pass from the top; stops once the chosen digit holds
  // one token. For buckets too large to gather (a row of thousands of equal logits).
  __device__ Hit radix_in_bucket(int b, u64 target, bool by_count) {
    u64 prefix = 0, mask = 0, above = 0;
    for (int shift = 56;; shift -= 8) {
      __syncthreads();  // every thread has read the previous level's tables
      for (int i = threadIdx.x; i < kDigits; i += kThreads) {
        sh.digit_count[i] = 0;
        sh.digit_mass[i] = 0;
        sh.digit_key[i] = 0;
      }
      __syncthreads();
      row.for_each([&](float x, int i) {
        const float d = map.distance(x);
        if (map.bucket(d) != b) return;
        const u64 key = sample_radix::rank_key(x, static_cast<uint32_t>(i));
        if ((key & mask) != prefix) return;
        const int digit = static_cast<int>((key >> shift) & 0xFF);
        atomicAdd(&sh.digit_count[digit], 1u);
        const u64 w = b == kDeadBucket ? 0 : fixed_weight(expf(-d));
        if (w) add_mass(&sh.digit_mass[digit], w);
        atomicMax(&sh.digit_key[digit], key);
      });
      cluster_merge(cl, kDigits, [&](int i) {
        merge_entry(cl, sh.digit_count, i, SumOp{});
        merge_entry(cl, sh.digit_mass, i, SumOp{});
        merge_entry(cl, sh.digit_key, i, MaxOp{});
      });
      if (threadIdx.x < 32) pick_digit(by_count, target);
      __syncthreads();
      const int digit = sh.pick_digit;
      target = sh.pick_target;
      above += sh.pick_above;
      prefix |= static_cast<u64>(digit) << shift;
      mask |= u64{0xFF} << shift;
      if (sh.digit_count[digit] <= 1 || shift == 0) {
        Hit h;
        h.found = true;
        h.bucket = b;
        h.key = sh.digit_key[digit];
        h.mass_through = sh.mass[b] + above + sh.digit_mass[digit];
        return h;
      }
    }
  }

  // Warp 0: the digit where the running weight from the top digit down crosses `target`.
  // Lane l owns digits 255 - 8l ... 248 - 8l.
  __device__ void pick_digit(bool by_count, u64 target) {
    const int lane = threadIdx.x;
    u64 wsum = 0, msum = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int d = kDigits - 1 - 8 * lane - j;
      wsum += by_count ? static_cast<u64>(sh.digit_count[d]) : sh.digit_mass[d];
      msum += sh.digit_mass[d];
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
    if (target >= total) target = total > 0 ? total - 1 : 0;  // guard; the totals are exact
    const unsigned int owners = __ballot_sync(0xffffffffu, wsum > 0 && wex <= target && target < wex + wsum);
    const int owner = owners ? __ffs(owners) - 1 : 31;
    if (lane == owner) {
      u64 acc = wex, macc = mex;
      int digit = 8 * (31 - lane);  // the lane's lowest digit if nothing matches
      for (int j = 0; j < 8; ++j) {
        const int d = kDigits - 1 - 8 * lane - j;
        const u64 wd = by_count ? static_cast<u64>(sh.digit_count[d]) : sh.digit_mass[d];
        if (target < acc + wd) {
          digit = d;
          break;
        }
        acc += wd;
        macc += sh.digit_mass[d];
      }
      sh.pick_digit = digit;
      sh.pick_target = target - acc;
      sh.pick_above = macc;
    }
  }

  // min-p over the held candidates 0..last (all tokens ranked up to `last`): the weight of
  // those with w >= threshold. Every block holds the same candidates: no cluster step.
  __device__ u64 min_p_mass_of_candidates(int last, float threshold) {
    u64 v[1] = {0};
    for (int i = threadIdx.x; i <= last; i += kThreads) {
      const float w = expf(-map.distance(sample_radix::key_logit(sh.cand_key[i])));
      if (w >= threshold) v[0] += sh.cand_mass[i] - (i > 0 ? sh.cand_mass[i - 1] : 0);
    }
    block_reduce(v, sh, SumOp{});
    return v[0];
  }

  // Pass over the slice: min-p over the tokens with rank key >= lower.
  __device__ u64 min_p_mass_streaming(u64 lower, float threshold) {
    u64 v[1] = {0};
    row.for_each([&](float x, int i) {
      if (sample_radix::rank_key(x, static_cast<uint32_t>(i)) < lower) return;
      const float d = map.distance(x);
      if (!(d < sample_radix::kLiveDistance)) return;  // weight 0
      const float w = expf(-d);
      if (w >= threshold) v[0] += fixed_weight(w);
    });
    cluster_reduce(v, sh, cl, SumOp{});
    return v[0];
  }
};

}  // namespace fk::ops::sample_gpu
