// fk/dtype_convert.h against the independent reference in dtype_convert_reference.h:
// every narrow bit pattern exhaustively (decode and round trips), every representable
// value / midpoint / midpoint +- 1 ulp for float and double inputs, the specials, and
// random sweeps. The GPU test (dtype_convert_gpu_test.cu) runs CUDA's own intrinsics over
// all 2^32 floats; this one is the fast CPU half that CI runs.
#include "fk/dtype_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "core/dtype_convert_reference.h"
#include "fk/element.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using test::expected_from_double;
using test::expected_from_float;
using test::Fp8Mode;
using test::hex;
using test::kBF16;
using test::kE4M3;
using test::kE5M2;
using test::kF16;
using test::NarrowFormat;

// Counts mismatches of got(x) against want(x) over xs; reports the count and the first few.
template <class T>
void expect_all(const std::vector<T>& xs, const std::function<uint32_t(T)>& got,
                const std::function<uint32_t(T)>& want, const std::string& what) {
  size_t bad = 0;
  std::string first;
  for (T x : xs) {
    const uint32_t g = got(x), w = want(x);
    if (g == w) continue;
    if (++bad <= 8) {
      uint64_t xb = 0;
      std::memcpy(&xb, &x, sizeof(T));
      first += "\n  input " + hex(xb) + " (" + std::to_string(static_cast<double>(x)) + "): got " + hex(g) +
               ", want " + hex(w);
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << xs.size() << " mismatch" << first;
}

Fp8Saturation sat_of(Fp8Mode m) { return m == Fp8Mode::satfinite ? Fp8Saturation::satfinite : Fp8Saturation::nosat; }

// The six float -> narrow conversions against the reference over xs.
void check_float_conversions(const std::vector<float>& xs, const std::string& label) {
  expect_all<float>(xs, [](float x) { return float_to_f16(x); },
                    [](float x) { return expected_from_float(kF16, x); }, label + " float_to_f16");
  expect_all<float>(xs, [](float x) { return float_to_bf16(x); },
                    [](float x) { return expected_from_float(kBF16, x); }, label + " float_to_bf16");
  for (Fp8Mode m : {Fp8Mode::satfinite, Fp8Mode::nosat}) {
    const std::string mode = m == Fp8Mode::satfinite ? " satfinite" : " nosat";
    expect_all<float>(xs, [m](float x) { return float_to_f8e4m3fn(x, sat_of(m)); },
                      [m](float x) { return expected_from_float(kE4M3, x, m); }, label + " float_to_f8e4m3fn" + mode);
    expect_all<float>(xs, [m](float x) { return float_to_f8e5m2(x, sat_of(m)); },
                      [m](float x) { return expected_from_float(kE5M2, x, m); }, label + " float_to_f8e5m2" + mode);
  }
}

void check_double_conversions(const std::vector<double>& xs, const std::string& label) {
  expect_all<double>(xs, [](double x) { return double_to_f16(x); },
                     [](double x) { return expected_from_double(kF16, x); }, label + " double_to_f16");
  expect_all<double>(xs, [](double x) { return double_to_bf16(x); },
                     [](double x) { return expected_from_double(kBF16, x); }, label + " double_to_bf16");
  for (Fp8Mode m : {Fp8Mode::satfinite, Fp8Mode::nosat}) {
    const std::string mode = m == Fp8Mode::satfinite ? " satfinite" : " nosat";
    expect_all<double>(xs, [m](double x) { return double_to_f8e4m3fn(x, sat_of(m)); },
                       [m](double x) { return expected_from_double(kE4M3, x, m); },
                       label + " double_to_f8e4m3fn" + mode);
    expect_all<double>(xs, [m](double x) { return double_to_f8e5m2(x, sat_of(m)); },
                       [m](double x) { return expected_from_double(kE5M2, x, m); },
                       label + " double_to_f8e5m2" + mode);
  }
}

std::vector<uint32_t> all_patterns(const NarrowFormat& f) {
  std::vector<uint32_t> v(f.num_patterns());
  for (uint32_t i = 0; i < f.num_patterns(); ++i) v[i] = i;
  return v;
}

// ---- narrow -> float / double ----------------------------------------------------------

TEST(DTypeConvert, NarrowToFloatEveryPattern) {
  expect_all<uint32_t>(all_patterns(kF16), [](uint32_t b) { return float_bits(f16_to_float(static_cast<uint16_t>(b))); },
                       [](uint32_t b) { return test::expected_float_bits(kF16, b); }, "f16_to_float");
  expect_all<uint32_t>(all_patterns(kBF16),
                       [](uint32_t b) { return float_bits(bf16_to_float(static_cast<uint16_t>(b))); },
                       [](uint32_t b) { return test::expected_float_bits(kBF16, b); }, "bf16_to_float");
  expect_all<uint32_t>(all_patterns(kE4M3),
                       [](uint32_t b) { return float_bits(f8e4m3fn_to_float(static_cast<uint8_t>(b))); },
                       [](uint32_t b) { return test::expected_float_bits(kE4M3, b); }, "f8e4m3fn_to_float");
  expect_all<uint32_t>(all_patterns(kE5M2),
                       [](uint32_t b) { return float_bits(f8e5m2_to_float(static_cast<uint8_t>(b))); },
                       [](uint32_t b) { return test::expected_float_bits(kE5M2, b); }, "f8e5m2_to_float");
}

TEST(DTypeConvert, Fp8ToF16EveryPattern) {
  // The f16 pattern of the exact value (exact in f16); NaN -> canonical 0x7fff.
  const auto want = [](const NarrowFormat& f) {
    return [&f](uint32_t b) {
      const double v = test::decode(f, b);
      return std::isnan(v) ? 0x7fffu : test::reference_round(kF16, v);
    };
  };
  expect_all<uint32_t>(all_patterns(kE4M3), [](uint32_t b) { return f8e4m3fn_to_f16(static_cast<uint8_t>(b)); },
                       want(kE4M3), "f8e4m3fn_to_f16");
  expect_all<uint32_t>(all_patterns(kE5M2), [](uint32_t b) { return f8e5m2_to_f16(static_cast<uint8_t>(b)); },
                       want(kE5M2), "f8e5m2_to_f16");
}

TEST(DTypeConvert, NarrowToDoubleIsExact) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const double want_f16 = test::decode(kF16, b), want_bf16 = test::decode(kBF16, b);
    const double got_f16 = f16_to_double(static_cast<uint16_t>(b)), got_bf16 = bf16_to_double(static_cast<uint16_t>(b));
    if (std::isnan(want_f16)) EXPECT_TRUE(std::isnan(got_f16)); else ASSERT_EQ(double_bits(got_f16), double_bits(want_f16)) << hex(b);
    if (std::isnan(want_bf16)) EXPECT_TRUE(std::isnan(got_bf16)); else ASSERT_EQ(double_bits(got_bf16), double_bits(want_bf16)) << hex(b);
  }
  for (uint32_t b = 0; b < 0x100; ++b) {
    const double w4 = test::decode(kE4M3, b), w5 = test::decode(kE5M2, b);
    const double g4 = f8e4m3fn_to_double(static_cast<uint8_t>(b)), g5 = f8e5m2_to_double(static_cast<uint8_t>(b));
    if (std::isnan(w4)) EXPECT_TRUE(std::isnan(g4)); else ASSERT_EQ(double_bits(g4), double_bits(w4)) << hex(b);
    if (std::isnan(w5)) EXPECT_TRUE(std::isnan(g5)); else ASSERT_EQ(double_bits(g5), double_bits(w5)) << hex(b);
  }
}

