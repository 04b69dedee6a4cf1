#include "ops/sampling/sample_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/status.h"

namespace fk::ops {
namespace {
constexpr const char* kOp = SampleArgs::kName;
}  // namespace

SampleParams sample_params(const SampleArgs& a, int64_t row) {
  SampleParams p;
  p.temperature = get(a.temperature, row);
  p.top_k = get_index(a.top_k, row);
  p.top_p = get(a.top_p, row);
  p.min_p = get(a.min_p, row);
  p.seed = static_cast<uint64_t>(get_index(a.seed, row));
  p.offset = static_cast<uint64_t>(get_index(a.offset, row));
  return p;
}

void validate_sample_params(const SampleParams& p, int64_t row) {
  FK_CHECK(std::isfinite(p.temperature) && p.temperature >= 0, kOp, ": row ", row,
           ": temperature must be finite and >= 0 (0 = greedy), got ", p.temperature);
  FK_CHECK(p.top_k >= 0, kOp, ": row ", row, ": top_k must be >= 0 (0 = off), got ", p.top_k);
  FK_CHECK(p.top_p > 0 && p.top_p <= 1, kOp, ": row ", row, ": top_p must be in (0, 1] (1 = off), got ", p.top_p);
  FK_CHECK(p.min_p >= 0 && p.min_p <= 1, kOp, ": row ", row, ": min_p must be in [0, 1] (0 = off), got ", p.min_p);
}

std::vector<double> sample_row_logits(const SampleArgs& a, int64_t row) {
  const int64_t V = a.logits.shape[1];
  std::vector<double> x(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) x[static_cast<size_t>(v)] = get(a.logits, row, v);
  return x;
}

SampleTrace sample_row(const std::vector<double>& x, const SampleParams& p, int64_t row) {
  validate_sample_params(p, row);
  const auto V = static_cast<int64_t>(x.size());
  for (int64_t v = 0; v < V; ++v) {
    const double xv = x[static_cast<size_t>(v)];
    FK_CHECK(!std::isnan(xv) && xv != INFINITY, kOp, ": row ", row, ": logit ", v, " is ", xv,
             " (logits must be finite or -inf)");
  }
  SampleTrace t;
  // Rank order: x descending, then token id ascending.
  auto before = [&x](int64_t a, int64_t b) {
    const double xa = x[static_cast<size_t>(a)], xb = x[static_cast<size_t>(b)];
    return xa > xb || (xa == xb && a < b);
  };
  if (p.temperature == 0) {
    int64_t best = 0;
    for (int64_t v = 1; v < V; ++v)
      if (before(v, best)) best = v;
    t.greedy = true;
    t.token = best;
    t.survivors = {best};
    t.weights = {1.0};
    t.total = 1.0;
    return t;
  }
  const double x_max = *std::max_element(x.begin(), x.end());
  FK_CHECK(std::isfinite(x_max), kOp, ": row ", row, ": every logit is -inf, nothing to sample");

  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), int64_t{0});
  int64_t R = V;  // survivors: order[0, R)
  if (p.top_k > 0 && p.top_k < V) {
    R = p.top_k;
    std::partial_sort(order.begin(), order.begin() + R, order.end(), before);
  } else {
    std::sort(order.begin(), order.end(), before);
  }
  std::vector<double> w(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i)
    w[static_cast<size_t>(i)] = std::exp((x[static_cast<size_t>(order[static_cast<size_t>(i)])] - x_max) / p.temperature);

  if (p.top_p < 1) {
    const double limit = p.top_p * std::accumulate(w.begin(), w.begin() + R, 0.0);
    double mass_before = 0;
    for (int64_t i = 0; i < R; ++i) {
      if (mass_before > limit) {
        R = i;
        break;
      }
      mass_before += w[static_cast<size_t>(i)];
    }
  }
  if (p.min_p > 0) {
    for (int64_t i = 0; i < R; ++i)
      if (w[static_cast<size_t>(i)] < p.min_p) {
        R = i;
        break;
      }
  }
  t.survivors.assign(order.begin(), order.begin() + R);
  t.weights.assign(w.begin(), w.begin() + R);
  t.total = std::accumulate(t.weights.begin(), t.weights.end(), 0.0);
  t.u = philox_uniform(p.seed, p.offset, 0);
  const double target = t.u * t.total;
  double cum = 0;
  for (int64_t i = 0; i < R && t.token < 0; ++i) {
    cum += t.weights[static_cast<size_t>(i)];
    if (cum > target) t.token = t.survivors[static_cast<size_t>(i)];
  }
  for (int64_t i = R - 1; i >= 0 && t.token < 0; --i)
    if (t.weights[static_cast<size_t>(i)] > 0) t.token = t.survivors[static_cast<size_t>(i)];
  return t;
}

std::string judge_sampled_token(const SampleTrace& t, int64_t token, double cdf_eps) {
  if (token == t.token) return "";
  if (t.greedy) return concat("greedy row: got token ", token, ", expected ", t.token);
  double mass_before = 0;
  for (size_t i = 0; i < t.survivors.size(); ++i) {
    if (t.survivors[i] != token) {
      mass_before += t.weights[i];
      continue;
    }
    if (t.weights[i] <= 0) return concat("token ", token, " has probability 0 after filtering (expected ", t.token, ")");
    const double lo = mass_before / t.total, hi = (mass_before + t.weights[i]) / t.total;
    if (t.u >= lo - cdf_eps && t.u <= hi + cdf_eps) return "";
    return concat("token ", token, " covers [", lo, ", ", hi, ") of the cumulative distribution but u = ", t.u,
                  " (expected token ", t.token, ")");
  }
  return concat("token ", token, " is not among the ", t.survivors.size(),
                " tokens allowed by top-k/top-p/min-p (expected ", t.token, ")");
}

std::string judge_sampled_row(const std::vector<double>& logits, const SampleParams& p, int64_t row, int64_t token,
                              double cdf_eps) {
  const std::string why = judge_sampled_token(sample_row(logits, p, row), token, cdf_eps);
  if (why.empty() || p.temperature == 0) return why;
  for (const double sign : {-1.0, 1.0}) {  // tighter, then looser cuts
    SampleParams q = p;
    if (q.top_p < 1) q.top_p = std::min(1.0, q.top_p * (1 + sign * kFilterSlack));
    if (q.min_p > 0) q.min_p = std::min(1.0, q.min_p * (1 - sign * kFilterSlack));
    if (judge_sampled_token(sample_row(logits, q, row), token, cdf_eps).empty()) return "";
  }
  return why;
}

}  // namespace fk::ops
