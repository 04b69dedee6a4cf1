// The edge patterns: magnitudes per dtype that are what they claim (tiny normals,
// subnormals, huge values whose squares stay finite), the rule of which arguments take
// them, rows patterned as named with the others left alone, and the one-element change.
#include "harness/judge/edge_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fk/element.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

constexpr DType kFloatDtypes[] = {DType::f32, DType::bf16, DType::f16, DType::f8e4m3fn, DType::f8e5m2, DType::f64};

double max_finite(DType t) {
  switch (t) {
    case DType::f32:
    case DType::bf16: return std::numeric_limits<float>::max();
    case DType::f16: return 65504.0;
    case DType::f8e4m3fn: return 448.0;
    case DType::f8e5m2: return 57344.0;
    default: return std::numeric_limits<double>::max();
  }
}

// The value a double becomes in the dtype.
double rounded(DType t, double x) {
  unsigned char buf[8] = {};
  store_element(buf, t, x);
  return load_element(buf, t);
}

TEST(EdgeMagnitudes, TinyIs1e30WhereTheDtypeHoldsItElseTheSmallestNormal) {
  for (DType t : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    const EdgeMagnitudes m = edge_magnitudes(t);
    EXPECT_GE(rounded(t, m.tiny), m.smallest_normal) << "tiny values are normals";
    EXPECT_GE(rounded(t, 2 * m.tiny), m.smallest_normal);
    if (t == DType::f32 || t == DType::bf16 || t == DType::f64) {
      EXPECT_EQ(m.tiny, 1e-30);
      EXPECT_NEAR(rounded(t, m.tiny), 1e-30, 1e-32);
      EXPECT_EQ(static_cast<float>(m.tiny) * static_cast<float>(m.tiny), 0.0f) << "squares underflow in f32";
    } else {
      EXPECT_EQ(m.tiny, m.smallest_normal);
    }
  }
}

TEST(EdgeMagnitudes, SmallestNormalIsTheDtypesAndHalfOfItIsSubnormal) {
  for (DType t : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    const EdgeMagnitudes m = edge_magnitudes(t);
    EXPECT_EQ(rounded(t, m.smallest_normal), m.smallest_normal);
    const double half = rounded(t, m.smallest_normal / 2);
    EXPECT_GT(half, 0.0) << "the dtype has subnormals";
    EXPECT_LT(half, m.smallest_normal);
  }
  EXPECT_EQ(edge_magnitudes(DType::f32).smallest_normal, static_cast<double>(std::numeric_limits<float>::min()));
  EXPECT_EQ(edge_magnitudes(DType::bf16).smallest_normal, static_cast<double>(std::numeric_limits<float>::min()));
}

TEST(EdgeMagnitudes, HugeIsRepresentableAndItsSquaresStayFinite) {
  for (DType t : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    const EdgeMagnitudes m = edge_magnitudes(t);
    EXPECT_EQ(rounded(t, m.huge), m.huge);
    EXPECT_EQ(rounded(t, m.huge / 2), m.huge / 2);
    const double sq = m.huge * m.huge;
    if (t == DType::f32 || t == DType::bf16) {
      // 2^20 squares summed in f32 (a norm's sum of squares over a wide row) stay finite.
      EXPECT_LT(sq * std::ldexp(1.0, 20), static_cast<double>(std::numeric_limits<float>::max()));
      EXPECT_GT(m.huge, 1e15) << "huge is huge";
    } else if (t == DType::f64) {
      EXPECT_TRUE(std::isfinite(sq * std::ldexp(1.0, 20)));
      EXPECT_GT(m.huge, 1e100);
    } else {
      // A product of two inputs still fits the dtype itself, and huge is the largest power
      // of two for which it does.
      EXPECT_LT(sq, max_finite(t));
      EXPECT_GT(4 * sq, max_finite(t));
    }
  }
}

TEST(EdgeMagnitudes, IntegerDtypesAreRefused) {
  EXPECT_THROW(edge_magnitudes(DType::i32), Error);
  EXPECT_THROW(edge_magnitudes(DType::i64), Error);
}

