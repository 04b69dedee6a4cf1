#include "fk/dtype.h"

#include <gtest/gtest.h>

namespace fk {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(dtype_from_name(dtype_safetensors_name(t)), t);
  }
  EXPECT_EQ(dtype_from_name("bfloat16"), DType::bf16);
  EXPECT_EQ(dtype_from_name("float8_e4m3fn"), DType::f8e4m3fn);
  EXPECT_FALSE(dtype_from_name("complex64").has_value());
}

TEST(DType, Sizes) {
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f8e5m2), 1u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_size(DType::boolean), 1u);
}

}  // namespace
}  // namespace fk
