// What the MoE layer ops (gpt_oss_layer, moe_layer) share in their oracles and output
// checks: the router of a residual row, the top-k and its weights, and the hidden check,
// which takes each token's row when it matches the experts on some routing that a near-tie
// of its router logits allows, recomputed from the implementation's own residual (an
// implementation's logits differ from the f64 ones by its roundings, so a token whose k-th
// and (k+1)-th logits are that close may go either way).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "fk/tensor.h"

namespace fk::ops {

// A MoE layer's router and experts as its oracle and check see them.
struct MoeLayerRouter {
  TensorView post_attention_norm;  // [H]: the router's input is rms_norm(residual) * this
  TensorView router_weight;        // [E, H]
  TensorView router_bias;          // [E]; absent: none
  float eps = 1e-5f;
  bool renormalize = true;  // the weights: softmax over the k selected logits; else over all E
  // Expert e's unweighted output on row `row` of x [n, H] (f64).
  std::function<std::vector<double>(const TensorView& x, int64_t row, int32_t e)> expert_row;
};

// The router's input and logits of tokens [t0, t0 + n) of a residual stream [T, H] of any
// dtype, both f64.
struct MoeRouterRows {
  Tensor x;       // [n, H]
  Tensor logits;  // [n, E]
};
MoeRouterRows moe_router_rows(const MoeLayerRouter& r, const TensorView& residual, int64_t t0, int64_t n);

// The k experts with the largest logits of one row (ties: the lower id), largest first.
std::vector<int32_t> top_k_experts(const TensorView& logits, int64_t row, int64_t k);

// The routing weights of the experts `selected` in one row of logits, in their order.
std::vector<double> routing_weights(const MoeLayerRouter& r, const TensorView& logits, int64_t row,
                                    const std::vector<int32_t>& selected);

// An element's bound, atol + rtol |want|; a NaN where the reference has one (cache slots no
// query may read, poisoned by the case) must stay NaN.
bool within_tolerance(double got, double want, Tolerance tol);
// "" when every element of the packed tensor `got` is within tol of `want`, else a summary.
std::string compare_elements(const char* name, const TensorView& got, const TensorView& want, Tolerance tol);
// A timed call's outputs are checked against the baseline's, which are as far from the
// exact result as the candidate's may be: the bounds double.
Tolerance widened(Tolerance tol, bool against_baseline);

// "" when each token row of got_hidden [T, H] is within tol of want_hidden's, or of the
// experts' output on a routing its logits allow (from `residual`, the implementation's
// own), else why not.
std::string check_moe_hidden_rows(const MoeLayerRouter& r, const TensorView& residual, const TensorView& got_hidden,
                                  const TensorView& want_hidden, int64_t k, Tolerance tol);

}  // namespace fk::ops
