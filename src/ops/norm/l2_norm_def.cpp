// l2_norm: definition (workloads, inputs, cost, capture) and CPU reference.
// Workload fields: tokens (rows: tokens x heads), hidden (the head size), dtype (bf16),
// eps (1e-6, flash-linear-attention's default).
#include <cmath>
#include <string>

#include "fk/element.h"
#include "fk/ops/norm.h"
#include "ops/norm/l2_norm_validate.h"
#include "ops/norm/norm_defs.h"

namespace fk::ops {
namespace {

using A = L2NormArgs;

void l2_norm_reference(const A& a) {
  const int64_t R = a.input.shape[0], H = a.input.shape[1];
  for (int64_t r = 0; r < R; ++r) {
    double sum_sq = 0;
    for (int64_t h = 0; h < H; ++h) sum_sq += get(a.input, r, h) * get(a.input, r, h);
    const double inv = 1.0 / std::sqrt(sum_sq + static_cast<double>(a.eps));
    for (int64_t h = 0; h < H; ++h) set(a.out, get(a.input, r, h) * inv, r, h);
  }
}

fk_status l2_norm_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_l2_norm(a, DeviceType::cpu);
    l2_norm_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))},
              {"eps", a.eps}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "norm";
  d.level = "L1";
  d.summary = "out = input * rsqrt(sum(input^2) + eps), per row (the delta rules' q/k L2 norm)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const NormShape s = norm_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({s.tokens, s.hidden}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -2.f, 2.f);
    c.as<A>().eps = s.eps;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel());
    return OpCost{2.0 * n * a.input.element_size(), 3.0 * n, DType::f32};
  };
  d.test_workloads = norm_test_workloads();
  // Qwen3-Next-80B-A3B's q or k (16 heads of 128) of a prefill chunk of 8192 tokens and
  // of decode batches of 1 and 256; Kimi-Linear-48B-A3B's 32 heads of 128.
  d.bench_workloads = {
      {{"tokens", 8192 * 16}, {"hidden", 128}},
      {{"tokens", 16}, {"hidden", 128}},
      {{"tokens", 256 * 16}, {"hidden", 128}},
      {{"tokens", 8192 * 32}, {"hidden", 128}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen3_next"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("l2_norm", cpu, l2_norm_cpu);

}  // namespace
}  // namespace fk::ops
