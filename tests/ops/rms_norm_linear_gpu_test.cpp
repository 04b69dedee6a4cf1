// rms_norm_linear's CUDA baseline against the CUDA ops it fuses, on the engine's decode
// shapes: the residual sum is the same bits as fused_add_rms_norm's, the normalised rows
// within one unit in the last place (the block sums add in another order), and the GEMM
// output the same bits as the linear baseline run on the fused op's own normalised rows
// (the fused kernel is skinny_gemm with a prologue: same launch, same sums). Repeated calls
// are bit-identical. The oracle comparison is op_oracle_gpu_test's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

// Largest difference in units of the last place of bf16 between two bf16 tensors.
double max_ulps(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  double worst = 0;
  for (int64_t i = 0; i < ha.numel(); ++i) {
    const double x = load_element(ha.view().element_ptr(i), DType::bf16);
    const double y = load_element(hb.view().element_ptr(i), DType::bf16);
    const double ulp = std::ldexp(1.0, std::ilogb(std::fmax(std::fabs(x), 1e-30)) - 7);
    worst = std::fmax(worst, std::fabs(x - y) / ulp);
  }
  return worst;
}

TEST(RmsNormLinearGpu, MatchesTheOpsItFuses) {
  FK_REQUIRE_GPU();
  const Device gpu = Device::cuda();
  struct Shape {
    int64_t m, n, k;
    bool residual, bias;
  };
  // Llama-3.1-8B's qkv and Qwen3-30B-A3B's router at 1-4 rows, a first-layer norm (no
  // residual), K = 8192 (the largest prologue), and a prefill chunk (the unfused path).
  const Shape shapes[] = {{1, 6144, 4096, true, false}, {2, 512, 4096, true, true}, {3, 128, 2048, true, false},
                          {4, 1000, 2048, true, true},  {1, 128, 2048, false, false}, {4, 64, 8192, true, false},
                          {24, 256, 1024, true, false}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k);
    const uint64_t seed = test::seed_for("RmsNormLinearGpu", static_cast<uint64_t>(s.m * 100003 + s.n));
    const Tensor input = random_tensor({s.m, s.k}, DType::bf16, seed, 1, -2.f, 2.f).to(gpu);
    const Tensor residual = random_tensor({s.m, s.k}, DType::bf16, seed, 2, -4.f, 4.f).to(gpu);
    const Tensor norm_w = random_tensor({s.k}, DType::bf16, seed, 3, 0.5f, 1.5f).to(gpu);
    const Tensor w = random_tensor({s.n, s.k}, DType::bf16, seed, 4, -1.f, 1.f).to(gpu);
    const Tensor bias = s.bias ? random_tensor({s.n}, DType::bf16, seed, 5, -1.f, 1.f).to(gpu) : Tensor{};
    auto empty = [&](int64_t r, int64_t c) { return Tensor::zeros({r, c}, DType::bf16, gpu); };
    Tensor out = empty(s.m, s.n), normed = empty(s.m, s.k), r_out = empty(s.m, s.k);
    const TensorView bias_v = s.bias ? bias.view() : TensorView{};
    const RmsNormLinearArgs a{out.view(),   normed.view(), s.residual ? r_out.view() : TensorView{},
                              input.view(), s.residual ? residual.view() : TensorView{},
                              norm_w.view(), w.view(),     bias_v,
                              1e-6f};
    call_op(a, DeviceType::cuda, nullptr);

    // The unfused ops.
    Tensor x = input.to(gpu), r = residual.to(gpu), out_ref = empty(s.m, s.n);
    if (s.residual)
      call_op(FusedAddRmsNormArgs{x.view(), r.view(), norm_w.view(), 1e-6f}, DeviceType::cuda, nullptr);
    else
      call_op(RmsNormArgs{x.view(), input.view(), norm_w.view(), 1e-6f}, DeviceType::cuda, nullptr);
    call_op(LinearArgs{out_ref.view(), normed.view(), w.view(), bias_v, {}, {}}, DeviceType::cuda, nullptr);
    rt::device_synchronize();
    if (s.residual) EXPECT_TRUE(same_bits(r_out, r)) << "residual_out";
    EXPECT_LE(max_ulps(normed, x), 1.0) << "normed";
    EXPECT_TRUE(same_bits(out, out_ref)) << "out against linear on the same normalised rows";

    Tensor out2 = empty(s.m, s.n);
    RmsNormLinearArgs again = a;
    again.out = out2.view();
    call_op(again, DeviceType::cuda, nullptr);
    rt::device_synchronize();
    EXPECT_TRUE(same_bits(out, out2)) << "repeated call";
  }
}

}  // namespace
}  // namespace fk::ops
