// Helpers of the conv family's tests: NHWC tensors filled from a formula, channel-slice
// views of a wider buffer, and element-wise comparison of whole tensors of any rank.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "fk/element.h"
#include "fk/tensor.h"

namespace fk::test {

// A rank-4 host tensor filled by f(i, j, k, l).
inline Tensor filled4(const Shape& shape, DType dt,
                      const std::function<double(int64_t, int64_t, int64_t, int64_t)>& f) {
  Tensor t = Tensor::empty(shape, dt);
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k)
        for (int64_t l = 0; l < shape[3]; ++l) set(t.view(), f(i, j, k, l), i, j, k, l);
  return t;
}

// A [N, H, W, C] view of channels [c0, c0 + C) of a wider [N, H, W, total] buffer.
inline TensorView channel_slice(const Tensor& buffer, int64_t c0, int64_t C) {
  TensorView v = buffer.view();
  v.data = v.element_ptr(c0);
  v.shape[3] = C;
  return v;
}

// Two contiguous tensors of one shape (actual may live on the GPU), element by element:
// |a - e| <= atol + rtol |e|, NaN only where expected.
inline void expect_tensors_near(const Tensor& actual, const Tensor& expected, Tolerance tol, const std::string& what) {
  const Tensor a = actual.device().is_cpu() ? actual : actual.to(Device::cpu());
  ASSERT_EQ(a.shape(), expected.shape()) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = load_element(a.view().element_ptr(i), a.dtype());
    const double e = load_element(expected.view().element_ptr(i), expected.dtype());
    const bool ok = std::isnan(e) ? std::isnan(x) : std::fabs(x - e) <= tol.atol + tol.rtol * std::fabs(e);
    if (!ok && bad++ < 5) ADD_FAILURE() << what << ": element " << i << " = " << x << ", expected " << e;
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace fk::test