TEST(EdgeInputs, OnlyFloatInputsOnTheDeviceTakeThePatterns) {
  const Tensor rows = Tensor::zeros({3, 4}, DType::bf16);
  const Tensor vec = Tensor::zeros({4}, DType::bf16);
  const Tensor ids = Tensor::zeros({3, 4}, DType::i32);
  EXPECT_TRUE(takes_row_patterns({"x", ArgRole::in, 0}, rows));
  EXPECT_TRUE(takes_row_patterns({"x", ArgRole::inout, 0}, rows));
  EXPECT_FALSE(takes_row_patterns({"x", ArgRole::out, 0}, rows));
  EXPECT_FALSE(takes_row_patterns({"x", ArgRole::workspace, 0}, rows));
  EXPECT_FALSE(takes_row_patterns({"x", ArgRole::in, 0, /*host_only=*/true}, rows));
  EXPECT_FALSE(takes_row_patterns({"ids", ArgRole::in, 0}, ids)) << "index tensors keep their values";
  EXPECT_FALSE(takes_row_patterns({"w", ArgRole::in, 0}, vec)) << "rank-1 parameters keep their values";
  EXPECT_FALSE(takes_row_patterns({"x", ArgRole::in, 0}, Tensor())) << "an optional argument left out";
  EXPECT_TRUE(takes_element_change({"w", ArgRole::in, 0}, vec));
  EXPECT_FALSE(takes_element_change({"ids", ArgRole::in, 0}, ids));
  EXPECT_FALSE(takes_element_change({"w", ArgRole::in, 0}, Tensor::zeros({1}, DType::f32)));
}

// An rms_norm case: input [T, H] and weight [H] drawn by the op.
OpCase rms_case(int64_t tokens, int64_t hidden, const char* dtype, uint64_t seed) {
  return OpRegistry::global().def("rms_norm").make_case(Json{{"tokens", tokens}, {"hidden", hidden}, {"dtype", dtype}}, seed);
}

double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

// Rows of `after` that differ from `before`.
std::vector<int64_t> changed_rows(const Tensor& before, const Tensor& after) {
  std::vector<int64_t> out;
  const int64_t n = before.size(-1);
  for (int64_t r = 0; r < before.numel() / n; ++r)
    for (int64_t c = 0; c < n; ++c)
      if (std::memcmp(before.view().element_ptr(r * n + c), after.view().element_ptr(r * n + c), before.view().element_size()) !=
          0) {
        out.push_back(r);
        break;
      }
  return out;
}

TEST(EdgeInputs, PatternsChangeSomeRowsOfTheInputAsNamedAndLeaveTheWeight) {
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const uint64_t seed = test::seed_for("edge_patterns");
  for (const char* dtype : {"bf16", "f16", "f32"}) {
    for (EdgePattern p : kEdgePatterns) {
      SCOPED_TRACE(concat(dtype, " ", edge_pattern_name(p)));
      const OpCase drawn = rms_case(64, 40, dtype, seed);
      OpCase c = rms_case(64, 40, dtype, seed);
      ASSERT_TRUE(apply_edge_pattern(def, c, p, seed ^ 0x1234));
      const Tensor& in = c.tensors[1];
      EXPECT_EQ(changed_rows(drawn.tensors[2].reshape({1, 40}), c.tensors[2].reshape({1, 40})).size(), 0u)
          << "the rank-1 weight keeps its values";
      const std::vector<int64_t> rows = changed_rows(drawn.tensors[1], in);
      EXPECT_GE(rows.size(), 8u) << "about half of 64 rows";
      EXPECT_LE(rows.size(), 56u) << "about half of 64 rows";
      const EdgeMagnitudes m = edge_magnitudes(in.dtype());
      for (int64_t r : rows) {
        int nonzero = 0;
        for (int64_t col = 0; col < 40; ++col) {
          const double v = at(in, r * 40 + col), orig = at(drawn.tensors[1], r * 40 + col);
          ASSERT_TRUE(std::isfinite(v));
          nonzero += v != 0;
          switch (p) {
            case EdgePattern::zero_rows: EXPECT_EQ(v, 0.0); break;
            case EdgePattern::constant_rows:
              EXPECT_EQ(v, at(in, r * 40));
              EXPECT_NE(v, 0.0);
              break;
            case EdgePattern::one_hot_rows: EXPECT_TRUE(v == 0.0 || v == 1.0); break;
            case EdgePattern::tiny:
              EXPECT_GE(std::fabs(v), m.tiny * 0.99);
              EXPECT_LE(std::fabs(v), 2 * m.tiny * 1.01);
              EXPECT_EQ(std::signbit(v), std::signbit(orig));
              break;
            case EdgePattern::huge:
              EXPECT_GE(std::fabs(v), m.huge / 2);
              EXPECT_LE(std::fabs(v), m.huge);
              break;
            case EdgePattern::denormal:
              EXPECT_LT(std::fabs(v), m.smallest_normal);
              break;
          }
        }
        if (p == EdgePattern::one_hot_rows) {
          EXPECT_EQ(nonzero, 1);
        }
        if (p == EdgePattern::denormal) {
          EXPECT_GT(nonzero, 0) << "denormals, not zeros";
        }
      }
      // The rows left alone hold the drawn values.
      for (int64_t r = 0; r < 64; ++r) {
        if (std::find(rows.begin(), rows.end(), r) != rows.end()) continue;
        for (int64_t col = 0; col < 40; ++col) ASSERT_EQ(at(in, r * 40 + col), at(drawn.tensors[1], r * 40 + col));
      }
    }
  }
}

