// linear's variants (ops/linear/linear_variants.h) change its decode path choice as soon as
// they are selected in-process, and back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "ops/linear/linear_variants.h"
#include "ops/linear/skinny_gemm.h"

namespace fk::ops {
namespace {

struct LinearVariants : ::testing::Test {
  void TearDown() override { OpRegistry::global().select_variants("linear", {}); }
  static void select(std::vector<std::string> names) { OpRegistry::global().select_variants("linear", names); }
};

TEST_F(LinearVariants, DefaultIsEveryPath) {
  select({});
  const LinearPaths p = linear_paths();
  EXPECT_TRUE(p.autotune);
  EXPECT_TRUE(p.skinny);
  EXPECT_TRUE(p.small_m);
  EXPECT_EQ(p.skinny_max_rows, kSkinnyMaxRows);
}

TEST_F(LinearVariants, EachVariantTurnsItsPathOffInProcess) {
  select({"no_autotune"});
  EXPECT_FALSE(linear_paths().autotune);
  EXPECT_TRUE(linear_paths().skinny);
  select({"no_skinny", "no_small_m"});
  EXPECT_TRUE(linear_paths().autotune);
  EXPECT_FALSE(linear_paths().skinny);
  EXPECT_FALSE(linear_paths().small_m);
  select({});
  EXPECT_TRUE(linear_paths().skinny);
}

TEST_F(LinearVariants, SkinnyMaxRowsTakesEachValueBelowTheDefault) {
  for (int64_t n = 0; n < kSkinnyMaxRows; ++n) {
    select({"skinny_max_rows_" + std::to_string(n)});
    EXPECT_EQ(linear_paths().skinny_max_rows, n);
  }
  EXPECT_THROW(select({"skinny_max_rows_" + std::to_string(kSkinnyMaxRows)}), Error);  // the default: no variant
}

TEST_F(LinearVariants, TwoSkinnyMaxRowsAtOnceAreAnError) {
  select({"skinny_max_rows_1", "skinny_max_rows_2"});
  EXPECT_THROW(linear_paths(), Error);
}

TEST_F(LinearVariants, SelectionIsRecorded) {
  OpRegistry::global().select_variants_from_string("linear=skinny_max_rows_2+no_autotune");
  EXPECT_EQ(OpRegistry::global().active_variants(), "linear=no_autotune+skinny_max_rows_2");
  EXPECT_EQ(linear_paths().skinny_max_rows, 2);
}

}  // namespace
}  // namespace fk::ops
