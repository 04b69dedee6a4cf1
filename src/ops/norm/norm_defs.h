// Definition pieces shared by the norm ops: workload lists, workload parsing and the OpDef
// builders of the two rms_norm shapes of call (out-of-place, and fused residual add in
// place), which the plain and Gemma variants instantiate with their own argument struct.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "ops/common/case_builder.h"

namespace fk::ops {

// Edge shapes chosen to reach every CUDA path: several rows per block (hidden <= 1024 for
// bf16), one block per row with 2/4/8 vectors per thread, rows too long for registers,
// and hidden sizes that are not a multiple of the 16-byte vector (scalar path); plus one
// token, zero tokens and the f16/f32 variants.
std::vector<Json> norm_test_workloads();
// Production shapes: Llama-3.1-8B / Qwen3-8B / Mistral-7B hidden 4096 (prefill chunk,
// decode, batch), a 5120 model, and Qwen3's per-head q/k norm (32 heads x 128).
std::vector<Json> norm_bench_workloads();

struct NormShape {
  int64_t tokens, hidden;
  DType dtype;
  float eps;
};
// tokens, hidden (required), dtype (bf16), eps (1e-6), checked for sense.
NormShape norm_shape(const Json& w, const char* op);

// Weight values for the cases: around 1 for x * w, around 0 for x * (1 + w).
struct WeightRange {
  float lo, hi;
};

// out = norm(input) * scale(weight): tensors out, input, weight.
template <class A>
OpDef rms_norm_def(std::string summary, WeightRange wr) {
  OpDef d;
  d.name = A::kName;
  d.family = "norm";
  d.level = "L1";
  d.summary = std::move(summary);
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any},
                   {"weight", ArgRole::in, offsetof(A, weight)}};
  d.make_case = [layout = d.tensor_args, wr](const Json& w, uint64_t seed) {
    const NormShape s = norm_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = Tensor::empty({s.tokens, s.hidden}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -2.f, 2.f);
    c.tensors[2] = random_tensor({s.hidden}, s.dtype, seed, 2, wr.lo, wr.hi);
    c.as<A>().eps = s.eps;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel());
    return OpCost{2.0 * n * a.input.element_size() + a.weight.nbytes(), 4.0 * n, DType::f32};
  };
  d.test_workloads = norm_test_workloads();
  d.bench_workloads = norm_bench_workloads();
  return d;
}

// residual += input; input = norm(residual) * scale(weight): tensors input, residual
// (both updated in place), weight.
template <class A>
OpDef fused_add_rms_norm_def(std::string summary, WeightRange wr) {
  OpDef d;
  d.name = A::kName;
  d.family = "norm";
  d.level = "L2";
  d.summary = std::move(summary);
  d.args_size = sizeof(A);
  d.tensor_args = {{"input", ArgRole::inout, offsetof(A, input), RowStride::any},
                   {"residual", ArgRole::inout, offsetof(A, residual), RowStride::any},
                   {"weight", ArgRole::in, offsetof(A, weight)}};
  d.make_case = [layout = d.tensor_args, wr](const Json& w, uint64_t seed) {
    const NormShape s = norm_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -2.f, 2.f);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 3, -4.f, 4.f);
    c.tensors[2] = random_tensor({s.hidden}, s.dtype, seed, 2, wr.lo, wr.hi);
    c.as<A>().eps = s.eps;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel());
    // input and residual each read once and written once.
    return OpCost{4.0 * n * a.input.element_size() + a.weight.nbytes(), 5.0 * n, DType::f32};
  };
  d.test_workloads = norm_test_workloads();
  d.bench_workloads = norm_bench_workloads();
  return d;
}

}  // namespace fk::ops
