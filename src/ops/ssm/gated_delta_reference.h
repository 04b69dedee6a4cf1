// The gated delta rule on the host: the double-precision reference (both ops' CPU backend
// and the oracle), and the chunked algorithm of the CUDA baseline written out on the host
// in a chosen precision, so that its algebra and its f32 error can be tested without a GPU.
#pragma once
#include <cmath>
#include <vector>

#include "fk/ops/gated_delta.h"
#include "ops/ssm/gated_delta_validate.h"

namespace fk::ops {

// The scale the ops apply to q: the argument, or 1 / sqrt(K) when it is 0.
inline double gated_delta_scale(const GatedDeltaRuleArgs& a) {
  return a.scale > 0 ? static_cast<double>(a.scale) : 1.0 / std::sqrt(static_cast<double>(a.q.shape[2]));
}

// Token t's query (scaled) and key for value head h, as doubles, L2-normalised when the
// op asks for it: x / sqrt(sum(x^2) + 1e-6).
void gated_delta_load_qk(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d, int64_t t, int64_t h,
                         std::vector<double>& q, std::vector<double>& k);

// Token by token, in double; writes o and the final states (any dtype of o and state:
// the engine's, or the oracle's f64). Host tensors, validated by the caller.
void gated_delta_rule_reference(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d);

// The chunked algorithm of the CUDA baseline (chunks of kGatedDeltaChunk tokens of one
// sequence; within a chunk the UT transform T = (I + L)^-1, L the strictly lower
// beta_i k_i.k_j exp(gc_i - gc_j) matrix; then per chunk, from the state S at its start:
//   u = T (beta v),  w = T (beta exp(gc) k),  v_new = u - w S,
//   o = exp(gc) (q S) + (q k^T * exp(gc_i - gc_j), lower with diagonal) v_new,
//   S = exp(gc_last) S + (k * exp(gc_last - gc))^T v_new
// with gc the cumulative sum of g within the chunk), every step computed in Real. Host
// tensors, validated by the caller; writes o and the final states.
template <class Real>
void gated_delta_rule_chunked_host(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d);

}  // namespace fk::ops
