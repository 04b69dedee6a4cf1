// What the layer ops share in their definitions: the cost of a transformer layer over
// packed sequences, and the unit their tolerances are written in.
#pragma once
#include <cmath>
#include <cstdint>

#include "fk/element.h"
#include "fk/op_registry.h"

namespace fk::ops {

// One rounding of a 16-bit model dtype: 2^-8 for bf16, 2^-11 otherwise (f16; f32 runs are
// held to the same unit).
inline double half_rounding_unit(DType dt) { return dt == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }

// Root mean square of up to 4096 evenly spread elements of a packed host tensor (weights of
// production size would take seconds element by element): the size the tolerances scale by.
inline double sampled_rms(const TensorView& v) {
  const int64_t n = v.numel();
  if (v.data == nullptr || n == 0) return 0;
  const int64_t step = n / 4096 > 1 ? n / 4096 : 1;
  double sum_sq = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += step, ++count) {
    const double x = load_element(v.element_ptr(i), v.dtype);
    sum_sq += x * x;
  }
  return std::sqrt(sum_sq / static_cast<double>(count));
}

// A transformer layer (QKV, output projection, a two-matrix MLP of `intermediate`) over the
// packed sequences of `cu_seqlens_host`: the weights (of `weight`'s dtype) read once, the
// hidden states read and written, 2 flops per weight per token and 4 * l^2 * H for the
// attention of a sequence of l tokens.
inline OpCost packed_transformer_layer_cost(const TensorView& hidden, const TensorView& cu_seqlens_host,
                                            int64_t intermediate, const TensorView& weight) {
  const double T = static_cast<double>(hidden.shape[0]), H = static_cast<double>(hidden.shape[1]),
               I = static_cast<double>(intermediate);
  double pairs = 0;
  for (int64_t b = 0; b + 1 < cu_seqlens_host.shape[0]; ++b) {
    const double l = static_cast<double>(get_index(cu_seqlens_host, b + 1) - get_index(cu_seqlens_host, b));
    pairs += l * l;
  }
  const double es = static_cast<double>(weight.element_size());
  const double weights = (4 * H * H + 2 * H * I) * es;
  const double flops = 2 * T * (4 * H * H + 2 * H * I) + 4 * pairs * H;
  return OpCost{weights + 2 * T * H * es, flops, weight.dtype};
}

}  // namespace fk::ops
