// Kernel variants in the op registry (fk/op_registry.h): definition, selection and its
// errors, the "op=a+b,op2=c" form, the selection epoch and the active_variants record; and
// FK_VARIANTS, applied once to the global registry on its first use.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "fk/status.h"

namespace fk {
namespace {

// A registry of its own (the global one holds the engine's real variants).
struct Variants : ::testing::Test {
  OpRegistry r;
  void SetUp() override {
    r.define_variant("linear", "no_autotune", "untimed");
    r.define_variant("linear", "no_skinny", "cuBLASLt for decode");
    r.define_variant("rms_norm", "late_weight", "weight after the wait");
  }
};

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(Variants, ListedSortedByOpThenName) {
  const std::vector<OpVariantInfo> v = r.variants();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].op, "linear");
  EXPECT_EQ(v[0].name, "no_autotune");
  EXPECT_EQ(v[0].summary, "untimed");
  EXPECT_EQ(v[1].name, "no_skinny");
  EXPECT_EQ(v[2].op, "rms_norm");
}

TEST_F(Variants, NoneSelectedIsTheDefaultPath) {
  EXPECT_FALSE(r.variant_on("linear", "no_autotune"));
  EXPECT_EQ(r.active_variants(), "");
}

TEST_F(Variants, SelectionSetsTheOpsWholeActiveSet) {
  r.select_variants("linear", {"no_skinny", "no_autotune"});
  EXPECT_TRUE(r.variant_on("linear", "no_autotune"));
  EXPECT_TRUE(r.variant_on("linear", "no_skinny"));
  EXPECT_FALSE(r.variant_on("rms_norm", "late_weight"));
  r.select_variants("linear", {"no_skinny"});
  EXPECT_FALSE(r.variant_on("linear", "no_autotune"));
  EXPECT_TRUE(r.variant_on("linear", "no_skinny"));
  r.select_variants("linear", {});
  EXPECT_FALSE(r.variant_on("linear", "no_skinny"));
}

TEST_F(Variants, ActiveVariantsIsSortedAndInTheSelectionFormat) {
  r.select_variants("rms_norm", {"late_weight"});
  r.select_variants("linear", {"no_skinny", "no_autotune", "no_skinny"});
  EXPECT_EQ(r.active_variants(), "linear=no_autotune+no_skinny,rms_norm=late_weight");
  // The record reads back as the same selection.
  OpRegistry again;
  again.define_variant("linear", "no_autotune", "");
  again.define_variant("linear", "no_skinny", "");
  again.define_variant("rms_norm", "late_weight", "");
  again.select_variants_from_string(r.active_variants());
  EXPECT_EQ(again.active_variants(), r.active_variants());
}

TEST_F(Variants, UnknownVariantIsAnErrorListingTheOpsVariants) {
  const std::string e = error_of([&] { r.select_variants("linear", {"no_skiny"}); });
  EXPECT_TRUE(contains(e, "no_skiny")) << e;
  EXPECT_TRUE(contains(e, "no_autotune, no_skinny")) << e;
  EXPECT_FALSE(r.variant_on("linear", "no_skinny"));  // nothing selected by the failed call
}

TEST_F(Variants, UnknownOpIsAnErrorNamingIt) {
  const std::string e = error_of([&] { r.select_variants("linaer", {"no_skinny"}); });
  EXPECT_TRUE(contains(e, "unknown op 'linaer'")) << e;
  EXPECT_TRUE(contains(e, "linear, rms_norm")) << e;
}

TEST_F(Variants, AskingForAnUnregisteredVariantIsAnError) {
  EXPECT_THROW(r.variant_on("linear", "no_such_path"), Error);
  EXPECT_THROW(r.variant_on("gelu", "no_pdl"), Error);
}

TEST_F(Variants, DefinedTwiceOrWithSeparatorsIsAnError) {
  EXPECT_THROW(r.define_variant("linear", "no_skinny", "again"), Error);
  EXPECT_THROW(r.define_variant("linear", "a+b", ""), Error);
  EXPECT_THROW(r.define_variant("linear", "a=b", ""), Error);
  EXPECT_THROW(r.define_variant("linear", "", ""), Error);
}

TEST_F(Variants, StringFormSelectsEachOp) {
  r.select_variants_from_string("linear=no_autotune+no_skinny, rms_norm=late_weight");
  EXPECT_TRUE(r.variant_on("linear", "no_autotune"));
  EXPECT_TRUE(r.variant_on("linear", "no_skinny"));
  EXPECT_TRUE(r.variant_on("rms_norm", "late_weight"));
  r.select_variants_from_string("linear=");  // back to the default
  EXPECT_FALSE(r.variant_on("linear", "no_autotune"));
  EXPECT_TRUE(r.variant_on("rms_norm", "late_weight"));
  r.select_variants_from_string("");  // nothing to select
  EXPECT_EQ(r.active_variants(), "rms_norm=late_weight");
}

TEST_F(Variants, BadStringSelectsNothing) {
  EXPECT_THROW(r.select_variants_from_string("rms_norm=late_weight,linear=no_such"), Error);
  EXPECT_THROW(r.select_variants_from_string("rms_norm=late_weight,linear"), Error);
  EXPECT_THROW(r.select_variants_from_string("=no_skinny"), Error);
  EXPECT_EQ(r.active_variants(), "");
}

TEST_F(Variants, EpochChangesWithEverySelection) {
  const uint64_t e0 = r.variant_epoch();
  EXPECT_EQ(r.variant_epoch(), e0);  // asking changes nothing
  r.variant_on("linear", "no_skinny");
  EXPECT_EQ(r.variant_epoch(), e0);
  r.select_variants("linear", {"no_skinny"});
  const uint64_t e1 = r.variant_epoch();
  EXPECT_NE(e1, e0);
  r.select_variants("linear", {});
  EXPECT_NE(r.variant_epoch(), e1);
}

// FK_VARIANTS reaches the global registry on its first use, whatever ran at static
// initialisation; a fresh process (the threadsafe death-test style re-runs this binary)
// sets it before that first use.
TEST(GlobalVariants, FkVariantsIsAppliedOnFirstUse) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("FK_VARIANTS", "linear=no_autotune", 1);
        const bool ok = OpRegistry::global().variant_on("linear", "no_autotune") &&
                        OpRegistry::global().active_variants() == "linear=no_autotune";
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(GlobalVariants, BadFkVariantsFailsEveryUseNamingTheVariable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("FK_VARIANTS", "linear=no_such_path", 1);
        int failures = 0;
        for (int i = 0; i < 2; ++i) {
          try {
            OpRegistry::global().variant_epoch();
          } catch (const Error& e) {
            failures += std::string(e.what()).find("FK_VARIANTS") != std::string::npos ? 1 : 0;
          }
        }
        std::exit(failures == 2 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace fk
