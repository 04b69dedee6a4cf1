// relu beyond the generic oracle tests (every test workload and its row-strided views against
// the f64 oracle): values at and around zero, infinities and NaN in every dtype, a row-strided
// out into a wider buffer (DLRM's bottom MLP writes its last activation into the
// interaction's input buffer), the definition, and errors that name the wrong field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/activation.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::ReluArgs;

TEST(Relu, ValuesAroundZeroAndSpecials) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> in = {-2.5, -1e-3, 0.0, 1e-3, 3.0, -inf, inf, nan};
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = Tensor::empty({2, 4}, dt), out = Tensor::empty({2, 4}, dt), out64 = Tensor::empty({2, 4}, DType::f64);
    for (size_t i = 0; i < in.size(); ++i) store_element(x.view().element_ptr(static_cast<int64_t>(i)), dt, in[i]);
    test::expect_ok(DeviceType::cpu, ReluArgs{out, x});
    test::expect_ok(DeviceType::cpu, ReluArgs{out64, x});
    for (int64_t i = 0; i < 8; ++i) {
      const double xi = load_element(x.view().element_ptr(i), dt);
      const double want = std::isnan(xi) ? nan : (xi < 0 ? 0.0 : xi);
      for (const Tensor* o : {&out, &out64}) {
        const double got = load_element(o->view().element_ptr(i), o->dtype());
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got)) << i;
        else
          EXPECT_EQ(got, want) << i;
      }
    }
  }
}

TEST(Relu, RowStridedOutIntoAWiderBuffer) {
  const uint64_t seed = test::seed_for("relu_strided");
  const Tensor x = ops::random_tensor({5, 16}, DType::bf16, seed, 1, -4.f, 4.f);
  const Tensor buffer = ops::random_tensor({5, 4, 16}, DType::bf16, seed, 2);
  const Tensor before = buffer.clone();
  TensorView slot = buffer.view();
  slot.rank = 2;
  slot.shape[0] = 5;
  slot.shape[1] = 16;
  slot.strides[0] = 64;
  slot.strides[1] = 1;
  test::expect_ok(DeviceType::cpu, ReluArgs{slot, x});
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t f = 0; f < 4; ++f)
      for (int64_t k = 0; k < 16; ++k) {
        const double got = get(buffer.view(), t, f, k);
        EXPECT_EQ(got, f == 0 ? std::max(get(x.view(), t, k), 0.0) : get(before.view(), t, f, k));
      }
}

TEST(Relu, DefinitionAndNamedErrors) {
  const OpDef& def = OpRegistry::global().def(ReluArgs::kName);
  EXPECT_EQ(def.family, "activation");
  EXPECT_EQ(def.level, "L1");
  EXPECT_EQ(def.architectures, std::vector<std::string>{"dlrm"});
  const Json w = {{"tokens", 3}, {"hidden", 40}, {"dtype", "f16"}};
  const OpCase c = def.make_case(w, 1);
  EXPECT_EQ(def.workload_from_call(c.args_ptr()), w);
  EXPECT_EQ(def.cost(c).bytes, 2.0 * 3 * 40 * 2);

  const Tensor x = Tensor::empty({2, 8}, DType::bf16);
  Tensor out = Tensor::empty({2, 8}, DType::bf16), wide = Tensor::empty({2, 9}, DType::bf16);
  Tensor half = Tensor::empty({2, 8}, DType::f16);
  test::expect_invalid(DeviceType::cpu, ReluArgs{wide, x}, "out must have the shape of input");
  test::expect_invalid(DeviceType::cpu, ReluArgs{half, x}, "out must be bf16");
  test::expect_invalid(DeviceType::cpu, ReluArgs{out, Tensor::empty({2, 8}, DType::i32)},
                       "input must be one of f32/f16/bf16");
  test::expect_invalid(DeviceType::cpu, ReluArgs{x, x}, "out must not overlap input");
}

}  // namespace
}  // namespace fk
