// The decode GEMM kernel choice (ops/linear/decode_gemm_choice.h) on the CPU: which weights
// count as narrow, and from how many rows they leave skinny_gemm.
#include <gtest/gtest.h>

#include "ops/linear/decode_gemm_choice.h"
#include "ops/linear/skinny_gemm.h"

namespace fk::ops {
namespace {

constexpr int64_t kH100Sms = 132;

TEST(DecodeGemmChoice, NarrowMeansTooFewRowPairWarpsPerSm) {
  // 16 warps per SM on 132 SMs: 2112 row pairs, so N <= 4222 (odd N rounds its pairs up).
  EXPECT_TRUE(narrow_weight(4096, kH100Sms));   // Llama-3.1-8B o and down projections
  EXPECT_TRUE(narrow_weight(4222, kH100Sms));
  EXPECT_FALSE(narrow_weight(4223, kH100Sms));
  EXPECT_FALSE(narrow_weight(6144, kH100Sms));  // its qkv
  EXPECT_FALSE(narrow_weight(28672, kH100Sms)); // its gate_up
  EXPECT_TRUE(narrow_weight(1, 1));
  EXPECT_FALSE(narrow_weight(31, 1));
  EXPECT_TRUE(narrow_weight(30, 1));
}

TEST(DecodeGemmChoice, NarrowWeightsLeaveSkinnyFromThreeRows) {
  for (int64_t m = 1; m <= kSkinnyMaxRows; ++m) {
    SCOPED_TRACE(m);
    EXPECT_EQ(small_m_for_narrow_weight(m, 4096, kH100Sms), m >= kNarrowSmallMMinRows);
    EXPECT_FALSE(small_m_for_narrow_weight(m, 6144, kH100Sms));
    EXPECT_FALSE(small_m_for_narrow_weight(m, 128256, kH100Sms));
  }
  // The rule reads the device's SM count: the same weight is wide on a small GPU.
  EXPECT_FALSE(small_m_for_narrow_weight(4, 4096, 16));
  EXPECT_TRUE(small_m_for_narrow_weight(4, 4096, 256));
}

TEST(DecodeGemmChoice, WideWeightsTakeThreeRowsPerWarpAtFourRows) {
  EXPECT_EQ(skinny_weight_rows_per_warp(1, 6144, kH100Sms), 1);
  EXPECT_EQ(skinny_weight_rows_per_warp(2, 6144, kH100Sms), 2);
  EXPECT_EQ(skinny_weight_rows_per_warp(3, 6144, kH100Sms), 2);
  EXPECT_EQ(skinny_weight_rows_per_warp(4, 6144, kH100Sms), 3);    // Llama-3.1-8B qkv
  EXPECT_EQ(skinny_weight_rows_per_warp(4, 28672, kH100Sms), 3);   // gate_up
  EXPECT_EQ(skinny_weight_rows_per_warp(4, 128256, kH100Sms), 3);  // LM head
  EXPECT_EQ(skinny_weight_rows_per_warp(4, 4096, kH100Sms), 2);    // narrow: o, down
  EXPECT_EQ(skinny_weight_rows_per_warp(4, 4096, 16), 3);          // wide on a small GPU
}

}  // namespace
}  // namespace fk::ops
