// Philox4x32-10 (Salmon et al., SC'11): a counter-based RNG. Element i of the stream
// (seed, offset) is a pure function of (seed, offset, i), so CPU and GPU produce the same
// bits in any order and any parallel decomposition.
//
// Stream layout (fixed; inputs of recorded results depend on it):
//   block b = i / 4, lane = i % 4
//   counter = {lo32(b), hi32(b), lo32(offset), hi32(offset)}, key = {lo32(seed), hi32(seed)}
//
// Distributions (all bitwise identical on host and device):
//   uniform: lane value x -> (x >> 8) * 2^-24 in [0, 1)
//   int:     lane value x -> lo + (x * (hi - lo)) >> 32
//   normal:  Box-Muller on lane pairs (0,1) and (2,3) of a block: with a = v[2k], b = v[2k+1],
//            u1 = ((a >> 8) + 1) * 2^-24 in (0, 1], u2 = (b >> 8) * 2^-24 in [0, 1),
//            r = sqrt(-2 log u1); lane 2k gets r cos(2 pi u2), lane 2k+1 gets r sin(2 pi u2).
//            log / sincos are fk::rmath's (fk/reproducible_math.h), not the C library's.
#pragma once
#include <cstdint>

#include "fk/reproducible_math.h"
#include "fk/tensor_view.h"  // FK_HD

namespace fk {

struct PhiloxBlock {
  uint32_t v[4];
};

FK_HD inline PhiloxBlock philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                       uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// The 4 raw 32-bit values of block b.
FK_HD inline PhiloxBlock philox_block(uint64_t seed, uint64_t offset, uint64_t block) {
  return philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                       static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

FK_HD inline uint32_t philox_u32(uint64_t seed, uint64_t offset, uint64_t i) {
  return philox_block(seed, offset, i / 4).v[i % 4];
}

// Uniform in [0, 1): the top 24 bits scaled by 2^-24 (exact in float on both sides).
FK_HD inline float u32_to_unit_float(uint32_t x) { return rmath::mul(static_cast<float>(x >> 8), 0x1p-24f); }

FK_HD inline float philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return u32_to_unit_float(philox_u32(seed, offset, i));
}

// Uniform in (0, 1]: never 0, so that its log is finite.
FK_HD inline float u32_to_unit_float_nonzero(uint32_t x) {
  return rmath::mul(static_cast<float>((x >> 8) + 1u), 0x1p-24f);
}

// Integer in [lo, hi) from a lane value by multiply-shift (hi - lo at most 2^32; bias
// below (hi-lo)/2^32: irrelevant for test data).
FK_HD inline int64_t u32_to_int(uint32_t x, int64_t lo, int64_t hi) {
  const uint64_t range = static_cast<uint64_t>(hi - lo);
  return lo + static_cast<int64_t>((static_cast<uint64_t>(x) * range) >> 32);
}
FK_HD inline int64_t philox_int(uint64_t seed, uint64_t offset, uint64_t i, int64_t lo, int64_t hi) {
  return u32_to_int(philox_u32(seed, offset, i), lo, hi);
}

// Standard normal for `lane` (0..3) of a block: Box-Muller on the lane's pair.
FK_HD inline float normal_from_block(const PhiloxBlock& b, unsigned lane) {
  const unsigned first = lane & 2u;
  const float u1 = u32_to_unit_float_nonzero(b.v[first]);
  const float u2 = u32_to_unit_float(b.v[first + 1]);
  const float r = rmath::sqrt(rmath::mul(-2.0f, rmath::log_positive(u1)));
  float s, c;
  rmath::sincos_two_pi(u2, &s, &c);
  return rmath::mul(r, (lane & 1u) ? s : c);
}

FK_HD inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  return normal_from_block(philox_block(seed, offset, i / 4), static_cast<unsigned>(i % 4));
}

}  // namespace fk
