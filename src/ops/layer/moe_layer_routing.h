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

// One expert's output on one row (f64), and for each output element the rms size of the
// terms its down projection sums, sqrt(sum_i (w2[h, i] act[i])^2): the scale of that
// element's roundings even where the terms cancel.
struct ExpertRow {
  std::vector<double> y;
  std::vector<double> term_rms;
};
// y and term_rms of w2 [E, H, I] (expert e; plus w2_bias[e] where given) applied to act [I].
ExpertRow down_projection(const TensorView& w2, const TensorView& w2_bias, int32_t e, const std::vector<double>& act);

// A MoE layer's router and experts as its oracle and check see them.
struct MoeLayerRouter {
  TensorView post_attention_norm;  // [H]: the router's input is rms_norm(residual) * this
  TensorView router_weight;        // [E, H]
  TensorView router_bias;          // [E]; absent: none
  float eps = 1e-5f;
  bool renormalize = true;  // the weights: softmax over the k selected logits; else over all E
  // Expert e's unweighted output on row `row` of x [n, H] (f64).
  std::function<ExpertRow(const TensorView& x, int64_t row, int32_t e)> expert_row;
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

// The routing of every row of logits [T, E] (f64): the top-k ids [T, k] (i32) and their
// weights [T, k] (f64), as an oracle hands them to its experts.
struct RoutedRows {
  Tensor ids, weights;
};
RoutedRows route_rows(const MoeLayerRouter& r, const TensorView& logits, int64_t k);

// [g | u] = w13[e] @ x[row] (+ w13_bias[e] where given) of w13 [E, 2I, H], in f64: the
// gate and up halves an expert's activation combines.
struct GateUp {
  std::vector<double> g, u;
};
GateUp gate_up_row(const TensorView& w13, const TensorView& w13_bias, int32_t e, const TensorView& x, int64_t row);

// An element's bound, atol + rtol |want|; a NaN where the reference has one (cache slots no
// query may read, poisoned by the case) must stay NaN.
bool within_tolerance(double got, double want, Tolerance tol);

// The bounds of a layer output's rows (its last dimension). The op's tolerance models each
// output's size from the inputs' rms, as if every sum were a random walk. Inputs with
// constant rows (an edge round's) make sums coherent: a row can be a hundred times that
// size, and so are the roundings in it. Such a row is held to the dtype's own atol plus
// `per_rms` (8 roundings) times its own rms instead, whichever is larger.
struct RowTolerance {
  Tolerance tol;           // the op's tolerance of the output
  double floor_atol = 0;   // the dtype's default atol
  double per_rms = 0;      // 8 half-ulps of the model dtype
};
// The tolerance of one row of the reference (non-finite elements ignored).
Tolerance row_tolerance(const RowTolerance& r, const TensorView& want, int64_t first, int64_t n);
// `tol` for an output of dtype `dt` of a layer in model dtype `model`, with its row bounds;
// a timed call's outputs are checked against the baseline's, which are as far from the
// exact result as the candidate's may be: every bound doubles.
RowTolerance layer_row_tolerance(Tolerance tol, DType dt, DType model, bool against_baseline);

// "" when every row (last dimension) of the packed tensor `got` is within its bound of
// `want`'s, else a summary. The bound of a row scales with the same row of `scale` (of
// want's shape), or of want itself: the residual's with o alone, the part of it the layer
// computed (the stream added to it is exact).
std::string compare_rows(const char* name, const TensorView& got, const TensorView& want, const RowTolerance& tol,
                         const TensorView* scale = nullptr);
// o = residual_out - s of a layer's outputs, with s its input stream (hidden, plus the
// residual in unless first_layer), as f64 [T, H].
Tensor layer_o_rows(const TensorView& residual_out, const TensorView& hidden_in, const TensorView& residual_in,
                    bool first_layer);

// "" when each token row of got_hidden [T, H] is within its bound of want_hidden's, or of
// the experts' output on a routing its logits allow (from `residual`, the implementation's
// own; each element then held to the dtype's atol plus per_rms times the weighted rms of
// the terms summed into it, where that is larger than the op's tolerance), else why not.
std::string check_moe_hidden_rows(const MoeLayerRouter& r, const TensorView& residual, const TensorView& got_hidden,
                                  const TensorView& want_hidden, int64_t k, const RowTolerance& tol);

// A MoE layer op's output check (OpDef::check_outputs; `tolerance` its OpDef::tolerance):
// the cache rows and the residual against the reference row by row, then hidden token by
// token. "" when right, else why not. `oracle` holds the reference's outputs; when it is
// `host` itself (a timed call checked against the baseline's outputs) the bounds double.
template <class Args, class ToleranceFn>
std::string check_moe_layer_outputs(const OpCase& host, const OpCase& oracle, const OpCase& actual,
                                    ToleranceFn tolerance, const MoeLayerRouter& router) {
  const bool against_baseline = &host == &oracle;
  const auto& want = oracle.as<Args>();
  const auto& got = actual.as<Args>();
  const DType model = got.input_norm.dtype;
  auto bounds = [&](const char* name, DType dt) {
    return layer_row_tolerance(tolerance(host, TensorArg{name, ArgRole::inout, 0}, dt), dt, model, against_baseline);
  };
  const auto& in = host.as<Args>();
  const Tensor o = layer_o_rows(want.residual, in.hidden, in.residual, in.first_layer != 0);
  const TensorView o_rows = o.view();
  std::string why = compare_rows("k_cache", got.k_cache, want.k_cache, bounds("k_cache", got.k_cache.dtype));
  why += compare_rows("v_cache", got.v_cache, want.v_cache, bounds("v_cache", got.v_cache.dtype));
  why += compare_rows("residual", got.residual, want.residual, bounds("residual", got.residual.dtype), &o_rows);
  if (!why.empty()) return why;
  return check_moe_hidden_rows(router, got.residual, got.hidden, want.hidden, got.topk_ids.shape[1],
                               bounds("hidden", got.hidden.dtype));
}

}  // namespace fk::ops
