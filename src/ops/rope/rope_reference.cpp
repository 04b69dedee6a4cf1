#include "ops/rope/rope_reference.h"

#include <cmath>
#include <vector>

#include "fk/element.h"

namespace fk::ops {

void rope_rotate_head(double* x, const double* cos_row, const double* sin_row, int64_t rot_dim, RopeStyle style) {
  const int64_t half = rot_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = style == RopeStyle::neox ? i : 2 * i;
    const int64_t i2 = style == RopeStyle::neox ? i + half : 2 * i + 1;
    const double x1 = x[i1], x2 = x[i2];
    x[i1] = x1 * cos_row[i] - x2 * sin_row[i];
    x[i2] = x2 * cos_row[i] + x1 * sin_row[i];
  }
}

void rope_reference(const RopeReferenceCall& c) {
  const RopeShape& s = c.shape;
  const int64_t T = s.q.tokens, D = s.head_size, rot = s.rot_dim, half = rot / 2;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = get_index(c.positions, t);
    FK_CHECK(p >= 0 && p < s.max_pos, c.op, ": positions[", t, "] = ", p, " is outside the cache's [0, ", s.max_pos,
             ")");
  }
  const bool norm = c.q_weight != nullptr;
  // The norm covers the whole head; the rotation alone touches only the first rot_dim dims.
  const int64_t width = norm ? D : rot;
  std::vector<double> cos_row(half), sin_row(half), x(width), wq, wk;
  if (norm) {
    wq.resize(D);
    wk.resize(D);
    for (int64_t d = 0; d < D; ++d) wq[d] = get(*c.q_weight, d), wk[d] = get(*c.k_weight, d);
  }

  auto process = [&](const TensorView& v, const RopeHeads& heads, const std::vector<double>& w, int64_t t) {
    for (int64_t h = 0; h < heads.heads; ++h) {
      const int64_t base = t * heads.token_stride + h * heads.head_stride;
      for (int64_t d = 0; d < width; ++d) x[d] = load_element(v.element_ptr(base + d), v.dtype);
      if (norm) {
        double sum_sq = 0;
        for (int64_t d = 0; d < D; ++d) sum_sq += x[d] * x[d];
        const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(D) + c.eps);
        for (int64_t d = 0; d < D; ++d) x[d] = x[d] * inv_rms * w[d];
      }
      rope_rotate_head(x.data(), cos_row.data(), sin_row.data(), rot, c.style);
      for (int64_t d = 0; d < width; ++d) store_element(v.element_ptr(base + d), v.dtype, x[d]);
    }
  };

  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = get_index(c.positions, t);
    for (int64_t i = 0; i < half; ++i) {
      cos_row[i] = get(c.cos_sin_cache, p, i);
      sin_row[i] = get(c.cos_sin_cache, p, half + i);
    }
    process(c.query, s.q, wq, t);
    process(c.key, s.k, wk, t);
  }
}

}  // namespace fk::ops
