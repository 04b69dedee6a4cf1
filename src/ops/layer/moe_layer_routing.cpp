#include "ops/layer/moe_layer_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fk/element.h"
#include "fk/ops/linear.h"
#include "ops/common/layer_cost.h"
#include "ops/common/validate.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/linear/linear_reference.h"
#include "ops/norm/norm_reference.h"

namespace fk::ops {

namespace {

// How far an implementation's router logits may be from the f64 logits of its own
// residual: its normalised rows rounded to the dtype (a random walk of half-ulps through
// the router's GEMM, at most 8 of its typical size) and the logit's own rounding.
double logit_margin(const MoeLayerRouter& r, double logit) {
  const double u = half_rounding_unit(r.post_attention_norm.dtype);
  const double typical = std::sqrt(static_cast<double>(r.router_weight.shape[1])) * sampled_rms(r.post_attention_norm) *
                         sampled_rms(r.router_weight);
  return 8 * u * typical + 2 * u * std::fabs(logit);
}

// Every selection of k experts a token may make: those whose logit is clearly above the
// k-th / (k+1)-th boundary, plus any of those within the margin of it.
std::vector<std::vector<int32_t>> allowed_selections(const MoeLayerRouter& r, const TensorView& logits, int64_t row,
                                                     int64_t k) {
  const int64_t E = logits.shape[1];
  const std::vector<int32_t> order = top_k_experts(logits, row, E);
  const double kth = get(logits, row, order[static_cast<size_t>(k - 1)]);
  const double next = k < E ? get(logits, row, order[static_cast<size_t>(k)]) : -INFINITY;
  const double mid = std::isfinite(next) ? 0.5 * (kth + next) : kth, m = logit_margin(r, mid);
  std::vector<int32_t> sure, band;
  for (int32_t e : order) {
    const double l = get(logits, row, e);
    if (l > mid + m) sure.push_back(e);
    else if (l >= mid - m) band.push_back(e);
  }
  const auto need = static_cast<size_t>(k) - std::min(sure.size(), static_cast<size_t>(k));
  if (need > band.size()) return {top_k_experts(logits, row, k)};
  // Subsets of `need` band members, in order (the band is a few experts wide).
  std::vector<std::vector<int32_t>> out;
  std::vector<bool> pick(band.size(), false);
  std::fill(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(need), true);
  do {
    std::vector<int32_t> sel = sure;
    for (size_t i = 0; i < band.size(); ++i)
      if (pick[i]) sel.push_back(band[i]);
    out.push_back(sel);
  } while (std::prev_permutation(pick.begin(), pick.end()) && out.size() < 256);
  return out;
}

// Whether row t of got is within its bound of the experts' output on some allowed
// selection, recomputed from the implementation's residual row: the op's tolerance, or
// where larger the dtype's atol plus per_rms times the weighted rms of the terms summed
// into each element and the routing weights' own error.
bool matches_some_selection(const MoeLayerRouter& r, const TensorView& residual, const TensorView& got, int64_t t,
                            int64_t k, const RowTolerance& tol) {
  const MoeRouterRows rows = moe_router_rows(r, residual, t, 1);
  const int64_t H = got.shape[1];
  std::vector<ExpertRow> expert_out(static_cast<size_t>(rows.logits.size(1)));
  std::vector<double> want(static_cast<size_t>(H)), term_sq(static_cast<size_t>(H)), weighted_abs(static_cast<size_t>(H));
  for (const std::vector<int32_t>& sel : allowed_selections(r, rows.logits, 0, k)) {
    const std::vector<double> w = routing_weights(r, rows.logits, 0, sel);
    // Logits held in the model dtype move each weight by about u |logit| relatively: on
    // logits far from 1 (coherent rows) that is the largest error of the row.
    double largest_logit = 0;
    for (int32_t e : sel) largest_logit = std::max(largest_logit, std::fabs(get(rows.logits.view(), 0, e)));
    const double weight_error = half_rounding_unit(r.post_attention_norm.dtype) * largest_logit;
    std::fill(want.begin(), want.end(), 0.0);
    std::fill(term_sq.begin(), term_sq.end(), 0.0);
    std::fill(weighted_abs.begin(), weighted_abs.end(), 0.0);
    for (size_t j = 0; j < sel.size(); ++j) {
      ExpertRow& y = expert_out[static_cast<size_t>(sel[j])];
      if (y.y.empty()) y = r.expert_row(rows.x, 0, sel[j]);
      for (size_t h = 0; h < want.size(); ++h) {
        want[h] += w[j] * y.y[h];
        term_sq[h] += w[j] * w[j] * y.term_rms[h] * y.term_rms[h];
        weighted_abs[h] += w[j] * std::fabs(y.y[h]);
      }
    }
    bool ok = true;
    for (int64_t h = 0; h < H && ok; ++h) {
      const auto i = static_cast<size_t>(h);
      const double atol = std::max(tol.tol.atol, tol.floor_atol + tol.per_rms * std::sqrt(term_sq[i]) +
                                                     weight_error * weighted_abs[i]);
      ok = within_tolerance(get(got, t, h), want[static_cast<size_t>(h)], Tolerance{atol, tol.tol.rtol});
    }
    if (ok) return true;
  }
  return false;
}

}  // namespace

ExpertRow down_projection(const TensorView& w2, const TensorView& w2_bias, int32_t e, const std::vector<double>& act) {
  const int64_t H = w2.shape[1], I = w2.shape[2];
  ExpertRow out{std::vector<double>(static_cast<size_t>(H)), std::vector<double>(static_cast<size_t>(H))};
  const auto* base = static_cast<const char*>(w2.data) + e * H * I * w2.element_size();
  for (int64_t h = 0; h < H; ++h) {
    double y = w2_bias.data != nullptr && w2_bias.numel() > 0 ? get(w2_bias, e, h) : 0.0, sq = 0;
    for (int64_t i = 0; i < I; ++i) {
      const double term = load_element(base + (h * I + i) * w2.element_size(), w2.dtype) * act[static_cast<size_t>(i)];
      y += term;
      sq += term * term;
    }
    out.y[static_cast<size_t>(h)] = y;
    out.term_rms[static_cast<size_t>(h)] = std::sqrt(sq);
  }
  return out;
}

MoeRouterRows moe_router_rows(const MoeLayerRouter& r, const TensorView& residual, int64_t t0, int64_t n) {
  const int64_t H = r.post_attention_norm.shape[0], E = r.router_weight.shape[0];
  TensorView rows = residual;
  rows.data = residual.element_ptr(t0 * residual.strides[0]);
  rows.shape[0] = n;
  MoeRouterRows out{Tensor::empty({n, H}, DType::f64), Tensor::empty({n, E}, DType::f64)};
  rms_norm_reference(out.x, rows, nullptr, r.post_attention_norm, r.eps, NormScale::weight);
  linear_reference(LinearArgs{out.logits, out.x, r.router_weight, r.router_bias, TensorView{}, TensorView{}});
  return out;
}

std::vector<int32_t> top_k_experts(const TensorView& logits, int64_t row, int64_t k) {
  std::vector<int32_t> ids(static_cast<size_t>(logits.shape[1]));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t x, int32_t y) { return get(logits, row, x) > get(logits, row, y); });
  ids.resize(static_cast<size_t>(k));
  return ids;
}

