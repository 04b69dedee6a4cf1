// Float math that gives the same bits on the host and on the device.
//
// glibc's and CUDA's logf / sinf / cosf are different approximations, so anything built on
// them differs between CPU and GPU in the last bits. The functions here use only
// operations that IEEE 754 defines exactly — +, *, fma and sqrt, each correctly rounded
// to nearest — in a fixed order, so both sides compute the same value:
//   device: __fadd_rn / __fmul_rn / __fmaf_rn / __fsqrt_rn, which nvcc never contracts
//           into FMAs or reorders (plain a * b + c would be fused under --fmad=true);
//   host:   plain + and * and std::fma / std::sqrt. g++ contracts a * b + c into an FMA
//           whenever the target has one (-mfma, -march=native; even in -std=c++20 mode),
//           so every product that feeds an addition is written as an explicit fma and no
//           plain product ever reaches a plain addition: there is nothing left to contract,
//           whatever -ffp-contract says. Remaining mul -> add pairs are exact products
//           (scaling by powers of two), where fusing changes nothing.
// Not supported: -ffast-math / --use_fast_math (reassociation, approximate sqrt) and x87
// excess precision (32-bit x86). Accuracy: log_positive and sincos_two_pi are within about
// 1 ulp of the true values (tested in tests/core/philox_test.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fk/tensor_view.h"  // FK_HD

namespace fk::rmath {

FK_HD inline float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FK_HD inline float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FK_HD inline float fma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
FK_HD inline float sqrt(float a) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// Natural log of a positive, finite, normal float.
// x = 2^e * m with m in [sqrt(1/2), sqrt(2)); log(x) = e*ln2 + log1p(f), f = m - 1 (exact).
// log1p(f) = f + f^2 * P(f), P a degree-9 polynomial fitted to (log1p(f) - f) / f^2 on
// [sqrt(1/2) - 1, sqrt(2) - 1] (max error 5e-9: a few hundredths of an ulp of the result).
FK_HD inline float log_positive(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  int e = static_cast<int>(bits >> 23) - 127;
  uint32_t m_bits = (bits & 0x007fffffu) | 0x3f800000u;  // m in [1, 2)
  if (m_bits > 0x3fb504f3u) {                             // m > sqrt(2): use m / 2 (exact)
    m_bits -= 0x00800000u;
    ++e;
  }
  float m;
  memcpy(&m, &m_bits, 4);
  const float f = add(m, -1.0f);  // exact (Sterbenz)
  float p = 0x1.15425cp-4f;
  p = fma(p, f, -0x1.d962f2p-4f);
  p = fma(p, f, 0x1.e3d33ap-4f);
  p = fma(p, f, -0x1.fcc1aep-4f);
  p = fma(p, f, 0x1.237a56p-3f);
  p = fma(p, f, -0x1.5559e6p-3f);
  p = fma(p, f, 0x1.99a13p-3f);
  p = fma(p, f, -0x1.000008p-2f);
  p = fma(p, f, 0x1.55554ep-2f);
  p = fma(p, f, -0x1p-1f);
  const float log1p_f = fma(mul(f, f), p, f);
  // e * ln2 with ln2 split in two floats (hi + lo = ln2 to 2^-54): e*ln2_lo first, then
  // e*ln2_hi, each added with a single rounding.
  const float ef = static_cast<float>(e);
  return fma(ef, 0x1.62e43p-1f, fma(ef, -0x1.05c61p-29f, log1p_f));
}

// sin(2*pi*u) and cos(2*pi*u) for u in [0, 1).
// The reduction is exact: 4u = q + y with integer quadrant q and y in [-1/2, 1/2], so
// 2*pi*u = (pi/2)(q + y) and sin/cos(pi/2 * y) come from Taylor polynomials in y^2
// (truncation error below 3e-9 relative on |y| <= 1/2).
FK_HD inline void sincos_two_pi(float u, float* sin_out, float* cos_out) {
  const float t = mul(u, 4.0f);  // exact
  int q = static_cast<int>(t);   // 0..3
  float y = add(t, -static_cast<float>(q));  // [0, 1), exact
  if (y > 0.5f) {
    y = add(y, -1.0f);  // exact
    ++q;
  }
  const float y2 = mul(y, y);
  // sin(pi/2 y) = y * S(y^2)
  float s = 0x1.507834p-13f;
  s = fma(s, y2, -0x1.32d2ccp-8f);
  s = fma(s, y2, 0x1.466bc6p-4f);
  s = fma(s, y2, -0x1.4abbcep-1f);
  s = fma(s, y2, 0x1.921fb6p+0f);
  s = mul(s, y);
  // cos(pi/2 y) = 1 + y^2 * C(y^2)
  float c = -0x1.a6d1f2p-16f;
  c = fma(c, y2, 0x1.e1f506p-11f);
  c = fma(c, y2, -0x1.55d3c8p-6f);
  c = fma(c, y2, 0x1.03c1fp-2f);
  c = fma(c, y2, -0x1.3bd3ccp+0f);
  c = fma(c, y2, 1.0f);
  switch (q & 3) {
    case 0: *sin_out = s; *cos_out = c; break;
    case 1: *sin_out = c; *cos_out = -s; break;
    case 2: *sin_out = -s; *cos_out = -c; break;
    default: *sin_out = -c; *cos_out = s; break;
  }
}

}  // namespace fk::rmath
