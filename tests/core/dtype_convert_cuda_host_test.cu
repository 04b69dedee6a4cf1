// fk/dtype_convert.h against CUDA's own conversion functions compiled for the HOST:
// cuda_fp16.h / cuda_bf16.h / cuda_fp8.h carry software versions of __float2half_rn,
// __half2float, __nv_cvt_float_to_fp8 etc. for host code, written to give the device's
// results. No GPU needed (CUDA builds only). The device instructions themselves are
// compared over all 2^32 floats by dtype_convert_gpu_test.cu.
#include <cmath>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <random>

#include "core/dtype_convert_reference.h"
#include "fk/dtype_convert.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using test::hex;

uint16_t bits16(__half h) { return static_cast<__half_raw>(h).x; }
uint16_t bits16(__nv_bfloat16 h) { return static_cast<__nv_bfloat16_raw>(h).x; }
__half half_of(uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half(r);
}
__nv_bfloat16 bf16_of(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return __nv_bfloat16(r);
}

// One conversion's mismatches over a set of inputs: count plus the first few.
struct Tally {
  std::string name;
  size_t bad = 0, total = 0;
  std::string first;
  void add(uint64_t input, uint32_t got, uint32_t want) {
    ++total;
    if (got == want) return;
    if (++bad <= 8) first += "\n  input " + hex(input) + ": fk " + hex(got) + ", cuda " + hex(want);
  }
  void expect_clean() const { EXPECT_EQ(bad, 0u) << name << ": " << bad << " of " << total << " mismatch" << first; }
};

void compare_float(const std::vector<float>& xs) {
  Tally t[6] = {{"float_to_f16"}, {"float_to_bf16"}, {"float_to_f8e4m3fn satfinite"},
                {"float_to_f8e4m3fn nosat"}, {"float_to_f8e5m2 satfinite"}, {"float_to_f8e5m2 nosat"}};
  for (float x : xs) {
    const uint64_t in = float_bits(x);
    t[0].add(in, float_to_f16(x), bits16(__float2half_rn(x)));
    t[1].add(in, float_to_bf16(x), bits16(__float2bfloat16_rn(x)));
    t[2].add(in, float_to_f8e4m3fn(x, Fp8Saturation::satfinite), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
    t[3].add(in, float_to_f8e4m3fn(x, Fp8Saturation::nosat), __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3));
    t[4].add(in, float_to_f8e5m2(x, Fp8Saturation::satfinite), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
    t[5].add(in, float_to_f8e5m2(x, Fp8Saturation::nosat), __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2));
  }
  for (const Tally& k : t) k.expect_clean();
}

void compare_double(const std::vector<double>& xs) {
  Tally t[6] = {{"double_to_f16"}, {"double_to_bf16"}, {"double_to_f8e4m3fn satfinite"},
                {"double_to_f8e4m3fn nosat"}, {"double_to_f8e5m2 satfinite"}, {"double_to_f8e5m2 nosat"}};
  for (double x : xs) {
    const uint64_t in = double_bits(x);
    // NaN: CUDA's host fallback returns 0x7fff while the device keeps sign and payload;
    // fk follows the device (checked on the GPU by dtype_convert_gpu_test).
    if (!std::isnan(x)) {
      t[0].add(in, double_to_f16(x), bits16(__double2half(x)));
      t[1].add(in, double_to_bf16(x), bits16(__double2bfloat16(x)));
    }
    t[2].add(in, double_to_f8e4m3fn(x, Fp8Saturation::satfinite), __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
    t[3].add(in, double_to_f8e4m3fn(x, Fp8Saturation::nosat), __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E4M3));
    t[4].add(in, double_to_f8e5m2(x, Fp8Saturation::satfinite), __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
    t[5].add(in, double_to_f8e5m2(x, Fp8Saturation::nosat), __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E5M2));
  }
  for (const Tally& k : t) k.expect_clean();
}

TEST(DTypeConvertCudaHost, NarrowToFloatEveryPattern) {
  Tally f16{"f16_to_float"}, bf16{"bf16_to_float"}, e4{"f8e4m3fn_to_f16"}, e5{"f8e5m2_to_f16"},
      e4f{"f8e4m3fn_to_float"}, e5f{"f8e5m2_to_float"};
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<uint16_t>(b);
    f16.add(b, float_bits(f16_to_float(h)), float_bits(__half2float(half_of(h))));
    bf16.add(b, float_bits(bf16_to_float(h)), float_bits(__bfloat162float(bf16_of(h))));
  }
  for (uint32_t b = 0; b < 0x100; ++b) {
    const auto q = static_cast<uint8_t>(b);
    const uint16_t h4 = __nv_cvt_fp8_to_halfraw(q, __NV_E4M3).x, h5 = __nv_cvt_fp8_to_halfraw(q, __NV_E5M2).x;
    e4.add(b, f8e4m3fn_to_f16(q), h4);
    e5.add(b, f8e5m2_to_f16(q), h5);
    e4f.add(b, float_bits(f8e4m3fn_to_float(q)), float_bits(__half2float(half_of(h4))));
    e5f.add(b, float_bits(f8e5m2_to_float(q)), float_bits(__half2float(half_of(h5))));
  }
  for (const Tally* k : {&f16, &bf16, &e4, &e5, &e4f, &e5f}) k->expect_clean();
}

TEST(DTypeConvertCudaHost, FloatToNarrow) {
  compare_float(test::interesting_values<float>());
  std::mt19937_64 rng(test::seed_for("DTypeConvertCudaHost.FloatToNarrow"));
  std::vector<float> xs(1 << 19);
  for (auto& x : xs) x = test::float_of(static_cast<uint32_t>(rng()));
  compare_float(xs);
  compare_float(test::random_values_in_range<float>(rng, 1 << 19, -28, 18));
}

TEST(DTypeConvertCudaHost, DoubleToNarrow) {
  compare_double(test::interesting_values<double>());
  std::mt19937_64 rng(test::seed_for("DTypeConvertCudaHost.DoubleToNarrow"));
  std::vector<double> xs(1 << 18);
  for (auto& x : xs) x = test::double_of(rng());
  compare_double(xs);
  compare_double(test::random_values_in_range<double>(rng, 1 << 19, -28, 18));
  compare_double(test::random_values_in_range<double>(rng, 1 << 17, -136, 129));
}

}  // namespace
}  // namespace fk
