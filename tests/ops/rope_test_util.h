// Helpers of the rope tests: host tensors from values, q/k views of a fused qkv buffer (how
// an engine calls the rope ops after the QKV GEMM), and f64 copies for oracle runs.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fk/element.h"
#include "fk/ops/rope.h"
#include "fk/random.h"
#include "fk/tensor.h"

namespace fk::test {

inline Tensor host_tensor(const Shape& shape, DType dtype, const std::vector<double>& values) {
  Tensor t = Tensor::empty(shape, dtype);
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  for (size_t i = 0; i < values.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), dtype, values[i]);
  return t;
}

inline Tensor random_host(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream, float lo = -2.f,
                          float hi = 2.f) {
  Tensor t = Tensor::empty(shape, dtype);
  fill_uniform(t.view(), seed, stream, lo, hi);
  return t;
}

inline Tensor to_dtype(const Tensor& t, DType dtype) {
  Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  Tensor out = Tensor::empty(host.shape(), dtype);
  for (int64_t i = 0; i < host.numel(); ++i)
    store_element(out.view().element_ptr(i), dtype, load_element(host.view().element_ptr(i), host.dtype()));
  return out;
}

inline double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

// The q, k and v parts of a fused qkv buffer [T, (Hq + 2 Hk) * D] as strided views, either
// [T, H*D] (rank 2) or [T, H, D] (rank 3).
struct FusedQkv {
  TensorView q, k, v;
};
inline FusedQkv fused_views(const Tensor& qkv, int64_t Hq, int64_t Hk, int64_t D, bool rank3, int64_t offset = 0) {
  const int64_t T = qkv.size(0);
  const int64_t row = qkv.size(1);
  auto part = [&](int64_t first_head, int64_t heads) {
    TensorView v = qkv.view();
    v.data = v.element_ptr(offset + first_head * D);
    if (rank3) {
      v.rank = 3;
      v.shape[0] = T, v.shape[1] = heads, v.shape[2] = D;
      v.strides[0] = row, v.strides[1] = D, v.strides[2] = 1;
    } else {
      v.rank = 2;
      v.shape[0] = T, v.shape[1] = heads * D;
      v.strides[0] = row, v.strides[1] = 1;
    }
    return v;
  };
  return {part(0, Hq), part(Hq, Hk), part(Hq + Hk, Hk)};
}

inline ops::RotaryEmbeddingArgs rope_args(const TensorView& positions, const TensorView& q, const TensorView& k,
                                          const TensorView& cache, int64_t D, ops::RopeStyle style) {
  ops::RotaryEmbeddingArgs a{};
  a.positions = positions;
  a.query = q;
  a.key = k;
  a.cos_sin_cache = cache;
  a.head_size = static_cast<int32_t>(D);
  a.style = style;
  return a;
}

inline ops::QkNormRopeArgs qk_norm_rope_args(const TensorView& positions, const TensorView& q, const TensorView& k,
                                             const TensorView& qw, const TensorView& kw, const TensorView& cache,
                                             int64_t D, ops::RopeStyle style, float eps) {
  ops::QkNormRopeArgs a{};
  a.positions = positions;
  a.query = q;
  a.key = k;
  a.q_weight = qw;
  a.k_weight = kw;
  a.cos_sin_cache = cache;
  a.head_size = static_cast<int32_t>(D);
  a.style = style;
  a.eps = eps;
  return a;
}

}  // namespace fk::test