std::vector<double> routing_weights(const MoeLayerRouter& r, const TensorView& logits, int64_t row,
                                    const std::vector<int32_t>& selected) {
  double top = -INFINITY;
  for (int64_t e = 0; e < logits.shape[1]; ++e) top = std::max(top, get(logits, row, e));
  double sum = 0;
  if (r.renormalize)
    for (int32_t e : selected) sum += std::exp(get(logits, row, e) - top);
  else
    for (int64_t e = 0; e < logits.shape[1]; ++e) sum += std::exp(get(logits, row, e) - top);
  std::vector<double> w;
  for (int32_t e : selected) w.push_back(std::exp(get(logits, row, e) - top) / sum);
  return w;
}

RoutedRows route_rows(const MoeLayerRouter& r, const TensorView& logits, int64_t k) {
  const int64_t T = logits.shape[0];
  RoutedRows out{Tensor::empty({T, k}, DType::i32), f64_matrix(T, k)};
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<int32_t> top = top_k_experts(logits, t, k);
    const std::vector<double> w = routing_weights(r, logits, t, top);
    for (int64_t j = 0; j < k; ++j) {
      out.ids.data_as<int32_t>()[t * k + j] = top[static_cast<size_t>(j)];
      set(out.weights.view(), w[static_cast<size_t>(j)], t, j);
    }
  }
  return out;
}

GateUp gate_up_row(const TensorView& w13, const TensorView& w13_bias, int32_t e, const TensorView& x, int64_t row) {
  const int64_t H = x.shape[1], I = w13.shape[1] / 2;
  GateUp r{std::vector<double>(static_cast<size_t>(I)), std::vector<double>(static_cast<size_t>(I))};
  const bool bias = arg_present(w13_bias);
  for (int64_t i = 0; i < I; ++i) {
    double g = bias ? get(w13_bias, e, i) : 0.0, u = bias ? get(w13_bias, e, I + i) : 0.0;
    for (int64_t h = 0; h < H; ++h) {
      g += get(w13, e, i, h) * get(x, row, h);
      u += get(w13, e, I + i, h) * get(x, row, h);
    }
    r.g[static_cast<size_t>(i)] = g, r.u[static_cast<size_t>(i)] = u;
  }
  return r;
}

