// Scalar conversions between float and the narrow floating types, bit-exact with CUDA's
// conversion intrinsics (__float2half_rn, __float2bfloat16_rn, __nv_cvt_float_to_fp8):
// round to nearest, ties to even; NaN stays NaN. Usable from host and device code.
//
// Saturation (fp8 only): CUDA's __NV_SATFINITE clamps finite overflow (and +-Inf) to the
// largest finite value; __NV_NOSAT maps overflow to NaN (e4m3fn has no Inf) or Inf (e5m2).
#pragma once
#include <cstdint>
#include <cstring>

#include "fk/tensor_view.h"  // FK_HD

namespace fk {

enum class Fp8Saturation : uint8_t { satfinite, nosat };

FK_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
FK_HD inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// ---- bf16 --------------------------------------------------------------------------
FK_HD inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }
FK_HD inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

// ---- f16 ---------------------------------------------------------------------------
FK_HD inline float f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    // subnormal: value = man * 2^-24, exact in float
    float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

// Generic float -> narrow float with `man_bits` mantissa bits, exponent bias `bias`, and
// a maximum finite biased exponent/mantissa. Handles RNE including subnormals exactly.
namespace detail {
// Rounds |f| (non-NaN, finite) to a narrow format; returns the magnitude bits, or
// `overflow` if the rounded value exceeds max_bits.
FK_HD inline uint32_t round_to_narrow(float af, int man_bits, int bias, uint32_t max_bits,
                                      uint32_t overflow) {
  uint32_t u = float_bits(af);
  int exp = static_cast<int>(u >> 23) - 127;          // unbiased
  uint32_t man = (u & 0x7fffffu) | (u >= 0x00800000u ? 0x800000u : 0);  // with hidden bit
  if (u < 0x00800000u) exp = -126;                    // float subnormal
  if (u == 0) return 0;
  int min_exp = 1 - bias;                              // smallest normal exponent
  // Number of low bits of the 24-bit significand to drop.
  int shift = 23 - man_bits;
  if (exp < min_exp) shift += (min_exp - exp);
  uint32_t result;
  if (shift >= 25) {
    result = 0;  // rounds to zero (even below half the smallest subnormal)
  } else {
    uint32_t kept = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (kept & 1u))) ++kept;
    // Reassemble: for normals kept includes the hidden bit at position man_bits.
    int biased = (exp < min_exp) ? 0 : exp + bias;
    if (biased == 0) {
      result = kept;  // subnormal (kept may carry into the normal range: still correct)
    } else {
      // kept has hidden bit at man_bits; carry may bump it to man_bits+1.
      if (kept >> (man_bits + 1)) {
        kept >>= 1;
        ++biased;
      }
      result = (static_cast<uint32_t>(biased) << man_bits) | (kept & ((1u << man_bits) - 1u));
    }
  }
  return result > max_bits ? overflow : result;
}
}  // namespace detail

FK_HD inline uint16_t float_to_f16(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // canonical NaN
  if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  uint32_t m = detail::round_to_narrow(bits_float(a), 10, 15, 0x7bffu, 0x7c00u);
  return static_cast<uint16_t>(sign | m);
}

// ---- fp8 e4m3fn ----------------------------------------------------------------------
FK_HD inline float f8e4m3fn_to_float(uint8_t b) {
  uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  uint32_t exp = (b >> 3) & 0xfu;
  uint32_t man = b & 0x7u;
  if (exp == 0xf && man == 0x7) return bits_float(0x7fffffffu);  // NaN (sign dropped, as CUDA)
  if (exp == 0) {
    float v = static_cast<float>(man) * 0.001953125f;  // man * 2^-9
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}
FK_HD inline uint8_t float_to_f8e4m3fn(float f, Fp8Saturation sat = Fp8Saturation::satfinite) {
  uint32_t u = float_bits(f);
  uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;  // NaN
  if (a == 0x7f800000u) return sat == Fp8Saturation::satfinite ? static_cast<uint8_t>(sign | 0x7e) : 0x7f;
  uint32_t m = detail::round_to_narrow(bits_float(a), 3, 7, 0x7eu,
                                       sat == Fp8Saturation::satfinite ? 0x7eu : 0x7fu);
  if (m == 0x7f) return 0x7f;
  return static_cast<uint8_t>(sign | m);
}

// ---- fp8 e5m2 ------------------------------------------------------------------------
FK_HD inline float f8e5m2_to_float(uint8_t b) { return f16_to_float(static_cast<uint16_t>(b) << 8); }
FK_HD inline uint8_t float_to_f8e5m2(float f, Fp8Saturation sat = Fp8Saturation::satfinite) {
  uint32_t u = float_bits(f);
  uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;  // NaN
  if (a == 0x7f800000u) return static_cast<uint8_t>(sign | (sat == Fp8Saturation::satfinite ? 0x7b : 0x7c));
  uint32_t m = detail::round_to_narrow(bits_float(a), 2, 15, 0x7bu,
                                       sat == Fp8Saturation::satfinite ? 0x7bu : 0x7cu);
  return static_cast<uint8_t>(sign | m);
}

}  // namespace fk
