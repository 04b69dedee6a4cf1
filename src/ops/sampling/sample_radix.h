// The arithmetic of the CUDA sampler (sample.cu), shared with its sequential model in the
// tests: rank keys, fixed-point weights and the integer targets of top-p and the draw.
#pragma once
#include <cstdint>

#include "fk/dtype_convert.h"  // float_bits, bits_float
#include "fk/philox.h"

namespace fk::ops::sample_radix {

// Weights w = exp((x - max) / T) in (0, 1] are held as W = round(w * 2^kFixedBits). Sums of
// V such values stay exact in 64 bits for V <= kMaxVocab.
inline constexpr int kFixedBits = 40;
inline constexpr int64_t kMaxVocab = int64_t{1} << 23;

// Order-preserving map of a float to uint32 (-0 ties with +0).
FK_HD inline uint32_t logit_key(float x) {
  const uint32_t b = float_bits(x == 0.f ? 0.f : x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Larger key = earlier in rank order (logit descending, then token id ascending); distinct
// for distinct tokens.
FK_HD inline uint64_t rank_key(float x, uint32_t id) {
  return (static_cast<uint64_t>(logit_key(x)) << 32) | static_cast<uint64_t>(0xFFFFFFFFu - id);
}
FK_HD inline uint32_t key_id(uint64_t key) { return 0xFFFFFFFFu - static_cast<uint32_t>(key); }

// The logit of a logit_key (-0 comes back as +0, which has the same weight and rank).
FK_HD inline float key32_logit(uint32_t k) { return bits_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k); }
FK_HD inline float key_logit(uint64_t key) { return key32_logit(static_cast<uint32_t>(key >> 32)); }

// floor(Z * u) for the draw u = (philox >> 8) * 2^-24, exactly.
FK_HD inline uint64_t draw_target(uint64_t Z, uint32_t philox_bits) {
  const uint64_t u24 = philox_bits >> 8;
#if defined(__CUDA_ARCH__)
  return __umul64hi(Z, u24 << 40);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Z) * u24) >> 24);
#endif
}

// floor(p * Z): the top-p cut lands on the survivor whose prefix mass crosses it.
FK_HD inline uint64_t top_p_limit(float p, uint64_t Z) {
  return p > 0.f ? static_cast<uint64_t>(static_cast<double>(p) * static_cast<double>(Z)) : 0;
}

}  // namespace fk::ops::sample_radix
