// Host Philox fills (fk/random.h): what each element is, for every dtype; independence
// of the tensor's size and shape; the errors. random_gpu_test.cpp compares the device
// fills with these bit for bit.
#include "fk/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fk/dtype_convert.h"
#include "fk/philox.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "fk/tensor.h"
#include "support/test_seed.h"

namespace fk {
namespace {

constexpr DType kAllDTypes[] = {DType::f32, DType::f16,  DType::bf16, DType::f8e4m3fn, DType::f8e5m2, DType::i8,
                                DType::u8,  DType::i32,  DType::i64,  DType::boolean,  DType::f64};

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return {p, p + t.nbytes()};
}

// The three fills with fixed parameters that fit every dtype.
enum class Kind { uniform, integer, normal };
const char* kind_name(Kind k) { return k == Kind::uniform ? "uniform" : k == Kind::integer ? "int" : "normal"; }
void fill(Kind k, const TensorView& t, uint64_t seed, uint64_t offset) {
  switch (k) {
    case Kind::uniform: return fill_uniform(t, seed, offset, 0.0f, 2.0f);  // fits u8 and boolean
    case Kind::integer: return fill_int(t, seed, offset, 0, 2);  // fits boolean
    case Kind::normal: return fill_normal(t, seed, offset, 0.5f, 2.0f);
  }
}

TEST(Random, F32ElementsAreTheStreams) {
  const uint64_t seed = test::seed_for("Random.F32ElementsAreTheStreams");
  Tensor t = Tensor::empty({1001}, DType::f32);
  fill_uniform(t, seed, 3, -2.0f, 6.0f);
  for (int64_t i = 0; i < t.numel(); ++i)
    ASSERT_EQ(t.data_as<float>()[i], std::fma(8.0f, philox_uniform(seed, 3, i), -2.0f)) << i;
  fill_normal(t, seed, 4, 1.5f, 0.25f);
  for (int64_t i = 0; i < t.numel(); ++i)
    ASSERT_EQ(t.data_as<float>()[i], std::fma(0.25f, philox_normal(seed, 4, i), 1.5f)) << i;
  Tensor ti = Tensor::empty({1001}, DType::i64);
  fill_int(ti, seed, 5, -7, 1000000007);
  for (int64_t i = 0; i < ti.numel(); ++i) ASSERT_EQ(ti.data_as<int64_t>()[i], philox_int(seed, 5, i, -7, 1000000007)) << i;
}

// Every dtype holds the f32 sample converted: fk's rounding for floats (fp8 satfinite),
// floor (uniform) / round-to-even + saturation (normal) for integers.
TEST(Random, EveryDTypeHoldsTheConvertedSample) {
  const uint64_t seed = test::seed_for("Random.EveryDTypeHoldsTheConvertedSample");
  constexpr int64_t kN = 4099;
  Tensor ref = Tensor::empty({kN}, DType::f32);
  for (Kind k : {Kind::uniform, Kind::normal}) {
    // Wide normal so that i8/u8 saturate.
    const auto fill_ref = [&](const TensorView& t) {
      if (k == Kind::uniform) fill_uniform(t, seed, 9, -100.0f, 120.0f);
      else fill_normal(t, seed, 9, 10.0f, 200.0f);
    };
    fill_ref(ref);
    for (DType dt : kAllDTypes) {
      if (k == Kind::uniform && dt == DType::u8) continue;  // negative values: rejected (tested below)
      if (k == Kind::uniform && dt == DType::boolean) continue;
      Tensor t = Tensor::empty({kN}, dt);
      fill_ref(t);
      for (int64_t i = 0; i < kN; ++i) {
        const float v = ref.data_as<float>()[i];
        const float iv = k == Kind::uniform ? std::floor(v) : std::nearbyint(v);
        const void* p = static_cast<const char*>(t.data()) + i * dtype_size(dt);
        SCOPED_TRACE(std::string(kind_name(k)) + " " + std::string(dtype_name(dt)) + " element " + std::to_string(i));
        switch (dt) {
          case DType::f32: ASSERT_EQ(*static_cast<const float*>(p), v); break;
          case DType::f64: ASSERT_EQ(*static_cast<const double*>(p), static_cast<double>(v)); break;
          case DType::f16: ASSERT_EQ(*static_cast<const uint16_t*>(p), float_to_f16(v)); break;
          case DType::bf16: ASSERT_EQ(*static_cast<const uint16_t*>(p), float_to_bf16(v)); break;
          case DType::f8e4m3fn: ASSERT_EQ(*static_cast<const uint8_t*>(p), float_to_f8e4m3fn(v)); break;
          case DType::f8e5m2: ASSERT_EQ(*static_cast<const uint8_t*>(p), float_to_f8e5m2(v)); break;
          case DType::i8: ASSERT_EQ(*static_cast<const int8_t*>(p), std::clamp(iv, -128.0f, 127.0f)); break;
          case DType::u8: ASSERT_EQ(*static_cast<const uint8_t*>(p), std::clamp(iv, 0.0f, 255.0f)); break;
          case DType::i32: ASSERT_EQ(*static_cast<const int32_t*>(p), static_cast<int32_t>(iv)); break;
          case DType::i64: ASSERT_EQ(*static_cast<const int64_t*>(p), static_cast<int64_t>(iv)); break;
          case DType::boolean: ASSERT_EQ(*static_cast<const uint8_t*>(p), iv != 0.0f ? 1 : 0); break;
        }
      }
    }
  }
  // fill_int into float dtypes rounds the integer.
  Tensor i64 = Tensor::empty({kN}, DType::i64), h = Tensor::empty({kN}, DType::f16);
  fill_int(i64, seed, 10, -100000, 100000);
  fill_int(h, seed, 10, -100000, 100000);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_EQ(h.data_as<uint16_t>()[i], double_to_f16(static_cast<double>(i64.data_as<int64_t>()[i]))) << i;
}

// Element i depends on (seed, offset, i) only: not on the size or shape of the tensor.
TEST(Random, ElementsIndependentOfSizeAndShape) {
  const uint64_t seed = test::seed_for("Random.ElementsIndependentOfSizeAndShape");
  for (Kind k : {Kind::uniform, Kind::integer, Kind::normal}) {
    for (DType dt : kAllDTypes) {
      SCOPED_TRACE(std::string(kind_name(k)) + " " + std::string(dtype_name(dt)));
      Tensor big = Tensor::empty({3, 5, 67}, dt);  // 1005 elements
      fill(k, big, seed, 2);
      const std::vector<uint8_t> all = bytes_of(big);
      for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 1001}) {
        Tensor small = Tensor::empty({n}, dt);
        fill(k, small, seed, 2);
        const std::vector<uint8_t> part = bytes_of(small);
        ASSERT_TRUE(std::equal(part.begin(), part.end(), all.begin())) << "size " << n;
      }
    }
  }
}