// ---- round trips ----------------------------------------------------------------------

TEST(DTypeConvert, RoundTripsEveryPattern) {
  // narrow -> float -> narrow and narrow -> double -> narrow give the pattern back; NaN
  // comes back canonical; e5m2 Inf saturates to the largest finite under satfinite.
  const auto canonical = [](const NarrowFormat& f, uint32_t b, Fp8Mode m) -> uint32_t {
    if (test::is_nan_pattern(f, b)) return f.total_bits == 16 ? 0x7fffu : 0x7fu;
    if (test::is_inf_pattern(f, b) && f.total_bits == 8 && m == Fp8Mode::satfinite)
      return (b & f.sign_bit()) | f.max_finite;
    return b;
  };
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_f16(f16_to_float(h)), canonical(kF16, b, Fp8Mode::nosat)) << hex(b);
    ASSERT_EQ(float_to_bf16(bf16_to_float(h)), canonical(kBF16, b, Fp8Mode::nosat)) << hex(b);
    // Through double a NaN keeps its sign and payload (the device's double conversion).
    const double d16 = f16_to_double(h), db16 = bf16_to_double(h);
    ASSERT_EQ(double_to_f16(d16), std::isnan(d16) ? test::nan_from_double(kF16, d16) : canonical(kF16, b, Fp8Mode::nosat))
        << hex(b);
    ASSERT_EQ(double_to_bf16(db16),
              std::isnan(db16) ? test::nan_from_double(kBF16, db16) : canonical(kBF16, b, Fp8Mode::nosat))
        << hex(b);
  }
  for (uint32_t b = 0; b < 0x100; ++b) {
    const auto q = static_cast<uint8_t>(b);
    for (Fp8Mode m : {Fp8Mode::satfinite, Fp8Mode::nosat}) {
      // The float NaN from an fp8 NaN is the positive canonical one, so it comes back 0x7f.
      ASSERT_EQ(float_to_f8e4m3fn(f8e4m3fn_to_float(q), sat_of(m)), canonical(kE4M3, b, m)) << hex(b);
      ASSERT_EQ(float_to_f8e5m2(f8e5m2_to_float(q), sat_of(m)), canonical(kE5M2, b, m)) << hex(b);
      ASSERT_EQ(double_to_f8e4m3fn(f8e4m3fn_to_double(q), sat_of(m)), canonical(kE4M3, b, m)) << hex(b);
      ASSERT_EQ(double_to_f8e5m2(f8e5m2_to_double(q), sat_of(m)), canonical(kE5M2, b, m)) << hex(b);
      // fp8 -> f16 -> fp8 (f16 holds every fp8 value).
      ASSERT_EQ(float_to_f8e4m3fn(f16_to_float(f8e4m3fn_to_f16(q)), sat_of(m)), canonical(kE4M3, b, m)) << hex(b);
      ASSERT_EQ(float_to_f8e5m2(f16_to_float(f8e5m2_to_f16(q)), sat_of(m)), canonical(kE5M2, b, m)) << hex(b);
    }
  }
}

