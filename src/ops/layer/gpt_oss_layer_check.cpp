#include "ops/layer/gpt_oss_layer_check.h"

#include <algorithm>
#include <utility>
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/ops/gpt_oss_layer.h"
#include "ops/common/layer_cost.h"
#include "ops/layer/gpt_oss_layer_reference.h"

namespace fk::ops {
namespace {

using Args = GptOssLayerArgs;

// An element's bound: atol + rtol |want|; a NaN where the reference has one (the cache
// slots no query may read, poisoned by the case) must stay NaN.
bool within(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  return std::isfinite(got) && std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

// "" when every element of the packed tensor got is within tol of want, else a summary.
std::string compare_all(const char* name, const TensorView& got, const TensorView& want, Tolerance tol) {
  int64_t bad = 0, worst = -1;
  double worst_excess = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double x = load_element(got.element_ptr(i), got.dtype), r = load_element(want.element_ptr(i), want.dtype);
    if (within(x, r, tol)) continue;
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

// How far an implementation's router logits may be from the f64 logits of its own
// residual: its normalised rows rounded to the dtype (a random walk of half-ulps through
// the router's GEMM, at most 8 of its typical size) and the logit's own rounding.
double logit_margin(const Args& a, double logit) {
  const double u = half_rounding_unit(a.input_norm.dtype);
  const double typical = std::sqrt(static_cast<double>(a.router_weight.shape[1])) * sampled_rms(a.post_attention_norm) *
                         sampled_rms(a.router_weight);
  return 8 * u * typical + 2 * u * std::fabs(logit);
}

// Every selection of k experts a token may make: those whose logit is clearly above the
// k-th / (k+1)-th boundary, plus any of those within the margin of it.
std::vector<std::vector<int32_t>> allowed_selections(const Args& a, const TensorView& logits, int64_t row, int64_t k) {
  const int64_t E = logits.shape[1];
  const std::vector<int32_t> order = top_k_experts(logits, row, E);
  const double kth = get(logits, row, order[static_cast<size_t>(k - 1)]);
  const double next = k < E ? get(logits, row, order[static_cast<size_t>(k)]) : -INFINITY;
  const double mid = std::isfinite(next) ? 0.5 * (kth + next) : kth, m = logit_margin(a, mid);
  std::vector<int32_t> sure, band;
  for (int32_t e : order) {
    const double l = get(logits, row, e);
    if (l > mid + m) sure.push_back(e);
    else if (l >= mid - m) band.push_back(e);
  }
  const auto need = static_cast<size_t>(k) - std::min(sure.size(), static_cast<size_t>(k));
  std::vector<std::vector<int32_t>> out;
  if (need > band.size()) return {top_k_experts(logits, row, k)};
  // Subsets of `need` band members, in order (the band is a few experts wide).
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
bool matches_some_selection(const Args& a, const TensorView& residual, const TensorView& got, int64_t t, int64_t k,
                            Tolerance tol) {
  const GptOssRouterRows r = gpt_oss_router_rows(a, residual, t, 1);
  const int64_t H = got.shape[1];
  std::vector<std::vector<double>> expert_out(static_cast<size_t>(r.logits.size(1)));
  for (const std::vector<int32_t>& sel : allowed_selections(a, r.logits, 0, k)) {
    double top = -INFINITY, sum = 0;
    for (int32_t e : sel) top = std::max(top, get(r.logits.view(), 0, e));
    for (int32_t e : sel) sum += std::exp(get(r.logits.view(), 0, e) - top);
    std::vector<double> want(static_cast<size_t>(H), 0.0);
    for (int32_t e : sel) {
      auto& y = expert_out[static_cast<size_t>(e)];
      if (y.empty()) y = gpt_oss_expert_row(a, r.x, 0, e);
      const double w = std::exp(get(r.logits.view(), 0, e) - top) / sum;
      for (int64_t h = 0; h < H; ++h) want[static_cast<size_t>(h)] += w * y[static_cast<size_t>(h)];
    }
    bool ok = true;
    for (int64_t h = 0; h < H && ok; ++h) ok = within(get(got, t, h), want[static_cast<size_t>(h)], tol);
    if (ok) return true;
  }
  return false;
}

}  // namespace

// Against the oracle (f64 intermediates) an implementation differs by its own roundings, as
// decoder_layer's (decoder_layer_def.cpp): each output gets the dtype's default tolerance
// plus 8 * half-ulp * the typical size of what writes it:
//   k_cache, v_cache: the rows of this step's k and v (the QKV projection of unit-rms rows,
//             plus its bias);
//   residual: o's projection of attention outputs no larger than the values, plus o_bias;
//   hidden:   the experts' down projection of act = (u + 1) g sigmoid(alpha g), with g and u
//             of about sigma = sqrt(H) rms(post_attention_norm) rms(w13) (clamped at the
//             limit), so act ~ (sigma + 1) sigma and a rounding of g moves it by as much.
Tolerance gpt_oss_layer_tolerance(const OpCase& c, const TensorArg& arg, DType dt) {
  Tolerance tol = default_tolerance(dt);
  const auto& a = c.as<Args>();
  const double u = half_rounding_unit(a.input_norm.dtype);
  double scale = 0;
  if (arg.name == "k_cache" || arg.name == "v_cache") {
    scale = std::sqrt(static_cast<double>(a.qkv_weight.shape[1])) * sampled_rms(a.input_norm) *
                sampled_rms(a.qkv_weight) +
            sampled_rms(a.qkv_bias);
  } else if (arg.name == "residual") {
    scale = std::sqrt(static_cast<double>(a.o_weight.shape[1])) * sampled_rms(a.o_weight) + sampled_rms(a.o_bias);
  } else if (arg.name == "hidden") {
    const double sigma = std::min(static_cast<double>(a.swiglu_limit),
                                  std::sqrt(static_cast<double>(a.w13.shape[2])) * sampled_rms(a.post_attention_norm) *
                                          sampled_rms(a.w13) +
                                      sampled_rms(a.w13_bias));
    scale = std::sqrt(static_cast<double>(a.w2.shape[2])) * (sigma + 1) * sigma * sampled_rms(a.w2) +
            sampled_rms(a.w2_bias);
  }
  tol.atol += 8 * u * scale;
  return tol;
}

std::string check_gpt_oss_layer_outputs(const OpCase& host, const OpCase& oracle, const OpCase& actual) {
  const bool against_baseline = &host == &oracle;
  const auto& want = oracle.as<Args>();
  const auto& got = actual.as<Args>();
  std::string why;
  const std::pair<const char*, TensorView Args::*> state[] = {
      {"k_cache", &Args::k_cache}, {"v_cache", &Args::v_cache}, {"residual", &Args::residual}};
  for (const auto& [name, field] : state) {
    const TensorArg arg{name, ArgRole::inout, 0};
    why += compare_all(name, got.*field, want.*field,
                       widened(gpt_oss_layer_tolerance(host, arg, (got.*field).dtype), against_baseline));
  }
  if (!why.empty()) return why;

  // hidden, token by token; a row off the reference's is recomputed from this residual.
  const auto& in = host.as<Args>();
  const TensorArg hidden_arg{"hidden", ArgRole::inout, 0};
  const Tolerance tol = widened(gpt_oss_layer_tolerance(host, hidden_arg, got.hidden.dtype), against_baseline);
  const int64_t T = got.hidden.shape[0], H = got.hidden.shape[1], k = got.topk_ids.shape[1];
  int64_t bad = 0, first_bad = -1;
  for (int64_t t = 0; t < T; ++t) {
    bool row_ok = true;
    for (int64_t h = 0; h < H && row_ok; ++h) row_ok = within(get(got.hidden, t, h), get(want.hidden, t, h), tol);
    if (row_ok || matches_some_selection(in, got.residual, got.hidden, t, k, tol)) continue;
    if (bad++ == 0) first_bad = t;
  }
  if (bad == 0) return "";
  return concat("output 'hidden': ", bad, " of ", T, " token rows match the experts' output on no routing their ",
                "router logits allow (atol ", tol.atol, ", rtol ", tol.rtol, "); first at token ", first_bad, "; ");
}

}  // namespace fk::ops
