#include "ops/layer/layer_reference_parts.h"

namespace fk::ops {

Tensor f64_matrix(int64_t rows, int64_t cols) { return Tensor::empty({rows, cols}, DType::f64); }

void copy_values(const TensorView& dst, const TensorView& src) {
  for (int64_t t = 0; t < src.shape[0]; ++t)
    for (int64_t h = 0; h < src.shape[1]; ++h) set(dst, get(src, t, h), t, h);
}

Tensor model_dtype_copy(const TensorView& cache, DType model) {
  Tensor copy = Tensor::empty({cache.shape[0], cache.shape[1], cache.shape[2], cache.shape[3]}, model);
  const TensorView c = copy.view();
  for (int64_t p = 0; p < cache.shape[0]; ++p)
    for (int64_t s = 0; s < cache.shape[1]; ++s)
      for (int64_t h = 0; h < cache.shape[2]; ++h)
        for (int64_t d = 0; d < cache.shape[3]; ++d) set(c, get(cache, p, s, h, d), p, s, h, d);
  return copy;
}

}  // namespace fk::ops
