#include "ops/moe/fused_moe_check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/ops/moe.h"
#include "ops/moe/fused_experts_reference.h"
#include "ops/moe/fused_moe_validate.h"
#include "ops/moe/moe_routing.h"

namespace fk::ops {
namespace {

std::vector<int64_t> sorted_row(const TensorView& ids, int64_t t) {
  std::vector<int64_t> row(static_cast<size_t>(ids.shape[1]));
  for (int64_t j = 0; j < ids.shape[1]; ++j) row[static_cast<size_t>(j)] = get_index(ids, t, j);
  std::sort(row.begin(), row.end());
  return row;
}

// Whether every token selected the same experts in both routings (in any order).
bool same_experts(const TensorView& a, const TensorView& b) {
  for (int64_t t = 0; t < a.shape[0]; ++t)
    if (sorted_row(a, t) != sorted_row(b, t)) return false;
  return true;
}

// "" when every element of got [T, H] is finite and within tol of want, else a summary.
std::string compare_out(const TensorView& got, const TensorView& want, Tolerance tol) {
  int64_t bad = 0, worst_t = -1, worst_h = -1;
  double worst_excess = -1, worst_x = 0, worst_r = 0;
  for (int64_t t = 0; t < got.shape[0]; ++t)
    for (int64_t h = 0; h < got.shape[1]; ++h) {
      const double x = get(got, t, h), r = get(want, t, h);
      const double excess = std::isfinite(x) ? std::fabs(x - r) - (tol.atol + tol.rtol * std::fabs(r)) : INFINITY;
      if (excess <= 0) continue;
      ++bad;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst_t = t, worst_h = h, worst_x = x, worst_r = r;
      }
    }
  if (bad == 0) return "";
  return concat("output 'out': ", bad, " of ", got.numel(), " elements outside tolerance (atol ", tol.atol, ", rtol ",
                tol.rtol, "); worst at [", worst_t, ", ", worst_h, "]: got ", worst_x, ", expected ", worst_r, "; ");
}

}  // namespace

std::string check_fused_moe_outputs(const OpCase& host, const OpCase& oracle, const OpCase& actual) {
  const auto& h = host.as<FusedMoeArgs>();
  const auto& got = actual.as<FusedMoeArgs>();
  RoutingSpec spec;
  spec.renormalize = h.renormalize != 0;
  const std::string routing = check_routing(h.gating_output, TensorView{}, spec, got.topk_weights, got.topk_ids);
  if (!routing.empty()) return "routing: " + routing;
  // The reference's output when the same experts were selected (the usual case); else (an
  // fp32 near-tie that went the other way) the experts' reference on the selection made.
  FusedExpertsArgs want = fused_moe_experts_part(oracle.as<FusedMoeArgs>());
  Tensor recomputed;
  if (!same_experts(want.topk_ids, got.topk_ids)) {
    recomputed = Tensor::empty({h.out.shape[0], h.out.shape[1]}, DType::f64);
    want = fused_moe_experts_part(h);
    want.out = recomputed;
    want.topk_weights = got.topk_weights;
    want.topk_ids = got.topk_ids;
    fused_experts_reference(want);
  }
  return compare_out(got.out, want.out, fused_experts_tolerance(want, got.out.dtype));
}

}  // namespace fk::ops
