#include "ops/moe/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fk/element.h"
#include "fk/status.h"

namespace fk::ops {

namespace {

// Experts (or groups) by descending value, ties by lower index.
std::vector<int32_t> order_desc(const std::vector<double>& v) {
  std::vector<int32_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)]; });
  return idx;
}

// A group's score: the sum of its two best choice scores with a correction bias
// (DeepSeek-V3), else its best score.
std::vector<double> group_scores(const std::vector<double>& s, const std::vector<double>& c, bool has_bias,
                                 int64_t n_group) {
  const size_t per = s.size() / static_cast<size_t>(n_group);
  std::vector<double> gs(static_cast<size_t>(n_group));
  for (size_t g = 0; g < gs.size(); ++g) {
    if (has_bias) {
      double a = -INFINITY, b = -INFINITY;
      for (size_t i = g * per; i < (g + 1) * per; ++i) {
        if (c[i] > a) {
          b = a;
          a = c[i];
        } else if (c[i] > b) {
          b = c[i];
        }
      }
      gs[g] = a + b;
    } else {
      gs[g] = *std::max_element(s.begin() + static_cast<std::ptrdiff_t>(g * per),
                                s.begin() + static_cast<std::ptrdiff_t>((g + 1) * per));
    }
  }
  return gs;
}

std::vector<double> row_of(const TensorView& m, int64_t r) {
  std::vector<double> v(static_cast<size_t>(m.shape[1]));
  for (int64_t i = 0; i < m.shape[1]; ++i) v[static_cast<size_t>(i)] = get(m, r, i);
  return v;
}

std::vector<double> bias_of(const TensorView& bias) {
  std::vector<double> b;
  if (bias.data == nullptr || bias.numel() == 0) return b;
  for (int64_t i = 0; i < bias.shape[0]; ++i) b.push_back(get(bias, i));
  return b;
}

// The choice scores c = s + bias.
std::vector<double> choice_scores(const std::vector<double>& s, const std::vector<double>& bias) {
  std::vector<double> c = s;
  for (size_t i = 0; i < bias.size(); ++i) c[i] += bias[i];
  return c;
}

std::vector<double> expected_weights(const std::vector<double>& s, const std::vector<int32_t>& ids,
                                     const RoutingSpec& spec) {
  std::vector<double> w;
  double sum = 0;
  for (int32_t id : ids) {
    w.push_back(s[static_cast<size_t>(id)]);
    sum += w.back();
  }
  for (double& x : w) {
    if (spec.renormalize) x = sum > 0 ? x / sum : 0.0;
    x *= spec.routed_scaling_factor;
  }
  return w;
}

// Why token's selection `ids` is not a valid top-k of (s, c) under spec, or "".
std::string judge_selection(const std::vector<double>& s, const std::vector<double>& c, bool has_bias,
                            const RoutingSpec& spec, const std::vector<int32_t>& ids) {
  const int64_t E = static_cast<int64_t>(s.size());
  std::vector<char> chosen(static_cast<size_t>(E), 0);
  for (int32_t id : ids) {
    if (id < 0 || id >= E) return concat("expert id ", id, " is outside [0, ", E, ")");
    if (chosen[static_cast<size_t>(id)]) return concat("expert ", id, " is selected twice");
    chosen[static_cast<size_t>(id)] = 1;
  }
  // fp32 scores of the implementation differ from these by rounding: allow that much.
  double scale = 1;
  for (double x : c) scale = std::max(scale, std::fabs(x));
  const double delta = 2e-5 * scale;
  double min_sel = INFINITY;
  for (int32_t id : ids) min_sel = std::min(min_sel, c[static_cast<size_t>(id)]);
  const int64_t per = E / spec.n_group;
  auto group_fits_below = [&](int64_t g, std::vector<char>* allowed) {
    // Every unselected expert of group g scores at most the weakest selected one.
    for (int64_t i = g * per; i < (g + 1) * per; ++i)
      if (!chosen[static_cast<size_t>(i)] && c[static_cast<size_t>(i)] > min_sel + 2 * delta) return false;
    if (allowed) (*allowed)[static_cast<size_t>(g)] = 1;
    return true;
  };
  if (spec.n_group <= 1) {
    for (int64_t i = 0; i < E; ++i)
      if (!chosen[static_cast<size_t>(i)] && c[static_cast<size_t>(i)] > min_sel + 2 * delta)
        return concat("expert ", i, " (score ", c[static_cast<size_t>(i)], ") outscores selected expert(s) scoring ",
                      min_sel);
    return "";
  }
  // Grouped: the selected experts' groups must be among the topk_group best groups (up to
  // rounding of the group scores), groups that are surely among them must hold nothing
  // better than the selection, and enough eligible groups must remain to complete the set.
  const std::vector<double> gs = group_scores(s, c, has_bias, spec.n_group);
  std::vector<double> sorted_gs = gs;
  std::sort(sorted_gs.begin(), sorted_gs.end(), std::greater<>());
  const double threshold = sorted_gs[static_cast<size_t>(spec.topk_group - 1)];
  const double gdelta = 4 * delta;
  std::vector<char> in_sel(static_cast<size_t>(spec.n_group), 0);
  for (int32_t id : ids) in_sel[static_cast<size_t>(id / per)] = 1;
  int64_t groups = 0;
  for (int64_t g = 0; g < spec.n_group; ++g) {
    if (!in_sel[static_cast<size_t>(g)]) continue;
    ++groups;
    if (gs[static_cast<size_t>(g)] < threshold - gdelta)
      return concat("group ", g, " (score ", gs[static_cast<size_t>(g)], ") is not among the ", spec.topk_group,
                    " best groups (threshold ", threshold, ")");
    if (!group_fits_below(g, nullptr))
      return concat("an unselected expert of selected group ", g, " outscores the selection (weakest ", min_sel, ")");
  }
  if (groups > spec.topk_group)
    return concat("the selection spans ", groups, " groups, more than topk_group = ", spec.topk_group);
  int64_t needed = spec.topk_group - groups, spare = 0;
  for (int64_t g = 0; g < spec.n_group; ++g) {
    if (in_sel[static_cast<size_t>(g)]) continue;
    const double score = gs[static_cast<size_t>(g)];
    if (score > threshold + gdelta) {  // surely one of the best groups
      if (!group_fits_below(g, nullptr))
        return concat("group ", g, " (score ", score, ") is among the best groups and holds an expert that outscores "
                      "the selection (weakest ", min_sel, ")");
      --needed;
    } else if (score >= threshold - gdelta && group_fits_below(g, nullptr)) {
      ++spare;
    }
  }
  if (needed < 0) return concat("the selection leaves out experts of groups that must be kept");
  if (spare < needed) return concat("no set of ", spec.topk_group, " best groups contains the selection");
  return "";
}

}  // namespace

