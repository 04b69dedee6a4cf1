// sigmoid_gated_add: definition (workloads, inputs, cost) and CPU reference (in place).
// Workload fields: tokens, hidden, dtype (bf16), gate_max (the gate logits are drawn from
// [-gate_max, gate_max), default 8: both tails of the sigmoid; a large value saturates it).
#include <cmath>

#include "fk/element.h"
#include "ops/activation/activation_defs.h"
#include "ops/common/case_builder.h"
#include "ops/moe/sigmoid_gated_add_validate.h"

namespace fk::ops {
namespace {

using A = SigmoidGatedAddArgs;

// 1 / (1 + exp(-g)) in double: exp overflows to inf for g < -709 and the quotient is then
// exactly 0, the limit; a NaN logit gives NaN, as torch.sigmoid does.
double sigmoid_ref(double g) { return 1.0 / (1.0 + std::exp(-g)); }

void sigmoid_gated_add_reference(const A& a) {
  for (int64_t t = 0; t < a.input.shape[0]; ++t) {
    const double s = sigmoid_ref(get(a.gate, t, 0));
    for (int64_t h = 0; h < a.input.shape[1]; ++h) set(a.out, get(a.out, t, h) + s * get(a.input, t, h), t, h);
  }
}

fk_status sigmoid_gated_add_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_sigmoid_gated_add(a, DeviceType::cpu);
    sigmoid_gated_add_reference(a);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.input.shape[0]}, {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L1";
  d.summary = "out += sigmoid(gate) * input, in place, one gate logit per row (Qwen2-MoE's gated shared expert)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::inout, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any},
                   {"gate", ArgRole::in, offsetof(A, gate), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const ActShape s = act_shape(w, A::kName, "hidden");
    const double gate_max = wl_float(w, "gate_max", 8.0);
    FK_CHECK(gate_max > 0, A::kName, " workload needs gate_max > 0, got ", w.dump());
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 1, -2.f, 2.f);
    c.tensors[1] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 2, -2.f, 2.f);
    c.tensors[2] = random_tensor({s.tokens, 1}, s.dtype, seed, 3, -static_cast<float>(gate_max),
                                 static_cast<float>(gate_max));
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel()), es = static_cast<double>(a.input.element_size());
    // out read and written, input read once, one gate per row; a multiply-add per element
    // and a sigmoid (about 4 flops) per row.
    return OpCost{3.0 * n * es + static_cast<double>(a.gate.nbytes()), 2.0 * n + 4.0 * a.input.shape[0], DType::f32};
  };
  // The activation ops' edge shapes reach every path of the row kernel (one vector, ragged
  // and long rows over many blocks, scalar widths, f16/f32, no tokens); then saturated gates.
  d.test_workloads = activation_test_workloads("hidden");
  d.test_workloads.push_back({{"tokens", 9}, {"hidden", 64}, {"gate_max", 120.0}});
  d.test_workloads.push_back({{"tokens", 3}, {"hidden", 40}, {"gate_max", 120.0}, {"dtype", "f32"}});
  // Qwen1.5-MoE-A2.7B (hidden 2048) decode batches and a prefill chunk; Qwen2-57B-A14B (3584).
  for (int64_t t : {1, 64, 256, 8192}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 2048}});
  for (int64_t t : {256, 8192}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 3584}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen2_moe"};  // its gated shared expert
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("sigmoid_gated_add", cpu, sigmoid_gated_add_cpu);

}  // namespace
}  // namespace fk::ops
