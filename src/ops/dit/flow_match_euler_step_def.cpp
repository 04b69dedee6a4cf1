// flow_match_euler_step: definition (sampler_update_def.h) and CPU reference (in place).
// Workload fields: tokens, hidden (the latent channels), dtype (bf16), dt (-0.04: one of
// FLUX.1-dev's 28 steps).
#include "ops/dit/dit_validate.h"
#include "ops/dit/sampler_update_def.h"

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

OpDef make_def() {
  OpDef d = sampler_update_def<A>(
      "sample += dt * model_output, in place, fp32 math (a flow-matching Euler step)", 2.0,
      [](A& a, const Json& w) { a.dt = static_cast<float>(wl_float(w, "dt", -0.04)); },
      [](const A& a) { return Json{{"dt", static_cast<double>(a.dt)}}; });
  d.test_workloads.push_back({{"tokens", 16}, {"hidden", 64}, {"dt", -1.0}});  // the last step to sigma 0
  d.test_workloads.push_back({{"tokens", 5}, {"hidden", 64}, {"dt", 0.0}, {"dtype", "f32"}});
  // FLUX.1 latents at 1024² (4096 tokens of 64) and 2048², batch 1 and 4.
  for (int64_t t : {4096, 16384}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 64}});
  d.architectures = {"flux"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("flow_match_euler_step", cpu, flow_match_euler_step_cpu);

}  // namespace
}  // namespace fk::ops