std::vector<double> routing_scores(const std::vector<double>& logits, MoeScoring scoring) {
  std::vector<double> s(logits.size());
  if (scoring == MoeScoring::sigmoid) {
    for (size_t i = 0; i < s.size(); ++i) s[i] = 1.0 / (1.0 + std::exp(-logits[i]));
    return s;
  }
  const double mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (size_t i = 0; i < s.size(); ++i) sum += s[i] = std::exp(logits[i] - mx);
  for (double& x : s) x /= sum;
  return s;
}

RoutedToken route_token(const std::vector<double>& logits, const std::vector<double>& bias, const RoutingSpec& spec,
                        int64_t k) {
  const std::vector<double> s = routing_scores(logits, spec.scoring);
  const std::vector<double> c = choice_scores(s, bias);
  const int64_t E = static_cast<int64_t>(s.size());
  std::vector<double> masked = c;
  if (spec.n_group > 1) {
    const int64_t per = E / spec.n_group;
    const std::vector<int32_t> best = order_desc(group_scores(s, c, !bias.empty(), spec.n_group));
    std::vector<char> keep(static_cast<size_t>(spec.n_group), 0);
    for (int64_t g = 0; g < spec.topk_group; ++g) keep[static_cast<size_t>(best[static_cast<size_t>(g)])] = 1;
    for (int64_t i = 0; i < E; ++i)
      if (!keep[static_cast<size_t>(i / per)]) masked[static_cast<size_t>(i)] = -INFINITY;
  }
  const std::vector<int32_t> order = order_desc(masked);
  RoutedToken r;
  r.ids.assign(order.begin(), order.begin() + k);
  r.weights = expected_weights(s, r.ids, spec);
  return r;
}

void route_all(const TensorView& weights, const TensorView& ids, const TensorView& gating, const TensorView& bias,
               const RoutingSpec& spec) {
  const std::vector<double> b = bias_of(bias);
  const int64_t T = gating.shape[0], k = ids.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    const RoutedToken r = route_token(row_of(gating, t), b, spec, k);
    for (int64_t j = 0; j < k; ++j) {
      set(ids, r.ids[static_cast<size_t>(j)], t, j);
      set(weights, r.weights[static_cast<size_t>(j)], t, j);
    }
  }
}

std::string check_routing(const TensorView& gating, const TensorView& bias, const RoutingSpec& spec,
                          const TensorView& weights, const TensorView& ids) {
  const std::vector<double> b = bias_of(bias);
  const int64_t T = gating.shape[0], k = ids.shape[1];
  std::string why;
  int reported = 0;
  for (int64_t t = 0; t < T && reported < 3; ++t) {
    const std::vector<double> s = routing_scores(row_of(gating, t), spec.scoring);
    const std::vector<double> c = choice_scores(s, b);
    std::vector<int32_t> got(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) got[static_cast<size_t>(j)] = static_cast<int32_t>(get_index(ids, t, j));
    std::string row = judge_selection(s, c, !b.empty(), spec, got);
    if (row.empty()) {
      const std::vector<double> want = expected_weights(s, got, spec);
      for (int64_t j = 0; j < k && row.empty(); ++j) {
        const double x = get(weights, t, j), r = want[static_cast<size_t>(j)];
        if (!(std::fabs(x - r) <= 1e-6 * spec.routed_scaling_factor + 2e-5 * std::fabs(r)))
          row = concat("topk_weights[", j, "] = ", x, " but expert ", got[static_cast<size_t>(j)], " weighs ", r);
      }
    }
    if (!row.empty()) {
      why += concat("token ", t, ": ", row, "; ");
      ++reported;
    }
  }
  return why;
}

}  // namespace fk::ops
