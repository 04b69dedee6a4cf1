// Device Philox fills are bitwise equal to host fills (fk/random.h): every dtype, the
// uniform, int and normal streams, sizes 1, 1000003 and 2^24, and an offset element range
// (a view into the middle of a stream is not a thing: the same (seed, offset) must give the
// same elements whatever the size).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "fk/dtype.h"
#include "fk/random.h"
#include "fk/status.h"
#include "fk/tensor.h"
#include "support/test_seed.h"

namespace fk {
namespace {

constexpr DType kAllDTypes[] = {DType::f32, DType::f16,  DType::bf16, DType::f8e4m3fn, DType::f8e5m2, DType::i8,
                                DType::u8,  DType::i32,  DType::i64,  DType::boolean,  DType::f64};

enum class Kind { uniform, integer, normal };
const char* kind_name(Kind k) { return k == Kind::uniform ? "uniform" : k == Kind::integer ? "int" : "normal"; }

// Parameters that fit each dtype and exercise rounding, overflow and saturation.
void fill(Kind k, const TensorView& t, uint64_t seed, uint64_t offset) {
  const DType d = t.dtype;
  switch (k) {
    case Kind::uniform:
      if (dtype_is_float(d)) return fill_uniform(t, seed, offset, -3.0f, 5.0f);
      if (d == DType::boolean) return fill_uniform(t, seed, offset, 0.0f, 2.0f);
      if (d == DType::u8) return fill_uniform(t, seed, offset, 0.0f, 256.0f);
      if (d == DType::i8) return fill_uniform(t, seed, offset, -128.0f, 128.0f);
      return fill_uniform(t, seed, offset, -1e6f, 1e6f);
    case Kind::integer:
      if (dtype_is_float(d)) return fill_int(t, seed, offset, -70000, 70000);  // past f16 / fp8 range
      if (d == DType::boolean) return fill_int(t, seed, offset, 0, 2);
      if (d == DType::u8) return fill_int(t, seed, offset, 0, 256);
      if (d == DType::i8) return fill_int(t, seed, offset, -128, 128);
      if (d == DType::i32) return fill_int(t, seed, offset, INT32_MIN, int64_t{INT32_MAX} + 1);
      return fill_int(t, seed, offset, -(int64_t{1} << 40), -(int64_t{1} << 40) + (int64_t{1} << 32));
    case Kind::normal:
      if (dtype_is_float(d)) return fill_normal(t, seed, offset, 0.5f, 3.0f);
      return fill_normal(t, seed, offset, 3.0f, 100.0f);  // saturates i8 / u8 at times
  }
}

TEST(RandomGpu, DeviceFillsEqualHostFills) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("RandomGpu.DeviceFillsEqualHostFills");
  for (int64_t n : {int64_t{1}, int64_t{1000003}, int64_t{1} << 24}) {
    for (Kind k : {Kind::uniform, Kind::integer, Kind::normal}) {
      for (DType dt : kAllDTypes) {
        const std::string what = std::string(kind_name(k)) + " " + std::string(dtype_name(dt)) + " n=" + std::to_string(n);
        Tensor host = Tensor::empty({n}, dt);
        Tensor device = Tensor::empty({n}, dt, Device::cuda(0));
        fill(k, host, seed, 17);
        fill(k, device, seed, 17);
        const Tensor back = device.to(Device::cpu());
        const auto* h = static_cast<const uint8_t*>(host.data());
        const auto* d = static_cast<const uint8_t*>(back.data());
        const size_t es = dtype_size(dt);
        int64_t bad = 0;
        std::string first;
        for (int64_t i = 0; i < n; ++i) {
          if (std::memcmp(h + i * es, d + i * es, es) == 0) continue;
          if (++bad > 8) continue;
          uint64_t hv = 0, dv = 0;
          std::memcpy(&hv, h + i * es, es);
          std::memcpy(&dv, d + i * es, es);
          first += "\n  element " + std::to_string(i) + ": host " + std::to_string(hv) + ", device " + std::to_string(dv);
        }
        if (bad) std::printf("[ fk      ] %s: %lld mismatches\n", what.c_str(), static_cast<long long>(bad));
        EXPECT_EQ(bad, 0) << what << first;
      }
    }
  }
}

// A large offset and seed (all 64 bits used) and a 2-d tensor whose size is not a multiple
// of the 4 elements of a Philox block.
TEST(RandomGpu, FullWidthSeedAndOffset) {
  FK_REQUIRE_GPU();
  const uint64_t seed = ~uint64_t{0} - 12345, offset = (uint64_t{1} << 63) + 99;
  for (Kind k : {Kind::uniform, Kind::integer, Kind::normal}) {
    Tensor host = Tensor::empty({3, 333}, DType::f32);
    Tensor device = Tensor::empty({3, 333}, DType::f32, Device::cuda(0));
    fill(k, host, seed, offset);
    fill(k, device, seed, offset);
    const Tensor back = device.to(Device::cpu());
    EXPECT_EQ(std::memcmp(host.data(), back.data(), host.nbytes()), 0) << kind_name(k);
  }
}

TEST(RandomGpu, NonContiguousDeviceViewsAreRejected) {
  FK_REQUIRE_GPU();
  Tensor t = Tensor::empty({4, 4}, DType::f32, Device::cuda(0));
  TensorView v = t.view();
  v.strides[0] = 1;
  v.strides[1] = 4;
  EXPECT_THROW(fill_normal(v, 1, 0, 0.0f, 1.0f), Error);
  EXPECT_THROW(fill_uniform(v, 1, 0, 0.0f, 1.0f), Error);
  EXPECT_THROW(fill_int(v, 1, 0, 0, 4), Error);
}

}  // namespace
}  // namespace fk
