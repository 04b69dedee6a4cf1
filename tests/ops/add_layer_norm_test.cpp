// add_layer_norm beyond the generic oracle test: it equals add then layer_norm (the sum
// rounded to the dtype first), in place on the residual, the residual is otherwise left
// alone, and clear errors for bad arguments (the CPU implementation; the CUDA baseline
// shares the validation).
#include <gtest/gtest.h>

#include "fk/ops/elementwise.h"
#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AddLayerNormArgs;
using test::expect_invalid;
using test::expect_ok;

TEST(AddLayerNorm, EqualsAddThenLayerNormAndRunsInPlace) {
  const uint64_t seed = test::seed_for("AddLayerNorm.Composition");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (bias ? " bias" : " no bias"));
      const int64_t T = 6, H = 257;
      const Tensor input = ops::random_tensor({T, H}, dt, seed, 1, -1.f, 1.f);
      Tensor residual = ops::random_tensor({T, H}, dt, seed, 2, -1.f, 3.f);
      const Tensor w = ops::random_tensor({H}, dt, seed, 3, 0.5f, 1.5f);
      const Tensor b = bias ? ops::random_tensor({H}, dt, seed, 4, -0.5f, 0.5f) : Tensor();
      const TensorView bv = bias ? b.view() : TensorView{};
      // Unfused: the sum stored in the dtype, then the norm.
      Tensor sum = Tensor::empty({T, H}, dt), want = Tensor::empty({T, H}, dt);
      expect_ok(DeviceType::cpu, ops::AddArgs{sum, input, residual});
      expect_ok(DeviceType::cpu, ops::LayerNormArgs{want, sum, w, bv, 1e-5f});
      Tensor got = Tensor::empty({T, H}, dt);
      const Tensor residual_before = residual.clone();
      expect_ok(DeviceType::cpu, AddLayerNormArgs{got, input, residual, w, bv, 1e-5f});
      EXPECT_EQ(test::count_changed_bytes(got, want), 0);
      EXPECT_EQ(test::count_changed_bytes(residual, residual_before), 0) << "the residual is read only";
      // In place on the residual: the same values.
      expect_ok(DeviceType::cpu, AddLayerNormArgs{residual, input, residual, w, bv, 1e-5f});
      EXPECT_EQ(test::count_changed_bytes(residual, want), 0);
    }
  }
}

TEST(AddLayerNormErrors, NamesWhatIsWrong) {
  const DeviceType be = DeviceType::cpu;
  const Tensor in = Tensor::empty({4, 8}, DType::bf16), res = Tensor::empty({4, 8}, DType::bf16);
  const Tensor w = Tensor::empty({8}, DType::bf16), b = Tensor::empty({8}, DType::bf16);
  Tensor out = Tensor::empty({4, 8}, DType::bf16);
  expect_invalid(be, AddLayerNormArgs{out, in, Tensor::empty({4, 9}, DType::bf16).view(), w, b, 1e-5f}, "residual");
  expect_invalid(be, AddLayerNormArgs{out, in, Tensor::empty({4, 8}, DType::f16).view(), w, b, 1e-5f}, "residual");
  expect_invalid(be, AddLayerNormArgs{out, in, res, Tensor::empty({9}, DType::bf16).view(), b, 1e-5f}, "weight");
  expect_invalid(be, AddLayerNormArgs{out, in, res, w, Tensor::empty({7}, DType::bf16).view(), 1e-5f}, "bias");
  expect_invalid(be, AddLayerNormArgs{in, in, res, w, b, 1e-5f}, "overlap");  // out onto input
  expect_invalid(be, AddLayerNormArgs{out, in, res, w, b, 0.f}, "eps");
  // out overlapping the residual without being it.
  Tensor big = Tensor::empty({5, 8}, DType::bf16);
  TensorView r = big.view();
  r.shape[0] = 4;
  TensorView later = r;
  later.data = static_cast<char*>(later.data) + 8 * 2;
  expect_invalid(be, AddLayerNormArgs{later, in, r, w, b, 1e-5f}, "overlap");
}

}  // namespace
}  // namespace fk