TEST(EdgeInputs, TheSecretDecidesTheRows) {
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const uint64_t seed = test::seed_for("edge_rows");
  auto rows_of = [&](uint64_t secret) {
    OpCase c = rms_case(64, 8, "f32", seed);
    apply_edge_pattern(def, c, EdgePattern::zero_rows, secret);
    return changed_rows(rms_case(64, 8, "f32", seed).tensors[1], c.tensors[1]);
  };
  EXPECT_EQ(rows_of(1), rows_of(1));
  EXPECT_NE(rows_of(1), rows_of(2));
  // A single row is always patterned.
  OpCase one = rms_case(1, 8, "f32", seed);
  ASSERT_TRUE(apply_edge_pattern(def, one, EdgePattern::zero_rows, 3));
  for (int64_t col = 0; col < 8; ++col) EXPECT_EQ(at(one.tensors[1], col), 0.0);
}

TEST(EdgeInputs, AnOpWithoutFloatRowInputsTakesNoPattern) {
  // moe_align reads only routing ids: nothing to pattern, nothing to change.
  const OpDef& def = OpRegistry::global().def("moe_align_block_size");
  OpCase c = def.make_case(def.test_workloads.front(), 1);
  EXPECT_FALSE(apply_edge_pattern(def, c, EdgePattern::zero_rows, 1));
  EXPECT_FALSE(change_one_element(def, c, 1));
}

TEST(EdgeInputs, OneElementChangesPerFloatInputToItsMinimumOrMaximum) {
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const uint64_t seed = test::seed_for("edge_change");
  const OpCase drawn = rms_case(6, 32, "bf16", seed);
  OpCase c = rms_case(6, 32, "bf16", seed);
  ASSERT_TRUE(change_one_element(def, c, 99));
  for (size_t a : {size_t{1}, size_t{2}}) {  // input and weight
    const Tensor &t = c.tensors[a], &d = drawn.tensors[a];
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < d.numel(); ++i) lo = std::min(lo, at(d, i)), hi = std::max(hi, at(d, i));
    int changed = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (at(t, i) != at(d, i)) {
        ++changed;
        EXPECT_TRUE(at(t, i) == lo || at(t, i) == hi);
        EXPECT_GE(std::fabs(at(t, i) - at(d, i)), (hi - lo) / 2) << "the farther of the two";
      }
    EXPECT_EQ(changed, 1) << def.tensor_args[a].name;
  }
  // A constant tensor has nothing to change to.
  OpCase flat = rms_case(2, 4, "f32", seed);
  for (size_t a : {size_t{1}, size_t{2}})
    for (int64_t i = 0; i < flat.tensors[a].numel(); ++i) store_element(flat.tensors[a].view().element_ptr(i), DType::f32, 1.0);
  EXPECT_FALSE(change_one_element(def, flat, 5));
}

}  // namespace
}  // namespace fk::bench