// ---- float / double -> narrow ----------------------------------------------------------

TEST(DTypeConvert, FloatToNarrowInterestingValues) {
  check_float_conversions(test::interesting_values<float>(), "interesting");
}

TEST(DTypeConvert, DoubleToNarrowInterestingValues) {
  check_double_conversions(test::interesting_values<double>(), "interesting");
}

TEST(DTypeConvert, FloatToNarrowRandom) {
  std::mt19937_64 rng(test::seed_for("FloatToNarrowRandom"));
  std::vector<float> xs(1 << 18);
  for (auto& x : xs) x = test::float_of(static_cast<uint32_t>(rng()));  // every exponent, NaNs included
  check_float_conversions(xs, "random bits");
  // Dense over the narrow formats' ranges (subnormals to past overflow).
  check_float_conversions(test::random_values_in_range<float>(rng, 1 << 18, -28, 18), "random f16/fp8 range");
  check_float_conversions(test::random_values_in_range<float>(rng, 1 << 16, -126, 127), "random bf16 range");
}

TEST(DTypeConvert, DoubleToNarrowRandom) {
  std::mt19937_64 rng(test::seed_for("DoubleToNarrowRandom"));
  std::vector<double> xs(1 << 17);
  for (auto& x : xs) x = test::double_of(rng());
  check_double_conversions(xs, "random bits");
  check_double_conversions(test::random_values_in_range<double>(rng, 1 << 18, -28, 18), "random f16/fp8 range");
  check_double_conversions(test::random_values_in_range<double>(rng, 1 << 16, -136, 129), "random bf16 range");
}

