// rms_norm_gated: definition (workloads, inputs, cost, capture) and CPU reference.
// Workload fields: tokens (rows: tokens x heads), hidden (the head size), dtype (bf16),
// eps (1e-6), activation ("silu", Qwen3-Next's; or "sigmoid", Kimi-Linear's).
#include <cmath>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/norm.h"
#include "ops/norm/norm_defs.h"
#include "ops/norm/rms_norm_gated_validate.h"

namespace fk::ops {
namespace {

using A = RmsNormGatedArgs;

double gate_activation(double g, NormGateActivation act) {
  const double s = 1.0 / (1.0 + std::exp(-g));  // exp overflows to inf for g < -709: s is 0, the limit
  return act == NormGateActivation::sigmoid ? s : g * s;
}

// In double, rounded once where out is stored (see RmsNormGatedArgs).
void rms_norm_gated_reference(const A& a) {
  const int64_t R = a.input.shape[0], H = a.input.shape[1];
  for (int64_t r = 0; r < R; ++r) {
    double sum_sq = 0;
    for (int64_t h = 0; h < H; ++h) sum_sq += get(a.input, r, h) * get(a.input, r, h);
    const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(H) + static_cast<double>(a.eps));
    for (int64_t h = 0; h < H; ++h)
      set(a.out, get(a.input, r, h) * inv_rms * get(a.weight, h) * gate_activation(get(a.gate, r, h), a.activation), r,
          h);
  }
}

fk_status rms_norm_gated_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_rms_norm_gated(a, DeviceType::cpu);
    rms_norm_gated_reference(a);
  });
}

NormGateActivation activation_of(const Json& w) {
  const std::string act = wl_string(w, "activation", "silu");
  FK_CHECK(act == "silu" || act == "sigmoid", A::kName, " workload activation must be silu or sigmoid, got ", w.dump());
  return act == "silu" ? NormGateActivation::silu : NormGateActivation::sigmoid;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))},
              {"eps", a.eps},
              {"activation", a.activation == NormGateActivation::silu ? "silu" : "sigmoid"}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "norm";
  d.level = "L1";
  d.summary = "out = input * rsqrt(mean(input^2) + eps) * weight * act(gate), per row (act silu or sigmoid)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any},
                   {"gate", ArgRole::in, offsetof(A, gate), RowStride::any},
                   {"weight", ArgRole::in, offsetof(A, weight)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const NormShape s = norm_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 4);
    c.tensors[0] = Tensor::empty({s.tokens, s.hidden}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -2.f, 2.f);
    // Both tails of the activation: shut (about 0), open (about g or 1) and between.
    c.tensors[2] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 2, -6.f, 6.f);
    c.tensors[3] = random_tensor({s.hidden}, s.dtype, seed, 3, 0.5f, 1.5f);
    c.as<A>().eps = s.eps;
    c.as<A>().activation = activation_of(w);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel());
    // input and gate read, out written; a square, the scale and the gate's sigmoid (about
    // 4 flops) and multiply per element.
    return OpCost{3.0 * n * a.input.element_size() + a.weight.nbytes(), 10.0 * n, DType::f32};
  };
  // The norm family's edge shapes (every path of the row kernels: short rows in groups of
  // lanes, long rows looped, scalar widths, f16/f32, no rows), then the sigmoid gate.
  d.test_workloads = norm_test_workloads();
  for (const Json& w : std::vector<Json>{
           {{"tokens", 17}, {"hidden", 128}, {"activation", "sigmoid"}},
           {{"tokens", 5}, {"hidden", 1000}, {"activation", "sigmoid"}, {"dtype", "f32"}},
           {{"tokens", 3}, {"hidden", 13}, {"activation", "sigmoid"}, {"dtype", "f16"}},
       })
    d.test_workloads.push_back(w);
  // Qwen3-Next-80B-A3B: 32 value heads of 128 per token (a prefill chunk of 8192 tokens,
  // decode batches of 1 and 256); Kimi-Linear-48B-A3B's sigmoid-gated 32 heads of 128.
  d.bench_workloads = {
      {{"tokens", 8192 * 32}, {"hidden", 128}},
      {{"tokens", 32}, {"hidden", 128}},
      {{"tokens", 256 * 32}, {"hidden", 128}},
      {{"tokens", 8192 * 32}, {"hidden", 128}, {"activation", "sigmoid"}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen3_next"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rms_norm_gated", cpu, rms_norm_gated_cpu);

}  // namespace
}  // namespace fk::ops
