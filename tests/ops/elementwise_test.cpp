// add beyond the generic oracle test: known values, in place on `a`, rounding of the sum to
// the dtype, and clear errors for bad arguments (the CPU implementation; the CUDA baseline
// shares the validation).
#include <gtest/gtest.h>

#include "fk/element.h"
#include "fk/ops/elementwise.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AddArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor f32_matrix(int64_t rows, int64_t cols, std::initializer_list<float> values) {
  Tensor t = Tensor::empty({rows, cols}, DType::f32);
  size_t i = 0;
  for (float v : values) t.data_as<float>()[i++] = v;
  return t;
}

TEST(Add, AddsElementWise) {
  const Tensor a = f32_matrix(2, 3, {1.f, 2.f, 3.f, -1.f, 0.5f, 1e30f});
  const Tensor b = f32_matrix(2, 3, {10.f, -2.f, 0.25f, 1.f, 0.5f, 1e30f});
  Tensor out = Tensor::empty({2, 3}, DType::f32);
  expect_ok(DeviceType::cpu, AddArgs{out, a, b});
  const float want[] = {11.f, 0.f, 3.25f, 0.f, 1.f, 2e30f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out.data_as<float>()[i], want[i]) << i;
}

TEST(Add, InPlaceOnATakesTheSameValuesAsApart) {
  const uint64_t seed = test::seed_for("Add.InPlace");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    Tensor a = ops::random_tensor({7, 300}, dt, seed, 1, -3.f, 3.f);
    const Tensor b = ops::random_tensor({7, 300}, dt, seed, 2, -3.f, 3.f);
    Tensor apart = Tensor::empty({7, 300}, dt);
    expect_ok(DeviceType::cpu, AddArgs{apart, a, b});
    expect_ok(DeviceType::cpu, AddArgs{a, a, b});
    EXPECT_EQ(test::count_changed_bytes(a, apart), 0) << dtype_name(dt);
  }
}

TEST(Add, SumIsRoundedToTheDtype) {
  // 1 + 2^-9 is not a bf16 value: the sum rounds (to nearest even) to 1.
  Tensor a = Tensor::empty({1, 1}, DType::bf16), b = Tensor::empty({1, 1}, DType::bf16);
  store_element(a.data(), DType::bf16, 1.0);
  store_element(b.data(), DType::bf16, 1.0 / 512);
  Tensor out = Tensor::empty({1, 1}, DType::bf16);
  expect_ok(DeviceType::cpu, AddArgs{out, a, b});
  EXPECT_EQ(load_element(out.data(), DType::bf16), 1.0);
}

TEST(AddErrors, NamesWhatIsWrong) {
  const Tensor a = Tensor::empty({4, 8}, DType::bf16), b = Tensor::empty({4, 8}, DType::bf16);
  Tensor out = Tensor::empty({4, 8}, DType::bf16);
  {
    const DeviceType be = DeviceType::cpu;
    expect_invalid(be, AddArgs{out, a, Tensor::empty({4, 9}, DType::bf16).view()}, "b");
    expect_invalid(be, AddArgs{out, a, Tensor::empty({4, 8}, DType::f16).view()}, "b");
    expect_invalid(be, AddArgs{Tensor::empty({3, 8}, DType::bf16).view(), a, b}, "out");
    expect_invalid(be, AddArgs{b, a, b}, "overlap");  // out onto b
    // out overlapping a without being a: half a row further.
    Tensor big = Tensor::empty({5, 8}, DType::bf16);
    TensorView shifted = big.view();
    shifted.shape[0] = 4;
    TensorView later = shifted;
    later.data = static_cast<char*>(later.data) + 4 * 2;
    expect_invalid(be, AddArgs{later, shifted, b}, "overlap");
  }
}

}  // namespace
}  // namespace fk
