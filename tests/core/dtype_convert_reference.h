// An independent, slow reference for the narrow float formats, used to test
// fk/dtype_convert.h: values decoded from the bit fields in double, rounding by searching
// the table of every representable magnitude (ties to the even pattern), and CUDA's
// documented NaN / Inf / saturation rules spelled out case by case. Shares no code with
// the fast conversions. Also generates the "interesting" inputs: every representable
// value, the midpoints to its neighbours, one float/double ulp either side of each, and
// the specials.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fk::test {

enum class Fp8Mode { satfinite, nosat };

struct NarrowFormat {
  const char* name;
  int total_bits;   // 16 or 8
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee_specials;    // top exponent is Inf (man 0) / NaN; else (e4m3fn) only all-ones is NaN
  uint32_t max_finite;   // largest finite magnitude pattern
  uint32_t sign_bit() const { return 1u << (total_bits - 1); }
  uint32_t num_patterns() const { return 1u << total_bits; }
};

inline const NarrowFormat kF16{"f16", 16, 5, 10, 15, true, 0x7bff};
inline const NarrowFormat kBF16{"bf16", 16, 8, 7, 127, true, 0x7f7f};
inline const NarrowFormat kE4M3{"f8e4m3fn", 8, 4, 3, 7, false, 0x7e};
inline const NarrowFormat kE5M2{"f8e5m2", 8, 5, 2, 15, true, 0x7b};

// Value of a magnitude pattern read as a plain number (no specials): exact in double.
// Valid up to max_finite + 1, the step past the largest finite number.
inline double magnitude_value(const NarrowFormat& f, uint32_t mag) {
  const uint32_t e = mag >> f.man_bits;
  const uint32_t m = mag & ((1u << f.man_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits);
  return std::ldexp(static_cast<double>((1u << f.man_bits) + m), static_cast<int>(e) - f.bias - f.man_bits);
}

inline bool is_nan_pattern(const NarrowFormat& f, uint32_t bits) {
  const uint32_t mag = bits & (f.sign_bit() - 1);
  if (!f.ieee_specials) return mag == f.sign_bit() - 1;
  const uint32_t inf = (f.sign_bit() - 1) & ~((1u << f.man_bits) - 1);
  return mag > inf;
}
inline bool is_inf_pattern(const NarrowFormat& f, uint32_t bits) {
  if (!f.ieee_specials) return false;
  const uint32_t mag = bits & (f.sign_bit() - 1);
  return mag == ((f.sign_bit() - 1) & ~((1u << f.man_bits) - 1));
}

// Value of a bit pattern (NaN for NaN patterns, +-Inf, signed zero).
inline double decode(const NarrowFormat& f, uint32_t bits) {
  const bool neg = (bits & f.sign_bit()) != 0;
  double v;
  if (is_nan_pattern(f, bits)) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (is_inf_pattern(f, bits)) {
    v = std::numeric_limits<double>::infinity();
  } else {
    v = magnitude_value(f, bits & (f.sign_bit() - 1));
  }
  return neg ? -v : v;
}

// The magnitude table 0 .. max_finite + 1 (increasing), built once per format.
inline const std::vector<double>& magnitude_table(const NarrowFormat& f) {
  static std::vector<double> tables[4];
  const int k = &f == &kF16 ? 0 : &f == &kBF16 ? 1 : &f == &kE4M3 ? 2 : 3;
  if (tables[k].empty()) {
    for (uint32_t m = 0; m <= f.max_finite + 1; ++m) tables[k].push_back(magnitude_value(f, m));
  }
  return tables[k];
}

// Round a non-NaN double (any magnitude, Inf included) to the format, to nearest with
// ties to the even pattern, with CUDA's overflow rules. Comparisons only: the midpoints
// of neighbouring narrow values are exact in double.
inline uint32_t reference_round(const NarrowFormat& f, double x, Fp8Mode mode = Fp8Mode::satfinite) {
  const uint32_t sign = std::signbit(x) ? f.sign_bit() : 0u;
  const double a = std::fabs(x);
  const std::vector<double>& t = magnitude_table(f);
  const uint32_t past_max = f.max_finite + 1;
  uint32_t mag;
  if (a >= t[past_max]) {
    mag = past_max;  // at or beyond the step past the largest finite number (Inf too)
  } else {
    // Largest pattern whose value is <= a.
    const uint32_t lo = static_cast<uint32_t>(std::upper_bound(t.begin(), t.end(), a) - t.begin()) - 1;
    const double mid = (t[lo] + t[lo + 1]) / 2;
    if (a < mid) mag = lo;
    else if (a > mid) mag = lo + 1;
    else mag = (lo % 2 == 0) ? lo : lo + 1;
  }
  if (mag == past_max) {  // overflow
    if (f.total_bits == 16) return sign | past_max;  // f16 / bf16: the Inf pattern
    if (mode == Fp8Mode::satfinite) return sign | f.max_finite;
    return sign | (f.ieee_specials ? past_max /* e5m2 Inf */ : 0x7fu /* e4m3fn NaN */);
  }
  return sign | mag;
}

// CUDA's NaN results.
inline uint32_t nan_from_float(const NarrowFormat& f) { return f.total_bits == 16 ? 0x7fffu : 0x7fu; }
inline uint32_t nan_from_double(const NarrowFormat& f, double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  if (f.total_bits == 16) {  // sign, quiet bit and the top payload bits (measured on an H100)
    const uint32_t sign16 = (b >> 63) ? 0x8000u : 0u;
    const int man = f.man_bits;
    const uint32_t exp_ones = ((1u << (15 - man)) - 1u) << man;
    const uint32_t payload = static_cast<uint32_t>((b & 0xfffffffffffffull) >> (52 - man));
    return sign16 | exp_ones | (1u << (man - 1)) | payload;
  }
  const uint32_t sign = (b >> 63) ? 0x80u : 0u;
  if (!f.ieee_specials) return sign | 0x7fu;
  return sign | 0x7eu | static_cast<uint32_t>((b >> 50) & 3u);
}

inline uint32_t expected_from_float(const NarrowFormat& f, float x, Fp8Mode mode = Fp8Mode::satfinite) {
  if (std::isnan(x)) return nan_from_float(f);
  return reference_round(f, static_cast<double>(x), mode);
}
inline uint32_t expected_from_double(const NarrowFormat& f, double x, Fp8Mode mode = Fp8Mode::satfinite) {
  if (std::isnan(x)) return nan_from_double(f, x);
  return reference_round(f, x, mode);
}

// Expected float bits of narrow -> float: the exact value; NaN is 0x7fffffff except for
// bf16, whose conversion is a bit shift.
inline uint32_t expected_float_bits(const NarrowFormat& f, uint32_t bits) {
  if (&f == &kBF16) return bits << 16;
  const double v = decode(f, bits);
  if (std::isnan(v)) return 0x7fffffffu;
  const float fv = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &fv, 4);
  return u;
}

inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline double double_of(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

// Every representable magnitude of each format, the midpoints to its upper neighbour, and
// the values one ulp (of T) either side of those; both signs; plus specials.
template <class T>
std::vector<T> interesting_values() {
  std::vector<T> out;
  const auto add = [&out](double d) {
    const T v = static_cast<T>(d);
    if (static_cast<double>(v) != d || std::isinf(v)) return;  // not exact in T
    for (T s : {v, -v}) {
      out.push_back(s);
      out.push_back(std::nextafter(s, std::numeric_limits<T>::infinity()));
      out.push_back(std::nextafter(s, -std::numeric_limits<T>::infinity()));
    }
  };
  for (const NarrowFormat* f : {&kF16, &kBF16, &kE4M3, &kE5M2}) {
    const std::vector<double>& t = magnitude_table(*f);
    for (size_t m = 0; m < t.size(); ++m) {
      add(t[m]);
      if (m + 1 < t.size()) add((t[m] + t[m + 1]) / 2);
    }
    add(2 * t.back());
  }
  const T inf = std::numeric_limits<T>::infinity();
  for (T v : {T(0), -T(0), inf, -inf, std::numeric_limits<T>::max(), -std::numeric_limits<T>::max(),
              std::numeric_limits<T>::min(), -std::numeric_limits<T>::min(), std::numeric_limits<T>::denorm_min(),
              -std::numeric_limits<T>::denorm_min(), T(1e30), T(-1e30)}) {
    out.push_back(v);
  }
  // Subnormals of T across their range.
  for (int k = 0; k < 400; ++k) {
    const T v = std::ldexp(T(1) + T(k) / 400, std::numeric_limits<T>::min_exponent - 2 - k % 20);
    out.push_back(v);
    out.push_back(-v);
  }
  // NaNs: quiet and signalling, both signs, assorted payloads.
  if constexpr (sizeof(T) == 4) {
    for (uint32_t b : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu, 0x7fa00000u,
                       0xffa00000u, 0x7fe00000u, 0x7f900000u, 0x7fb00001u})
      out.push_back(float_of(b));
  } else {
    for (uint64_t b : {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull, 0xfff0000000000001ull,
                       0x7fffffffffffffffull, 0xffffffffffffffffull, 0x7ff4000000000000ull, 0xfff4000000000000ull,
                       0x7ffc000000000000ull, 0xfffc000000000000ull, 0x7ff2000000000000ull, 0x7ff8000000000001ull})
      out.push_back(double_of(b));
  }
  return out;
}

// Random T with exponents spread over [min_exp, max_exp] (both signs, random mantissa):
// dense coverage of the narrow formats' ranges, which uniform random bits would mostly miss.
template <class T>
std::vector<T> random_values_in_range(std::mt19937_64& rng, size_t n, int min_exp, int max_exp) {
  std::vector<T> out(n);
  std::uniform_int_distribution<int> exp_dist(min_exp, max_exp);
  std::uniform_real_distribution<T> man_dist(T(1), T(2));
  for (auto& v : out) {
    v = std::ldexp(man_dist(rng), exp_dist(rng));
    if (rng() & 1) v = -v;
  }
  return out;
}

inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace fk::test
