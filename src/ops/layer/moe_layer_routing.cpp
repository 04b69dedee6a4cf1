#include "ops/layer/moe_layer_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fk/element.h"
#include "fk/ops/linear.h"
#include "ops/common/layer_cost.h"
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

// Whether row t of got is within tol of the experts' output on some allowed selection,
// recomputed from the implementation's residual row.
bool matches_some_selection(const MoeLayerRouter& r, const TensorView& residual, const TensorView& got, int64_t t,
                            int64_t k, Tolerance tol) {
  const MoeRouterRows rows = moe_router_rows(r, residual, t, 1);
  const int64_t H = got.shape[1];
  std::vector<std::vector<double>> expert_out(static_cast<size_t>(rows.logits.size(1)));
  for (const std::vector<int32_t>& sel : allowed_selections(r, rows.logits, 0, k)) {
    const std::vector<double> w = routing_weights(r, rows.logits, 0, sel);
    std::vector<double> want(static_cast<size_t>(H), 0.0);
    for (size_t j = 0; j < sel.size(); ++j) {
      auto& y = expert_out[static_cast<size_t>(sel[j])];
      if (y.empty()) y = r.expert_row(rows.x, 0, sel[j]);
      for (int64_t h = 0; h < H; ++h) want[static_cast<size_t>(h)] += w[j] * y[static_cast<size_t>(h)];
    }
    bool ok = true;
    for (int64_t h = 0; h < H && ok; ++h) ok = within_tolerance(get(got, t, h), want[static_cast<size_t>(h)], tol);
    if (ok) return true;
  }
  return false;
}

}  // namespace

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

bool within_tolerance(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  return std::isfinite(got) && std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

std::string compare_elements(const char* name, const TensorView& got, const TensorView& want, Tolerance tol) {
  int64_t bad = 0, worst = -1;
  double worst_excess = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double x = load_element(got.element_ptr(i), got.dtype), r = load_element(want.element_ptr(i), want.dtype);
    if (within_tolerance(x, r, tol)) continue;
    ++bad;
    const double excess = std::isfinite(x) ? std::fabs(x - r) : INFINITY;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (bad == 0) return "";
  return concat("output '", name, "': ", bad, " of ", got.numel(), " elements outside tolerance (atol ", tol.atol,
                ", rtol ", tol.rtol, "); worst at element ", worst, ": got ",
                load_element(got.element_ptr(worst), got.dtype), ", expected ",
                load_element(want.element_ptr(worst), want.dtype), "; ");
}

Tolerance widened(Tolerance tol, bool against_baseline) {
  if (!against_baseline) return tol;
  return Tolerance{2 * tol.atol, 2 * tol.rtol};
}

std::string check_moe_hidden_rows(const MoeLayerRouter& r, const TensorView& residual, const TensorView& got_hidden,
                                  const TensorView& want_hidden, int64_t k, Tolerance tol) {
  const int64_t T = got_hidden.shape[0], H = got_hidden.shape[1];
  int64_t bad = 0, first_bad = -1;
  for (int64_t t = 0; t < T; ++t) {
    bool row_ok = true;
    for (int64_t h = 0; h < H && row_ok; ++h)
      row_ok = within_tolerance(get(got_hidden, t, h), get(want_hidden, t, h), tol);
    if (row_ok || matches_some_selection(r, residual, got_hidden, t, k, tol)) continue;
    if (bad++ == 0) first_bad = t;
  }
  if (bad == 0) return "";
  return concat("output 'hidden': ", bad, " of ", T, " token rows match the experts' output on no routing their ",
                "router logits allow (atol ", tol.atol, ", rtol ", tol.rtol, "); first at token ", first_bad, "; ");
}

}  // namespace fk::ops
