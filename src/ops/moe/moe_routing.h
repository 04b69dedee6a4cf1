// Routing (scores -> top-k experts) in double precision: the CPU reference of the three
// routing ops, and the check that accepts any valid top-k selection (moe.h: ties and
// fp32 near-ties may go either way).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/ops/moe.h"

namespace fk::ops {

struct RoutingSpec {
  MoeScoring scoring = MoeScoring::softmax;
  int64_t n_group = 1;     // 1: plain top-k
  int64_t topk_group = 1;
  bool renormalize = false;
  double routed_scaling_factor = 1.0;
};

struct RoutedToken {
  std::vector<int32_t> ids;     // k experts, descending choice score (ties: lower index first)
  std::vector<double> weights;  // their weights
};

// Scores s of one row of logits (softmax or sigmoid), in double.
std::vector<double> routing_scores(const std::vector<double>& logits, MoeScoring scoring);

// The reference selection of one token. `bias` is empty or holds E corrections.
RoutedToken route_token(const std::vector<double>& logits, const std::vector<double>& bias, const RoutingSpec& spec,
                        int64_t k);

// Writes the reference routing of every token of gating [T, E] into weights / ids [T, k]
// (weights may be f32 or the oracle's f64).
void route_all(const TensorView& weights, const TensorView& ids, const TensorView& gating, const TensorView& bias,
               const RoutingSpec& spec);

// "" when ids / weights ([T, k], host) are a valid routing of gating under spec: distinct
// experts in [0, E), a top-k selection up to fp32 rounding of the scores (within the best
// groups for grouped routing), and weights that belong to the selected experts. Else why
// not (the first few bad tokens).
std::string check_routing(const TensorView& gating, const TensorView& bias, const RoutingSpec& spec,
                          const TensorView& weights, const TensorView& ids);

}  // namespace fk::ops
