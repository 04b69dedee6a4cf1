// Scalar conversions between float/double and the narrow floating types, bit-exact with
// CUDA's conversion intrinsics on sm_90 — NaN bit patterns included — and usable from host
// and device code (the same integer code runs on both sides):
//
//   fk                         CUDA
//   float_to_f16(x)            __float2half_rn(x)
//   float_to_bf16(x)           __float2bfloat16_rn(x)
//   float_to_f8e4m3fn(x, s)    __nv_cvt_float_to_fp8(x, s, __NV_E4M3)
//   float_to_f8e5m2(x, s)      __nv_cvt_float_to_fp8(x, s, __NV_E5M2)
//   double_to_f16(x)           __double2half(x)
//   double_to_bf16(x)          __double2bfloat16(x)
//   double_to_f8e4m3fn(x, s)   __nv_cvt_double_to_fp8(x, s, __NV_E4M3)
//   double_to_f8e5m2(x, s)     __nv_cvt_double_to_fp8(x, s, __NV_E5M2)
//   f16_to_float(h)            __half2float(h)
//   bf16_to_float(h)           __bfloat162float(h)
//   f8e4m3fn_to_f16(b)         __nv_cvt_fp8_to_halfraw(b, __NV_E4M3).x
//   f8e5m2_to_f16(b)           __nv_cvt_fp8_to_halfraw(b, __NV_E5M2).x
//   f8e4m3fn_to_float(b)       __half2float(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3))
//   f8e5m2_to_float(b)         __half2float(__nv_cvt_fp8_to_halfraw(b, __NV_E5M2))
//
// Semantics (what CUDA does):
// - Rounding is to nearest, ties to even, including into and out of the subnormal range;
//   -0 stays -0, and values that round to zero keep their sign.
// - NaN results are canonical and unsigned: float 0x7fffffff, f16 0x7fff, bf16 0x7fff,
//   f8 0x7f. Two exceptions, both CUDA's: bf16_to_float is a plain bit shift (payload and
//   sign kept), and double_to_f8* keeps the NaN's sign (and, for e5m2, its top payload bit:
//   0x7e or 0x7f), because __nv_cvt_double_to_fp8 does.
// - f16 and bf16 overflow to +-Inf, as IEEE rounding does.
// - fp8 overflow: a value at or past the midpoint between the largest finite number and
//   the next step (e4m3fn: 448 -> 464, e5m2: 57344 -> 61440) overflows; exactly 464 is a
//   tie and rounds to 448 (even). __NV_SATFINITE (Fp8Saturation::satfinite) clamps
//   overflow and +-Inf to +-max finite (0x7e / 0x7b with sign). __NV_NOSAT
//   (Fp8Saturation::nosat) maps overflow and +-Inf to NaN with the input's sign for e4m3fn
//   (0x7f / 0xff: e4m3fn has no Inf), and to +-Inf (0x7c / 0xfc) for e5m2.
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
FK_HD inline uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
FK_HD inline double bits_double(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

namespace detail {

// Round-to-nearest-even of a positive, finite, normal value into a narrow binary format
// with `man_bits` stored mantissa bits and exponent bias `bias`.
// The value is sig * 2^(exp - msb): `sig` holds the significand with its leading one at
// bit `msb`, `exp` is the unbiased exponent. Returns the format's exponent|mantissa bits.
// A result past the largest finite number comes back as a larger bit pattern: the caller
// decides between Inf, NaN and saturation.
FK_HD inline uint32_t round_to_narrow(uint64_t sig, int msb, int exp, int man_bits, int bias) {
  const int min_exp = 1 - bias;  // exponent of the smallest normal number
  // Quantum (weight of the last kept bit): 2^(exp - man_bits) for normals, fixed at
  // 2^(min_exp - man_bits) in the subnormal range. `shift` = number of sig bits below it.
  const int shift = msb - man_bits + (exp < min_exp ? min_exp - exp : 0);
  if (shift > msb + 1) return 0;  // below half the smallest subnormal: rounds to zero
  const uint64_t quanta = sig >> shift;
  const uint64_t rest = sig & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  const uint64_t rounded = quanta + ((rest > half || (rest == half && (quanta & 1))) ? 1 : 0);
  // For normals `rounded` carries the hidden bit at position man_bits, so adding it to
  // (biased exponent - 1) << man_bits gives the encoding; a carry out of the mantissa
  // (rounding up to the next binade) bumps the exponent field by itself. In the subnormal
  // range the exponent field is 0 and a carry lands exactly on the smallest normal.
  const uint32_t exp_field = exp < min_exp ? 0u : static_cast<uint32_t>(exp + bias - 1);
  return (exp_field << man_bits) + static_cast<uint32_t>(rounded);
}

// |x| of a finite float (bits without sign) rounded into the format. Float subnormals
// (< 2^-126) are far below half the smallest subnormal of f16/e4m3fn/e5m2: zero.
FK_HD inline uint32_t round_float_to_narrow(uint32_t abs_bits, int man_bits, int bias) {
  if (abs_bits < 0x00800000u) return 0;
  return round_to_narrow((abs_bits & 0x007fffffu) | 0x00800000u, 23, static_cast<int>(abs_bits >> 23) - 127,
                         man_bits, bias);
}

// |x| of a finite double rounded into the format. Double subnormals (< 2^-1022) are below
// half the smallest subnormal of every narrow format (bf16's is 2^-133): zero.
FK_HD inline uint32_t round_double_to_narrow(uint64_t abs_bits, int man_bits, int bias) {
  if (abs_bits < 0x0010000000000000ull) return 0;
  return round_to_narrow((abs_bits & 0x000fffffffffffffull) | 0x0010000000000000ull, 52,
                         static_cast<int>(abs_bits >> 52) - 1023, man_bits, bias);
}

FK_HD inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

// fp8 overflow (finite past the threshold, or Inf): max finite or the NaN/Inf pattern.
FK_HD inline uint8_t fp8_overflow(uint8_t sign, uint8_t max_finite, uint8_t nosat_pattern, Fp8Saturation sat) {
  return static_cast<uint8_t>(sign | (sat == Fp8Saturation::satfinite ? max_finite : nosat_pattern));
}

}  // namespace detail

// ---- f16 (1-5-10, bias 15, max 65504) -------------------------------------------------
FK_HD inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(man ? 0x7fffffffu : (sign | 0x7f800000u));  // canonical NaN / Inf
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24, exact in float (no rounding, so no host/device drift).
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return bits_float(sign | float_bits(v));
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}
FK_HD inline uint16_t float_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fff;
  if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | detail::min_u32(detail::round_float_to_narrow(a, 10, 15), 0x7c00u));
}
FK_HD inline uint16_t double_to_f16(double d) {
  const uint64_t u = double_bits(d);
  const uint32_t sign = static_cast<uint32_t>(u >> 48) & 0x8000u;
  const uint64_t a = u & 0x7fffffffffffffffull;
  // NaN: the device instruction keeps the sign and the top payload bits, quieted (CUDA's
  // host fallback returns 0x7fff instead; the device is what kernels run on).
  if (a > 0x7ff0000000000000ull) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 42) & 0x3ffu));
  if (a == 0x7ff0000000000000ull) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | detail::min_u32(detail::round_double_to_narrow(a, 10, 15), 0x7c00u));
}

