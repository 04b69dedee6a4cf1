// gdn_gating and sigmoid_mul (fk/ops/ssm_gating.h): definitions (workloads, inputs, cost)
// and CPU references in double. Workload fields: tokens, heads (gdn_gating) or hidden
// (sigmoid_mul), dtype (bf16).
#include <cmath>

#include "fk/element.h"
#include "fk/ops/ssm_gating.h"
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_validate.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/ssm/qwen3_next_gating_validate.h"

namespace fk::ops {
namespace {

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// torch.nn.functional.softplus with beta 1 and threshold 20.
double softplus_ref(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

// ---- gdn_gating ------------------------------------------------------------------------

fk_status gdn_gating_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const GdnGatingArgs*>(args);
    validate_gdn_gating(a, DeviceType::cpu);
    for (int64_t t = 0; t < a.a.shape[0]; ++t)
      for (int64_t h = 0; h < a.a.shape[1]; ++h) {
        const double decay = -std::exp(get(a.a_log, h)) * softplus_ref(get(a.a, t, h) + get(a.dt_bias, h));
        set(a.g, decay, t, h);
        set(a.beta, sigmoid_ref(get(a.b, t, h)), t, h);
      }
  });
}

OpDef gdn_gating_def() {
  using A = GdnGatingArgs;
  OpDef d;
  d.name = A::kName;
  d.family = "ssm";
  d.level = "L1";
  d.summary = "g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b) (Qwen3-Next's gated DeltaNet gates)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"g", ArgRole::out, offsetof(A, g)},
                   {"beta", ArgRole::out, offsetof(A, beta)},
                   {"a", ArgRole::in, offsetof(A, a), RowStride::any},
                   {"b", ArgRole::in, offsetof(A, b), RowStride::any},
                   {"a_log", ArgRole::in, offsetof(A, a_log)},
                   {"dt_bias", ArgRole::in, offsetof(A, dt_bias)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const ActShape s = act_shape(w, A::kName, "heads");
    OpCase c = begin_case<A>(w, 6);
    c.tensors[0] = Tensor::empty({s.tokens, s.cols}, DType::f32);
    c.tensors[1] = Tensor::empty({s.tokens, s.cols}, s.dtype);
    // a + dt_bias spans softplus' threshold; A_log = log(A) for A in (0, 16], as initialised.
    c.tensors[2] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 1, -24.f, 24.f);
    c.tensors[3] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 2, -8.f, 8.f);
    c.tensors[4] = random_tensor({s.cols}, DType::f32, seed, 3, -3.f, 2.7f);
    c.tensors[5] = random_tensor({s.cols}, DType::f32, seed, 4, -1.f, 1.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.a.numel());
    return OpCost{n * (2.0 * static_cast<double>(a.a.element_size()) + 4.0 + static_cast<double>(a.beta.element_size())),
                  20.0 * n, DType::f32};
  };
  d.test_workloads = {{{"tokens", 1}, {"heads", 4}},
                      {{"tokens", 7}, {"heads", 32}},
                      {{"tokens", 33}, {"heads", 6}, {"dtype", "f32"}},
                      {{"tokens", 5}, {"heads", 8}, {"dtype", "f16"}},
                      {{"tokens", 0}, {"heads", 4}}};
  // Qwen3-Next-80B-A3B: 32 value heads; decode batches and a prefill chunk.
  for (int64_t t : {1, 64, 256, 8192}) d.bench_workloads.push_back({{"tokens", t}, {"heads", 32}});
  d.workload_from_call = [](const void* args) {
    const auto& a = *static_cast<const A*>(args);
    return Json{{"tokens", a.a.shape[0]}, {"heads", a.a.shape[1]}, {"dtype", std::string(dtype_name(a.a.dtype))}};
  };
  d.architectures = {"qwen3_next"};
  return d;
}

// ---- sigmoid_mul -----------------------------------------------------------------------

fk_status sigmoid_mul_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const SigmoidMulArgs*>(args);
    validate_sigmoid_mul(a, DeviceType::cpu);
    for (int64_t t = 0; t < a.input.shape[0]; ++t)
      for (int64_t n = 0; n < a.input.shape[1]; ++n)
        set(a.out, get(a.input, t, n) * sigmoid_ref(get(a.gate, t, n)), t, n);
  });
}

OpDef sigmoid_mul_def() {
  using A = SigmoidMulArgs;
  OpDef d;
  d.name = A::kName;
  d.family = "activation";
  d.level = "L1";
  d.summary = "out = input * sigmoid(gate), per element (Qwen3-Next's gated attention output)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any},
                   {"gate", ArgRole::in, offsetof(A, gate), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const ActShape s = act_shape(w, A::kName, "hidden");
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = Tensor::empty({s.tokens, s.cols}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 1, -4.f, 4.f);
    c.tensors[2] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 2, -10.f, 10.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel()), es = static_cast<double>(a.input.element_size());
    return OpCost{3.0 * n * es, 5.0 * n, DType::f32};
  };
  d.test_workloads = activation_test_workloads("hidden");
  // Qwen3-Next-80B-A3B: 16 query heads of 256.
  for (int64_t t : {1, 64, 256, 8192}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 4096}});
  d.workload_from_call = [](const void* args) {
    const auto& a = *static_cast<const A*>(args);
    return Json{{"tokens", a.input.shape[0]}, {"hidden", a.input.shape[1]},
                {"dtype", std::string(dtype_name(a.input.dtype))}};
  };
  d.architectures = {"qwen3_next"};
  return d;
}

FK_REGISTER_OP(gdn_gating_def);
FK_REGISTER_IMPL("gdn_gating", cpu, gdn_gating_cpu);
FK_REGISTER_OP(sigmoid_mul_def);
FK_REGISTER_IMPL("sigmoid_mul", cpu, sigmoid_mul_cpu);

}  // namespace
}  // namespace fk::ops
