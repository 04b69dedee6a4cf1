// The first level of the CUDA sampler (sample.cu), shared with its sequential model in the
// tests: a map from a logit to one of kNumBuckets buckets by its weight's exponent.
//
// With d = (max - x) / T (computed as (max - x) * inv_t) the weight is w = exp(-d). The map
// is monotone: a token earlier in rank order (larger logit) never lands in a later bucket,
// so every bucket holds a contiguous run of the rank order and the runs come in bucket
// order. Live buckets 0 .. kNumBuckets - 2 split [0, span) evenly, span = min(the row's d
// range, kLiveDistance); the last bucket holds the dead tokens, d >= kLiveDistance, whose
// fixed-point weight round(w * 2^40) is 0 (w <= e^-29.5 < 2^-42, a margin of 3x below the
// 2^-41 where rounding reaches 1), so every token of weight > 0 is live.
#pragma once
#include "fk/tensor_view.h"  // FK_HD

namespace fk::ops::sample_radix {

inline constexpr int kNumBuckets = 2048;
inline constexpr int kDeadBucket = kNumBuckets - 1;
inline constexpr float kLiveDistance = 29.5f;

struct BucketMap {
  float max_logit = 0, inv_t = 1, scale = 0;

  // min_finite: the smallest finite logit of the row (spreads narrow rows over all buckets).
  FK_HD static BucketMap make(float max_logit, float min_finite, float inv_t) {
    BucketMap m{max_logit, inv_t, 0.f};
    const float range = (max_logit - min_finite) * inv_t;
    const float span = range < kLiveDistance ? range : kLiveDistance;
    if (span > 0.f) {
      m.scale = static_cast<float>(kNumBuckets - 1) / span;
      if (!(m.scale <= 1e30f)) m.scale = 1e30f;  // keeps d * scale finite for d < kLiveDistance
    }
    return m;
  }
  // >= 0; the weight is exp(-d). (x - max) * inv_t == -d exactly, so expf(-d) is the
  // weight expf((x - max) * inv_t).
  FK_HD float distance(float x) const { return (max_logit - x) * inv_t; }
  FK_HD int bucket(float d) const {
    if (!(d < kLiveDistance)) return kDeadBucket;  // also -inf logits (and NaN)
    const float s = d * scale;
    return s < static_cast<float>(kDeadBucket - 1) ? static_cast<int>(s) : kDeadBucket - 1;
  }
};

}  // namespace fk::ops::sample_radix