// The documented edge cases, spelled out (also a readable statement of the semantics).
TEST(DTypeConvert, DocumentedEdgeCases) {
  const float inf = INFINITY, nan = NAN;
  // NaN: canonical, sign dropped.
  EXPECT_EQ(float_to_f16(-nan), 0x7fff);
  EXPECT_EQ(float_to_bf16(-nan), 0x7fff);
  EXPECT_EQ(float_to_f8e4m3fn(-nan), 0x7f);
  EXPECT_EQ(float_to_f8e5m2(-nan, Fp8Saturation::nosat), 0x7f);
  EXPECT_EQ(float_bits(f16_to_float(0xfe01)), 0x7fffffffu);
  EXPECT_EQ(float_bits(f8e4m3fn_to_float(0xff)), 0x7fffffffu);
  EXPECT_EQ(f8e5m2_to_f16(0xfd), 0x7fff);
  EXPECT_EQ(float_bits(bf16_to_float(0xffc1)), 0xffc10000u);  // a bit shift, payload kept
  // double -> fp8 keeps the NaN's sign (CUDA's __nv_cvt_double_to_fp8).
  EXPECT_EQ(double_to_f8e4m3fn(-static_cast<double>(nan)), 0xff);
  // Signed zero and underflow keep the sign.
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f8e4m3fn(-1e-10f), 0x80);
  EXPECT_EQ(float_to_f8e4m3fn(std::ldexp(1.0f, -10)), 0x00);          // half the smallest subnormal: tie -> 0
  EXPECT_EQ(float_to_f8e4m3fn(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  // e4m3fn: 448 max; 464 is the tie between 448 and (NaN) 480 and rounds to 448.
  EXPECT_EQ(float_to_f8e4m3fn(464.0f), 0x7e);
  EXPECT_EQ(float_to_f8e4m3fn(464.0f, Fp8Saturation::nosat), 0x7e);
  EXPECT_EQ(float_to_f8e4m3fn(std::nextafter(464.0f, 1e9f)), 0x7e);
  EXPECT_EQ(float_to_f8e4m3fn(std::nextafter(464.0f, 1e9f), Fp8Saturation::nosat), 0x7f);
  EXPECT_EQ(float_to_f8e4m3fn(-500.0f, Fp8Saturation::nosat), 0xff);
  EXPECT_EQ(float_to_f8e4m3fn(-inf), 0xfe);
  EXPECT_EQ(float_to_f8e4m3fn(-inf, Fp8Saturation::nosat), 0xff);
  // e5m2: 57344 max; 61440 is the tie with 65536 (even) and overflows.
  EXPECT_EQ(float_to_f8e5m2(std::nextafter(61440.0f, 0.0f), Fp8Saturation::nosat), 0x7b);
  EXPECT_EQ(float_to_f8e5m2(61440.0f, Fp8Saturation::nosat), 0x7c);
  EXPECT_EQ(float_to_f8e5m2(61440.0f), 0x7b);
  EXPECT_EQ(float_to_f8e5m2(-inf), 0xfb);
  EXPECT_EQ(float_to_f8e5m2(-inf, Fp8Saturation::nosat), 0xfc);
  // f16 / bf16 overflow to Inf.
  EXPECT_EQ(float_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_bf16(3.4e38f), 0x7f80);
  EXPECT_EQ(float_to_bf16(-inf), 0xff80);
  // double -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, float would make it a tie.
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(double_to_f16(above_tie), 0x3c01);
  EXPECT_EQ(float_to_f16(static_cast<float>(above_tie)), 0x3c00);
}

// store_element rounds doubles to narrow dtypes once (no detour through float).
TEST(DTypeConvert, StoreElementRoundsOnce) {
  const double above_tie_f16 = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const double above_tie_bf16 = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  const double above_tie_e4m3 = 1.0 + std::ldexp(1.0, -4) + std::ldexp(1.0, -40);
  const double above_tie_e5m2 = 1.0 + std::ldexp(1.0, -3) + std::ldexp(1.0, -40);
  uint16_t h = 0;
  uint8_t b = 0;
  store_element(&h, DType::f16, above_tie_f16);
  EXPECT_EQ(h, 0x3c01);
  store_element(&h, DType::bf16, above_tie_bf16);
  EXPECT_EQ(h, 0x3f81);
  store_element(&b, DType::f8e4m3fn, above_tie_e4m3);
  EXPECT_EQ(b, 0x39);
  store_element(&b, DType::f8e5m2, above_tie_e5m2);
  EXPECT_EQ(b, 0x3d);
  // Random doubles: store_element agrees with the direct conversions and load_element
  // reads back the narrow value exactly.
  std::mt19937_64 rng(test::seed_for("StoreElementRoundsOnce"));
  for (double x : test::random_values_in_range<double>(rng, 1 << 14, -20, 17)) {
    store_element(&h, DType::f16, x);
    ASSERT_EQ(h, double_to_f16(x));
    ASSERT_EQ(load_element(&h, DType::f16), f16_to_double(h));
    store_element(&h, DType::bf16, x);
    ASSERT_EQ(h, double_to_bf16(x));
    ASSERT_EQ(load_element(&h, DType::bf16), bf16_to_double(h));
    store_element(&b, DType::f8e4m3fn, x);
    ASSERT_EQ(b, double_to_f8e4m3fn(x));
    ASSERT_EQ(load_element(&b, DType::f8e4m3fn), f8e4m3fn_to_double(b));
    store_element(&b, DType::f8e5m2, x);
    ASSERT_EQ(b, double_to_f8e5m2(x));
    ASSERT_EQ(load_element(&b, DType::f8e5m2), f8e5m2_to_double(b));
  }
}

}  // namespace
}  // namespace fk