// ---- bf16 (1-8-7, bias 127: the top half of a float) ----------------------------------
FK_HD inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }
FK_HD inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  // Round to nearest even on the low 16 bits; a carry walks into the exponent (and to
  // Inf past the largest finite), which is exactly IEEE rounding. Inf stays Inf.
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
FK_HD inline uint16_t double_to_bf16(double d) {
  const uint64_t u = double_bits(d);
  const uint32_t sign = static_cast<uint32_t>(u >> 48) & 0x8000u;
  const uint64_t a = u & 0x7fffffffffffffffull;
  // NaN: sign and top payload bits kept, quieted, as the device instruction does.
  if (a > 0x7ff0000000000000ull) return static_cast<uint16_t>(sign | 0x7fc0u | ((a >> 45) & 0x7fu));
  if (a == 0x7ff0000000000000ull) return static_cast<uint16_t>(sign | 0x7f80u);
  return static_cast<uint16_t>(sign | detail::min_u32(detail::round_double_to_narrow(a, 7, 127), 0x7f80u));
}

// ---- fp8 e4m3fn (1-4-3, bias 7, max 448, no Inf, NaN = 0x7f/0xff) -------------------
FK_HD inline uint16_t f8e4m3fn_to_f16(uint8_t b) {
  if ((b & 0x7fu) == 0x7fu) return 0x7fff;
  const uint16_t sign = static_cast<uint16_t>((b & 0x80u) << 8);
  const uint32_t exp = (b >> 3) & 0xfu;
  const uint32_t man = b & 0x7u;
  if (exp == 0) {
    // Zero or subnormal man * 2^-9: an f16 normal, 2^-9 = f16 exponent field 6.
    if (man == 0) return sign;
    const uint32_t lead = man >= 4 ? 2u : (man >= 2 ? 1u : 0u);  // position of man's top bit
    const uint32_t f16_exp = 6u + lead;                           // man * 2^-9 = 1.x * 2^(lead - 9)
    const uint32_t f16_man = (man << (10 - lead)) & 0x3ffu;
    return static_cast<uint16_t>(sign | (f16_exp << 10) | f16_man);
  }
  return static_cast<uint16_t>(sign | ((exp + 8u) << 10) | (man << 7));
}
FK_HD inline float f8e4m3fn_to_float(uint8_t b) { return f16_to_float(f8e4m3fn_to_f16(b)); }

