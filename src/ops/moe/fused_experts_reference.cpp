#include "ops/moe/fused_experts_reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {

namespace {

constexpr int64_t kScaleBlock = 128;

// Expert e of a [E, rows, cols] weight as doubles (fp8: times its block scale).
std::vector<double> expert_matrix(const TensorView& w, const TensorView& scale, int64_t e) {
  const int64_t rows = w.shape[1], cols = w.shape[2];
  std::vector<double> m(static_cast<size_t>(rows * cols));
  const auto* base = static_cast<const char*>(w.data) + e * rows * cols * w.element_size();
  const bool scaled = w.dtype == DType::f8e4m3fn;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = load_element(base + (r * cols + c) * w.element_size(), w.dtype);
      if (scaled) x *= get(scale, e, r / kScaleBlock, c / kScaleBlock);
      m[static_cast<size_t>(r * cols + c)] = x;
    }
  return m;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// Root mean square of up to ~64K evenly spaced elements (fp8 weights times their scales).
double sampled_rms(const TensorView& w, const TensorView& scale) {
  const int64_t n = w.numel();
  if (n == 0) return 0;
  const int64_t step = std::max<int64_t>(1, n / 65536);
  const bool scaled = w.dtype == DType::f8e4m3fn && scale.data != nullptr;
  const int64_t rows = w.rank == 3 ? w.shape[1] : 1, cols = w.shape[w.rank - 1];
  double sum = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += step) {
    double x;
    if (w.rank == 2) {
      x = get(w, i / cols, i % cols);  // hidden: rows may be strided
    } else {
      x = load_element(w.element_ptr(i), w.dtype);
    }
    if (scaled) {
      const int64_t e = i / (rows * cols), r = (i / cols) % rows, c = i % cols;
      x *= get(scale, e, r / kScaleBlock, c / kScaleBlock);
    }
    sum += x * x;
    ++count;
  }
  return std::sqrt(sum / static_cast<double>(count));
}

// sqrt(E[silu(g)^2]) / sigma for g ~ N(0, sigma^2), by quadrature.
double silu_rms_factor(double sigma) {
  if (sigma <= 0) return 0;
  double num = 0, den = 0;
  for (int i = -400; i <= 400; ++i) {
    const double z = i / 50.0, p = std::exp(-0.5 * z * z), s = silu(sigma * z);
    num += p * s * s;
    den += p;
  }
  return std::sqrt(num / den) / sigma;
}

}  // namespace

void fused_experts_reference(const FusedExpertsArgs& a) {
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1], E = a.w13.shape[0], I = a.w13.shape[1] / 2,
                k = a.topk_ids.shape[1];
  std::vector<double> x(static_cast<size_t>(T * H));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) x[static_cast<size_t>(t * H + h)] = get(a.hidden, t, h);
  std::vector<std::vector<int64_t>> slots(static_cast<size_t>(E));  // flattened t * k + j per expert
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = get_index(a.topk_ids, t, j);
      if (e >= 0 && e < E) slots[static_cast<size_t>(e)].push_back(t * k + j);
    }
  std::vector<double> acc(static_cast<size_t>(T * H), 0.0), act(static_cast<size_t>(I));
  for (int64_t e = 0; e < E; ++e) {
    if (slots[static_cast<size_t>(e)].empty()) continue;
    const std::vector<double> w13 = expert_matrix(a.w13, a.w13_scale, e), w2 = expert_matrix(a.w2, a.w2_scale, e);
    for (const int64_t s : slots[static_cast<size_t>(e)]) {
      const int64_t t = s / k;
      const double* xt = x.data() + t * H;
      for (int64_t i = 0; i < I; ++i) {
        const double* g_row = w13.data() + i * H;
        const double* u_row = w13.data() + (I + i) * H;
        double g = 0, u = 0;
        for (int64_t h = 0; h < H; ++h) {
          g += g_row[h] * xt[h];
          u += u_row[h] * xt[h];
        }
        act[static_cast<size_t>(i)] = silu(g) * u;
      }
      const double weight = get(a.topk_weights, t, s % k);
      for (int64_t h = 0; h < H; ++h) {
        const double* d_row = w2.data() + h * I;
        double d = 0;
        for (int64_t i = 0; i < I; ++i) d += d_row[i] * act[static_cast<size_t>(i)];
        acc[static_cast<size_t>(t * H + h)] += weight * d;
      }
    }
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) set(a.out, acc[static_cast<size_t>(t * H + h)], t, h);
}

Tolerance fused_experts_tolerance(const FusedExpertsArgs& a, DType out_dtype) {
  Tolerance tol = default_tolerance(out_dtype);
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1], I = a.w13.shape[1] / 2, k = a.topk_ids.shape[1],
                E = a.w13.shape[0];
  if (T == 0) return tol;
  const double sigma_g = std::sqrt(static_cast<double>(H)) * sampled_rms(a.hidden, TensorView{}) *
                         sampled_rms(a.w13, a.w13_scale);
  const double rms_act = silu_rms_factor(sigma_g) * sigma_g * sigma_g;  // silu(g) * u, u ~ N(0, sigma_g^2)
  const double rms_down = std::sqrt(static_cast<double>(I)) * rms_act * sampled_rms(a.w2, a.w2_scale);
  double weight_sum = 0;
  for (int64_t t = 0; t < T; ++t) {
    double s = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = get_index(a.topk_ids, t, j);
      if (e >= 0 && e < E) s += std::fabs(get(a.topk_weights, t, j));
    }
    weight_sum = std::max(weight_sum, s);
  }
  const DType act_dtype = a.hidden.dtype;
  const double unit = act_dtype == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double c = a.w13.dtype == DType::f8e4m3fn ? 4.0 : 3.0;
  tol.atol += c * 2 * unit * rms_down * weight_sum;
  return tol;
}

}  // namespace fk::ops
