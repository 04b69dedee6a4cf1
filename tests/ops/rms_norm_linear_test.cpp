// rms_norm_linear on the CPU: it equals fused_add_rms_norm (or rms_norm) then linear bit for
// bit (the engine's CPU path relies on it), leaves its inputs alone, and names what is
// wrong with bad arguments. The oracle comparison on random and edge shapes is the generic
// op_oracle test's; the CUDA baseline's is op_oracle_gpu_test's and rms_norm_linear_gpu_test's.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/random.h"

namespace fk::ops {
namespace {

Tensor random(Shape shape, uint64_t stream, float lo, float hi) {
  Tensor t = Tensor::empty(shape, DType::bf16);
  fill_uniform(t.view(), 77, stream, lo, hi);
  return t;
}

Tensor copy(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  std::memcpy(c.data(), t.data(), t.nbytes());
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

fk_status run_cpu(const RmsNormLinearArgs& a) {
  return OpRegistry::global().baseline(RmsNormLinearArgs::kName, DeviceType::cpu)(&a, nullptr);
}

TEST(RmsNormLinear, EqualsFusedAddRmsNormThenLinear) {
  constexpr int64_t M = 3, K = 96, N = 40;
  const Tensor input = random({M, K}, 1, -2, 2), residual = random({M, K}, 2, -4, 4);
  const Tensor norm_w = random({K}, 3, 0.5f, 1.5f), w = random({N, K}, 4, -1, 1), bias = random({N}, 5, -1, 1);
  for (bool with_residual : {true, false}) {
    SCOPED_TRACE(with_residual ? "with residual" : "without residual");
    // Unfused: the engine's former sequence, in place.
    Tensor x = copy(input), r = copy(residual), out_ref = Tensor::zeros({M, N}, DType::bf16);
    if (with_residual)
      call_op(FusedAddRmsNormArgs{x.view(), r.view(), norm_w.view(), 1e-6f}, DeviceType::cpu, nullptr);
    else
      call_op(RmsNormArgs{x.view(), copy(input).view(), norm_w.view(), 1e-6f}, DeviceType::cpu, nullptr);
    call_op(LinearArgs{out_ref.view(), x.view(), w.view(), bias.view(), {}, {}}, DeviceType::cpu, nullptr);

    Tensor out = Tensor::zeros({M, N}, DType::bf16), normed = Tensor::zeros({M, K}, DType::bf16);
    Tensor r_out = Tensor::zeros({M, K}, DType::bf16);
    const Tensor input_before = copy(input), residual_before = copy(residual);
    RmsNormLinearArgs a{out.view(), normed.view(), with_residual ? r_out.view() : TensorView{}, input.view(),
                        with_residual ? residual.view() : TensorView{}, norm_w.view(), w.view(), bias.view(), 1e-6f};
    ASSERT_EQ(run_cpu(a), FK_OK) << last_error_message();
    EXPECT_TRUE(same_bits(out, out_ref));
    EXPECT_TRUE(same_bits(normed, x));
    if (with_residual) EXPECT_TRUE(same_bits(r_out, r));
    EXPECT_TRUE(same_bits(input, input_before));  // inputs are read only
    EXPECT_TRUE(same_bits(residual, residual_before));
  }
}

void expect_error(const RmsNormLinearArgs& a, const std::string& needle) {
  EXPECT_EQ(run_cpu(a), FK_ERR_INVALID_ARGUMENT) << "expected an error mentioning: " << needle;
  EXPECT_NE(std::string(last_error_message()).find(needle), std::string::npos) << last_error_message();
}

TEST(RmsNormLinear, BadArgumentsAreClearErrors) {
  constexpr int64_t M = 2, K = 16, N = 4;
  Tensor out = Tensor::zeros({M, N}, DType::bf16), normed = Tensor::zeros({M, K}, DType::bf16);
  Tensor r_in = Tensor::zeros({M, K}, DType::bf16), r_out = Tensor::zeros({M, K}, DType::bf16);
  Tensor in = Tensor::zeros({M, K}, DType::bf16), nw = Tensor::zeros({K}, DType::bf16);
  Tensor w = Tensor::zeros({N, K}, DType::bf16);
  auto args = [&] {
    return RmsNormLinearArgs{out.view(), normed.view(), r_out.view(), in.view(), r_in.view(), nw.view(), w.view(),
                             TensorView{}, 1e-6f};
  };
  RmsNormLinearArgs a = args();
  ASSERT_EQ(run_cpu(a), FK_OK) << last_error_message();
  a.residual_out = a.residual_in;  // in place: other CTAs would read what one of them wrote
  expect_error(a, "residual_out must not overlap residual_in");
  a = args();
  a.residual_out = TensorView{};
  expect_error(a, "residual_out is written exactly when residual_in is given");
  a = args();
  a.normed = a.input;
  expect_error(a, "normed must not overlap input");
  Tensor short_nw = Tensor::zeros({K - 1}, DType::bf16);
  a = args();
  a.norm_weight = short_nw.view();
  expect_error(a, "norm_weight dimension 0 must be 16");
  Tensor w16 = Tensor::zeros({N, K}, DType::f16);
  a = args();
  a.weight = w16.view();
  expect_error(a, "weight must be bf16");
  Tensor normed_wide = Tensor::zeros({M, K + 8}, DType::bf16);
  a = args();
  a.normed = normed_wide.view();
  expect_error(a, "normed dimension 1 must be 16");
  a = args();
  a.eps = 0;
  expect_error(a, "eps must be positive");
  Tensor in32 = Tensor::zeros({M, K}, DType::f32);
  a = args();
  a.input = in32.view();
  expect_error(a, "input must be one of bf16/f16");
}

}  // namespace
}  // namespace fk::ops