FK_HD inline uint8_t float_to_f8e4m3fn(float f, Fp8Saturation sat = Fp8Saturation::satfinite) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  const uint32_t m = a == 0x7f800000u ? 0xffu : detail::round_float_to_narrow(a, 3, 7);
  if (m > 0x7eu) return detail::fp8_overflow(sign, 0x7e, 0x7f, sat);
  return static_cast<uint8_t>(sign | m);
}
FK_HD inline uint8_t double_to_f8e4m3fn(double d, Fp8Saturation sat = Fp8Saturation::satfinite) {
  const uint64_t u = double_bits(d);
  const uint8_t sign = static_cast<uint8_t>((u >> 56) & 0x80u);
  const uint64_t a = u & 0x7fffffffffffffffull;
  if (a > 0x7ff0000000000000ull) return static_cast<uint8_t>(sign | 0x7fu);  // CUDA keeps the sign here
  const uint32_t m = a == 0x7ff0000000000000ull ? 0xffu : detail::round_double_to_narrow(a, 3, 7);
  if (m > 0x7eu) return detail::fp8_overflow(sign, 0x7e, 0x7f, sat);
  return static_cast<uint8_t>(sign | m);
}

// ---- fp8 e5m2 (1-5-2, bias 15, max 57344, IEEE-like Inf/NaN: the top byte of an f16) ---
FK_HD inline uint16_t f8e5m2_to_f16(uint8_t b) {
  if ((b & 0x7fu) > 0x7cu) return 0x7fff;
  return static_cast<uint16_t>(static_cast<uint16_t>(b) << 8);
}
FK_HD inline float f8e5m2_to_float(uint8_t b) { return f16_to_float(f8e5m2_to_f16(b)); }

FK_HD inline uint8_t float_to_f8e5m2(float f, Fp8Saturation sat = Fp8Saturation::satfinite) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  const uint32_t m = a == 0x7f800000u ? 0xffu : detail::round_float_to_narrow(a, 2, 15);
  if (m > 0x7bu) return detail::fp8_overflow(sign, 0x7b, 0x7c, sat);
  return static_cast<uint8_t>(sign | m);
}
FK_HD inline uint8_t double_to_f8e5m2(double d, Fp8Saturation sat = Fp8Saturation::satfinite) {
  const uint64_t u = double_bits(d);
  const uint8_t sign = static_cast<uint8_t>((u >> 56) & 0x80u);
  const uint64_t a = u & 0x7fffffffffffffffull;
  // CUDA: NaN -> 0x7e | top two payload bits | sign, which is 0x7e or 0x7f with the sign.
  if (a > 0x7ff0000000000000ull) return static_cast<uint8_t>(sign | 0x7eu | ((a >> 50) & 1u));
  const uint32_t m = a == 0x7ff0000000000000ull ? 0xffu : detail::round_double_to_narrow(a, 2, 15);
  if (m > 0x7bu) return detail::fp8_overflow(sign, 0x7b, 0x7c, sat);
  return static_cast<uint8_t>(sign | m);
}

// ---- widening to double (exact; NaN as the float conversion gives it) -----------------
FK_HD inline double f16_to_double(uint16_t h) { return static_cast<double>(f16_to_float(h)); }
FK_HD inline double bf16_to_double(uint16_t h) { return static_cast<double>(bf16_to_float(h)); }
FK_HD inline double f8e4m3fn_to_double(uint8_t b) { return static_cast<double>(f8e4m3fn_to_float(b)); }
FK_HD inline double f8e5m2_to_double(uint8_t b) { return static_cast<double>(f8e5m2_to_float(b)); }

}  // namespace fk