// Large fills run on several threads; the result is the same as element by element.
TEST(Random, LargeFillsMatchTheStreams) {
  const uint64_t seed = test::seed_for("Random.LargeFillsMatchTheStreams");
  Tensor t = Tensor::empty({(1 << 20) + 3}, DType::f32);
  fill_normal(t, seed, 1, 0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); i += 997) ASSERT_EQ(t.data_as<float>()[i], philox_normal(seed, 1, i)) << i;
  ASSERT_EQ(t.data_as<float>()[t.numel() - 1], philox_normal(seed, 1, t.numel() - 1));
}

TEST(Random, EmptyTensorsAreFine) {
  Tensor t = Tensor::empty({0, 4}, DType::bf16);
  fill_uniform(t, 1, 2, 0.0f, 1.0f);
  fill_int(t, 1, 2, 0, 5);
  fill_normal(t, 1, 2, 0.0f, 1.0f);
}

// Expects fn to throw fk::Error whose message contains `needle`.
template <class F>
void expect_error(F&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Random, NonContiguousViewsAreRejected) {
  Tensor t = Tensor::empty({4, 4}, DType::f32);
  TensorView transposed = t.view();
  transposed.strides[0] = 1;
  transposed.strides[1] = 4;
  expect_error([&] { fill_uniform(transposed, 1, 0, 0.0f, 1.0f); }, "contiguous");
  expect_error([&] { fill_int(transposed, 1, 0, 0, 3); }, "contiguous");
  expect_error([&] { fill_normal(transposed, 1, 0, 0.0f, 1.0f); }, "contiguous");
  TensorView every_other = t.view();
  every_other.rank = 1;
  every_other.shape[0] = 8;
  every_other.strides[0] = 2;
  expect_error([&] { fill_normal(every_other, 1, 0, 0.0f, 1.0f); }, "strides [2]");
}

TEST(Random, BadArgumentsAreRejected) {
  Tensor i8 = Tensor::empty({16}, DType::i8), u8 = Tensor::empty({16}, DType::u8), f = Tensor::empty({16}, DType::f32);
  expect_error([&] { fill_uniform(i8, 1, 0, 0.0f, 200.0f); }, "do not fit i8");
  expect_error([&] { fill_uniform(u8, 1, 0, -1.0f, 1.0f); }, "do not fit u8");
  expect_error([&] { fill_uniform(f, 1, 0, 0.0f, INFINITY); }, "finite");
  expect_error([&] { fill_uniform(f, 1, 0, -3e38f, 3e38f); }, "finite");
  expect_error([&] { fill_int(f, 1, 0, 5, 5); }, "non-empty");
  expect_error([&] { fill_int(f, 1, 0, 0, (int64_t{1} << 32) + 1); }, "2^32");
  expect_error([&] { fill_int(f, 1, 0, INT64_MIN, INT64_MAX); }, "2^32");
  expect_error([&] { fill_int(i8, 1, 0, -129, 0); }, "do not fit i8");
  expect_error([&] { fill_int(u8, 1, 0, 0, 257); }, "do not fit u8");
  expect_error([&] { fill_normal(f, 1, 0, 0.0f, -1.0f); }, "std");
  expect_error([&] { fill_normal(f, 1, 0, NAN, 1.0f); }, "finite");
  // Edges that fit.
  fill_uniform(i8, 1, 0, -128.0f, 128.0f);
  fill_int(u8, 1, 0, 0, 256);
  fill_int(f, 1, 0, 0, int64_t{1} << 32);
  if (!rt::built_with_cuda()) {
    TensorView on_gpu = f.view();
    on_gpu.device = Device::cuda(0);
    expect_error([&] { fill_normal(on_gpu, 1, 0, 0.0f, 1.0f); }, "built without CUDA");
  }
}

}  // namespace
}  // namespace fk
