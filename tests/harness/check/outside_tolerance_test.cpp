// The element count outside a tolerance: the rule is compare_output's (the harness
// describes a failing timed call with compare_output after this count found it), on the
// host and, with a GPU, on the device with the same answer.
#include "harness/check/outside_tolerance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "fk/element.h"
#include "fk/runtime.h"
#include "harness/check/op_check.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

constexpr double kNan = NAN, kInf = INFINITY;

Tensor make(DType t, const std::vector<double>& v) {
  Tensor x = Tensor::empty({static_cast<int64_t>(v.size())}, t);
  for (size_t i = 0; i < v.size(); ++i) store_element(x.view().element_ptr(static_cast<int64_t>(i)), t, v[i]);
  return x;
}

int64_t count(DType t, const std::vector<double>& x, const std::vector<double>& r, Tolerance tol) {
  const Tensor a = make(t, x), b = make(t, r);
  return count_outside_tolerance(a.data(), b.data(), a.numel(), t, tol, Device::cpu(), nullptr);
}

TEST(OutsideTolerance, CountsAsTheToleranceRuleSays) {
  const Tolerance tol{0.1, 0.01};
  // |x - r| <= 0.1 + 0.01 |r|: 100.9 is within 1.1 of 100, 101.2 is not.
  EXPECT_EQ(count(DType::f32, {1.05, 100.9, 101.2, -1.0}, {1.0, 100.0, 100.0, 1.0}, tol), 2);
  EXPECT_EQ(count(DType::f32, {kNan, 1.0}, {kNan, kNan}, tol), 1) << "a NaN reference needs a NaN";
  EXPECT_EQ(count(DType::bf16, {kInf, -kInf, 1e30}, {kInf, kInf, kInf}, tol), 2) << "the same infinity";
  EXPECT_EQ(count(DType::f16, {kNan, kInf, 2.0}, {2.0, 2.0, 2.0}, tol), 2) << "non-finite where r is finite";
  EXPECT_EQ(count(DType::i32, {1, 2, 3}, {1, 2, 4}, Tolerance{10, 10}), 1) << "integers compare exactly";
  EXPECT_EQ(count(DType::f32, {}, {}, tol), 0);
}

// Random values with a share of near misses, NaNs and infinities, in every dtype.
struct Pair {
  Tensor x, r;
};
Pair random_pair(DType t, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> x(static_cast<size_t>(n)), r(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) {
    r[i] = dtype_is_float(t) ? u(rng) : std::floor(u(rng) * 40);
    x[i] = r[i];
    switch (rng() % 12) {
      case 0: x[i] = r[i] + (dtype_is_float(t) ? 0.5 : 1.0); break;
      case 1: x[i] = r[i] * 1.004; break;
      case 2: if (dtype_is_float(t)) r[i] = kNan, x[i] = rng() % 2 ? kNan : 1.0; break;
      case 3: if (dtype_is_float(t)) r[i] = kInf, x[i] = rng() % 2 ? kInf : -kInf; break;
      case 4: if (dtype_is_float(t)) x[i] = kNan; break;
      default: break;
    }
  }
  return {make(t, x), make(t, r)};
}

constexpr DType kDtypes[] = {DType::f32, DType::bf16, DType::f16, DType::f8e4m3fn, DType::f8e5m2, DType::f64, DType::i32, DType::i64};

TEST(OutsideTolerance, AgreesWithCompareOutput) {
  const Tolerance tol{1e-2, 2e-3};
  for (DType t : kDtypes) {
    SCOPED_TRACE(dtype_name(t));
    const Pair p = random_pair(t, 5000, test::seed_for("outside_tolerance"));
    const int64_t n = count_outside_tolerance(p.x.data(), p.r.data(), 5000, t, tol, Device::cpu(), nullptr);
    EXPECT_GT(n, 0);
    EXPECT_EQ(n, compare_output("out", p.x, p.r, tol).num_bad);
    EXPECT_EQ(count_outside_tolerance(p.r.data(), p.r.data(), 5000, t, tol, Device::cpu(), nullptr), 0);
  }
}

TEST(OutsideTolerance, TheDeviceCountIsTheHostCount) {
  FK_REQUIRE_GPU();
  const Tolerance tol{1e-2, 2e-3};
  for (DType t : kDtypes) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t n = (int64_t{1} << 20) + 7;
    const Pair p = random_pair(t, n, test::seed_for("outside_tolerance_device"));
    const Tensor x = p.x.to(Device::cuda(0)), r = p.r.to(Device::cuda(0));
    EXPECT_EQ(count_outside_tolerance(x.data(), r.data(), n, t, tol, Device::cuda(0), nullptr),
              count_outside_tolerance(p.x.data(), p.r.data(), n, t, tol, Device::cpu(), nullptr));
    EXPECT_EQ(count_outside_tolerance(r.data(), r.data(), n, t, tol, Device::cuda(0), nullptr), 0);
  }
}

}  // namespace
}  // namespace fk::bench