bool within_tolerance(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  return std::isfinite(got) && std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

Tolerance row_tolerance(const RowTolerance& r, const TensorView& want, int64_t first, int64_t n) {
  double sum_sq = 0;
  int64_t count = 0;
  for (int64_t i = first; i < first + n; ++i) {
    const double x = load_element(want.element_ptr(i), want.dtype);
    if (std::isfinite(x)) sum_sq += x * x, ++count;
  }
  const double rms = count > 0 ? std::sqrt(sum_sq / static_cast<double>(count)) : 0.0;
  return Tolerance{std::max(r.tol.atol, r.floor_atol + r.per_rms * rms), r.tol.rtol};
}

RowTolerance layer_row_tolerance(Tolerance tol, DType dt, DType model, bool against_baseline) {
  const double widen = against_baseline ? 2.0 : 1.0;
  return RowTolerance{Tolerance{widen * tol.atol, widen * tol.rtol}, widen * default_tolerance(dt).atol,
                      widen * 8 * half_rounding_unit(model)};
}

Tensor layer_o_rows(const TensorView& residual_out, const TensorView& hidden_in, const TensorView& residual_in,
                    bool first_layer) {
  const int64_t T = residual_out.shape[0], H = residual_out.shape[1];
  Tensor o = Tensor::empty({T, H}, DType::f64);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const double s = get(hidden_in, t, h) + (first_layer ? 0.0 : get(residual_in, t, h));
      o.data_as<double>()[t * H + h] = get(residual_out, t, h) - s;
    }
  return o;
}

std::string compare_rows(const char* name, const TensorView& got, const TensorView& want, const RowTolerance& tol,
                         const TensorView* scale) {
  const int64_t n = got.rank > 0 ? got.shape[got.rank - 1] : 1, rows = n > 0 ? got.numel() / n : 0;
  int64_t bad = 0, worst = -1;
  double worst_excess = -1;
  Tolerance worst_tol{};
  for (int64_t row = 0; row < rows; ++row) {
    const Tolerance t = row_tolerance(tol, scale != nullptr ? *scale : want, row * n, n);
    for (int64_t i = row * n; i < (row + 1) * n; ++i) {
      const double x = load_element(got.element_ptr(i), got.dtype), r = load_element(want.element_ptr(i), want.dtype);
      if (within_tolerance(x, r, t)) continue;
      ++bad;
      const double excess = std::isfinite(x) ? std::fabs(x - r) : INFINITY;
      if (excess > worst_excess) worst_excess = excess, worst = i, worst_tol = t;
    }
  }
  if (bad == 0) return "";
  return concat("output '", name, "': ", bad, " of ", got.numel(), " elements outside tolerance; worst at element ",
                worst, ": got ", load_element(got.element_ptr(worst), got.dtype), ", expected ",
                load_element(want.element_ptr(worst), want.dtype), " (atol ", worst_tol.atol, ", rtol ", worst_tol.rtol,
                "); ");
}

std::string check_moe_hidden_rows(const MoeLayerRouter& r, const TensorView& residual, const TensorView& got_hidden,
                                  const TensorView& want_hidden, int64_t k, const RowTolerance& tol) {
  const int64_t T = got_hidden.shape[0], H = got_hidden.shape[1];
  int64_t bad = 0, first_bad = -1;
  Tolerance first_tol{};
  for (int64_t t = 0; t < T; ++t) {
    const Tolerance row_tol = row_tolerance(tol, want_hidden, t * H, H);
    bool row_ok = true;
    for (int64_t h = 0; h < H && row_ok; ++h)
      row_ok = within_tolerance(get(got_hidden, t, h), get(want_hidden, t, h), row_tol);
    if (row_ok || matches_some_selection(r, residual, got_hidden, t, k, tol)) continue;
    if (bad++ == 0) first_bad = t, first_tol = row_tol;
  }
  if (bad == 0) return "";
  return concat("output 'hidden': ", bad, " of ", T, " token rows match the experts' output on no routing their ",
                "router logits allow; first at token ", first_bad, " (atol ", first_tol.atol, ", rtol ", first_tol.rtol,
                "); ");
}

}  // namespace fk::ops
