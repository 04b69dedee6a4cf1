// compare_output on references that are not finite numbers: a NaN or infinite reference
// must be met by the same value, an exact value beyond the output dtype's range by the
// infinity it rounds to, and a non-finite output where the reference is an ordinary
// number is wrong.
#include "harness/check/op_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fk/element.h"

namespace fk::bench {
namespace {

Tensor make(DType t, const std::vector<double>& v) {
  Tensor x = Tensor::empty({static_cast<int64_t>(v.size())}, t);
  for (size_t i = 0; i < v.size(); ++i) store_element(x.view().element_ptr(static_cast<int64_t>(i)), t, v[i]);
  return x;
}

// Bad elements of `got` (in dtype t) against the f64 reference, at the dtype's default tolerance.
int64_t bad(DType t, double got, double ref) {
  return compare_output("out", make(t, {got, 1.0}), make(DType::f64, {ref, 1.0}), default_tolerance(t)).num_bad;
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CompareOutput, ANanReferenceIsMetByANanOnly) {
  EXPECT_EQ(bad(DType::bf16, kNan, kNan), 0);
  EXPECT_EQ(bad(DType::bf16, 1.0, kNan), 1);
  EXPECT_EQ(bad(DType::bf16, kInf, kNan), 1);
}

TEST(CompareOutput, AnInfiniteReferenceIsMetByTheSameInfinityOnly) {
  EXPECT_EQ(bad(DType::f32, kInf, kInf), 0);
  EXPECT_EQ(bad(DType::f32, -kInf, -kInf), 0);
  EXPECT_EQ(bad(DType::f32, -kInf, kInf), 1);
  EXPECT_EQ(bad(DType::f32, kNan, kInf), 1);
  EXPECT_EQ(bad(DType::f32, std::numeric_limits<float>::max(), kInf), 1);
}

TEST(CompareOutput, AnExactValueBeyondTheDtypeExpectsTheInfinityItRoundsTo) {
  EXPECT_EQ(bad(DType::bf16, kInf, 1e39), 0);
  EXPECT_EQ(bad(DType::f16, -kInf, -70000.0), 0);
  EXPECT_EQ(bad(DType::f32, kInf, 1e39), 0);
  EXPECT_EQ(bad(DType::f16, 65504.0, 70000.0), 1) << "the largest finite is not what 70000 rounds to";
  EXPECT_EQ(bad(DType::f16, kInf, -70000.0), 1) << "the wrong infinity";
  // Within the range (65519 rounds to 65504 in f16): infinity is wrong there.
  EXPECT_EQ(bad(DType::f16, kInf, 65519.0), 1);
  EXPECT_EQ(bad(DType::f16, 65504.0, 65519.0), 0);
}

TEST(CompareOutput, ANonFiniteOutputForAFiniteReferenceIsCounted) {
  const OutputError e = compare_output("out", make(DType::bf16, {kNan, kInf, 2.0}), make(DType::f64, {1.0, 3.0, 2.0}),
                                       default_tolerance(DType::bf16));
  EXPECT_EQ(e.num_bad, 2);
  EXPECT_EQ(e.num_nonfinite, 2);
  EXPECT_EQ(e.worst_index, 0);
}

}  // namespace
}  // namespace fk::bench
