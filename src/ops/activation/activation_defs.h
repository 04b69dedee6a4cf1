// Definition pieces shared by the activation ops: workload parsing, and OpDef builders for
// the two shapes of call (gated: [T, 2d] -> [T, d]; element-wise: [T, H] -> [T, H]) that
// each op instantiates with its argument struct and attribute reader.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "ops/common/case_builder.h"

namespace fk::ops {

struct ActShape {
  int64_t tokens, cols;
  DType dtype;
};
// tokens and `cols_key` (required), dtype (bf16), checked for sense.
ActShape act_shape(const Json& w, const char* op, const char* cols_key);
// "approximate": "none" (default) or "tanh".
GeluApprox wl_gelu_approx(const Json& w, const char* op);

// Edge workloads that reach every CUDA path: one vector, rows split over several blocks,
// a long row spread over many blocks, widths that are not a multiple of the 16-byte vector
// (scalar path), f16/f32, zero tokens. `cols_key` names the width ("d" or "hidden").
std::vector<Json> activation_test_workloads(const char* cols_key);

// Gated: tensors out [T, d], input [T, 2d]. set_attrs(A&, workload) fills the attributes.
template <class A, class SetAttrs>
OpDef gated_activation_def(std::string summary, SetAttrs set_attrs) {
  OpDef d;
  d.name = A::kName;
  d.family = "activation";
  d.level = "L1";
  d.summary = std::move(summary);
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any}};
  d.make_case = [layout = d.tensor_args, set_attrs](const Json& w, uint64_t seed) {
    const ActShape s = act_shape(w, A::kName, "d");
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({s.tokens, s.cols}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, 2 * s.cols}, s.dtype, seed, 1, -5.f, 5.f);
    set_attrs(c.as<A>(), w);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.out.numel());
    return OpCost{3.0 * n * a.input.element_size(), 8.0 * n, DType::f32};  // read gate and up, write out
  };
  d.test_workloads = activation_test_workloads("d");
  return d;
}

// Element-wise: tensors out [T, H], input [T, H], input values in [lo, hi).
template <class A, class SetAttrs>
OpDef elementwise_activation_def(std::string summary, float lo, float hi, SetAttrs set_attrs) {
  OpDef d;
  d.name = A::kName;
  d.family = "activation";
  d.level = "L1";
  d.summary = std::move(summary);
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any}};
  d.make_case = [layout = d.tensor_args, lo, hi, set_attrs](const Json& w, uint64_t seed) {
    const ActShape s = act_shape(w, A::kName, "hidden");
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({s.tokens, s.cols}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 1, lo, hi);
    set_attrs(c.as<A>(), w);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.out.numel());
    return OpCost{2.0 * n * a.input.element_size(), 8.0 * n, DType::f32};
  };
  d.test_workloads = activation_test_workloads("hidden");
  return d;
}

}  // namespace fk::ops
