// flow_match_euler_step: definition (workloads, inputs, cost) and CPU reference (in place).
// Workload fields: tokens, hidden (the latent channels), dtype (bf16), dt (-0.04: one of
// FLUX.1-dev's 28 steps).
#include "fk/element.h"
#include "ops/dit/dit_defs.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

using A = FlowMatchEulerStepArgs;

void flow_match_euler_step_reference(const A& a) {
  for (int64_t t = 0; t < a.sample.shape[0]; ++t)
    for (int64_t j = 0; j < a.sample.shape[1]; ++j)
      set(a.sample, get(a.sample, t, j) + static_cast<double>(a.dt) * get(a.model_output, t, j), t, j);
}

fk_status flow_match_euler_step_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_flow_match_euler_step(a, DeviceType::cpu);
    flow_match_euler_step_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.sample.shape[0]},
              {"hidden", a.sample.shape[1]},
              {"dt", static_cast<double>(a.dt)},
              {"dtype", std::string(dtype_name(a.model_output.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "dit";
  d.level = "L1";
  d.summary = "sample += dt * model_output, in place, fp32 math (a flow-matching Euler step)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"sample", ArgRole::inout, offsetof(A, sample), RowStride::any},
                   {"model_output", ArgRole::in, offsetof(A, model_output), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const DitShape s = dit_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -3.f, 3.f);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 2, -3.f, 3.f);
    c.as<A>().dt = static_cast<float>(wl_float(w, "dt", -0.04));
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.sample.numel()), es = static_cast<double>(a.sample.element_size());
    return OpCost{3.0 * n * es, 2.0 * n, DType::f32};  // sample read and written, model_output read
  };
  d.test_workloads = dit_test_workloads();
  d.test_workloads.push_back({{"tokens", 16}, {"hidden", 64}, {"dt", -1.0}});  // the last step to sigma 0
  d.test_workloads.push_back({{"tokens", 5}, {"hidden", 64}, {"dt", 0.0}, {"dtype", "f32"}});
  // FLUX.1 latents at 1024² (4096 tokens of 64) and 2048², batch 1 and 4.
  for (int64_t t : {4096, 16384}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 64}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"flux"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("flow_match_euler_step", cpu, flow_match_euler_step_cpu);

}  // namespace
}  // namespace fk::ops
