// The linear baseline's separate bias kernel (its fallback when cuBLASLt has no bias
// epilogue for a problem): out[m, n] += bias[n] on a row-strided bf16 matrix.
#include <gtest/gtest.h>

#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/tensor.h"
#include "ops/linear/linear_bias.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

TEST(LinearBiasGpu, AddsBiasToEveryRowOnly) {
  FK_REQUIRE_GPU();
  const int64_t M = 1500, N = 300, ld = 320;  // more rows than the grid has in y
  Tensor out = Tensor::empty({M, ld}, DType::bf16), bias = Tensor::empty({N}, DType::bf16);
  for (int64_t i = 0; i < M * ld; ++i) store_element(out.view().element_ptr(i), DType::bf16, (i % 13) * 0.25);
  for (int64_t n = 0; n < N; ++n) set(bias.view(), (n % 7) - 3.0, n);
  Tensor out_d = out.to(Device::cuda(0)), bias_d = bias.to(Device::cuda(0));
  add_bias_rows(out_d.data(), ld, bias_d.data(), M, N, DType::bf16, nullptr);
  rt::device_synchronize();
  const Tensor got = out_d.to(Device::cpu());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < ld; ++c) {
      const double before = get(out.view(), m, c);
      const double expect = c < N ? before + get(bias.view(), c) : before;  // columns past N untouched
      ASSERT_EQ(get(got.view(), m, c), expect) << m << " " << c;
    }
}

}  // namespace
}  // namespace fk::ops
