// quantize_fp8_blocks (models/llm/fp8_blocks.h), on the host: one f32 scale per 128x128
// block of each matrix (absmax / 448), partial blocks at the edges, an all-zero block, and
// values within fp8 rounding of the input.
#include "models/llm/fp8_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

TEST(Fp8Blocks, ScaleGridCoversPartialBlocks) {
  EXPECT_EQ(fp8_scale_shape({128, 128}), (Shape{1, 1}));
  EXPECT_EQ(fp8_scale_shape({129, 64}), (Shape{2, 1}));
  EXPECT_EQ(fp8_scale_shape({8, 1536, 2048}), (Shape{8, 12, 16}));
  EXPECT_THROW(fp8_scale_shape({128}), Error);
}

TEST(Fp8Blocks, SmallestCase) {
  Tensor w = Tensor::empty({1, 3}, DType::bf16);
  for (int i = 0; i < 3; ++i) store_element(w.view().element_ptr(i), DType::bf16, std::vector{1.0, -2.0, 0.0}[i]);
  const Fp8Blocks b = quantize_fp8_blocks(w);
  ASSERT_EQ(b.scale.shape(), (Shape{1, 1}));
  EXPECT_EQ(at(b.scale, 0), static_cast<double>(2.0f / 448.0f));
  EXPECT_EQ(at(b.weight, 0), 224.0);  // 1 / (2 / 448), exact in e4m3
  EXPECT_EQ(at(b.weight, 1), -448.0);
  EXPECT_EQ(at(b.weight, 2), 0.0);
}

TEST(Fp8Blocks, EachBlockByItsAbsmax) {
  const int64_t M = 2, R = 200, C = 150;  // blocks of 128 and 72 rows, 128 and 22 columns
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor w = Tensor::empty({M, R, C}, dt);
    fill_normal(w, test::seed_for("Fp8Blocks"), 0, 0.0f, 0.05f);
    // Matrix 1: its block (0, 1) 100 times larger, its block (1, 0) all zero.
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        void* p = w.view().element_ptr((R + r) * C + c);
        if (r < 128 && c >= 128) store_element(p, dt, 100 * load_element(p, dt));
        if (r >= 128 && c < 128) store_element(p, dt, 0.0);
      }
    const Fp8Blocks b = quantize_fp8_blocks(w);
    ASSERT_EQ(b.weight.dtype(), DType::f8e4m3fn);
    ASSERT_EQ(b.weight.shape(), w.shape());
    ASSERT_EQ(b.scale.dtype(), DType::f32);
    ASSERT_EQ(b.scale.shape(), (Shape{M, 2, 2}));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t br = 0; br < 2; ++br)
        for (int64_t bc = 0; bc < 2; ++bc) {
          SCOPED_TRACE("block " + std::to_string(m) + ", " + std::to_string(br) + ", " + std::to_string(bc));
          const int64_t r1 = std::min(R, (br + 1) * 128), c1 = std::min(C, (bc + 1) * 128);
          float amax = 0;
          for (int64_t r = br * 128; r < r1; ++r)
            for (int64_t c = bc * 128; c < c1; ++c)
              amax = std::max(amax, static_cast<float>(std::fabs(at(w, (m * R + r) * C + c))));
          const double scale = at(b.scale, (m * 2 + br) * 2 + bc);
          if (m == 1 && br == 1 && bc == 0) {
            EXPECT_EQ(amax, 0.0f);
            EXPECT_EQ(scale, 1.0);  // any scale dequantizes zeros; 1 keeps it finite
          } else {
            EXPECT_EQ(scale, static_cast<double>(amax / 448.0f));
          }
          double qmax = 0;
          for (int64_t r = br * 128; r < r1; ++r)
            for (int64_t c = bc * 128; c < c1; ++c) {
              const int64_t i = (m * R + r) * C + c;
              const double x = at(w, i), q = at(b.weight, i);
              qmax = std::max(qmax, std::fabs(q));
              // Half an e4m3 ulp: 2^-4 relative for normals, 2^-10 absolute (times the scale)
              // below 2^-6; a little more for the rounding of x / scale.
              const double bound = std::max(std::fabs(x) * 0x1p-4, scale * 0x1p-10) * (1 + 1e-6);
              ASSERT_LE(std::fabs(q * scale - x), bound) << "element " << r << ", " << c << ": " << x << " -> " << q
                                                         << " * " << scale;
            }
          EXPECT_EQ(qmax, amax > 0 ? 448.0 : 0.0) << "the absmax element maps to the largest fp8 value";
        }
  }
}

TEST(Fp8Blocks, RefusesWhatItCannotQuantize) {
  try {
    quantize_fp8_blocks(Tensor::zeros({4, 4}, DType::i32));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("quantizes bf16, f16 or f32 weights"), std::string::npos) << e.what();
  }
  EXPECT_THROW(quantize_fp8_blocks(Tensor::zeros({16}, DType::bf16)), Error);
}

}  // namespace
}  // namespace fk::engine
