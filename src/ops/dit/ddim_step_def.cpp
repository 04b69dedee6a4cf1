// ddim_step: definition (sampler_update_def.h) and CPU reference (in place).
// Workload fields: tokens, hidden (the patch features), dtype (bf16), c_sample, c_output
// (defaults: a middle step of Oasis's 10-step sampler, coefficients 1.1 and -0.14).
#include "ops/dit/dit_validate.h"
#include "ops/dit/sampler_update_def.h"

namespace fk::ops {
namespace {

using A = DdimStepArgs;

void ddim_step_reference(const A& a) {
  for (int64_t t = 0; t < a.sample.shape[0]; ++t)
    for (int64_t j = 0; j < a.sample.shape[1]; ++j)
      set(a.sample,
          static_cast<double>(a.c_sample) * get(a.sample, t, j) +
              static_cast<double>(a.c_output) * get(a.model_output, t, j),
          t, j);
}

fk_status ddim_step_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_ddim_step(a, DeviceType::cpu);
    ddim_step_reference(a);
  });
}

OpDef make_def() {
  OpDef d = sampler_update_def<A>(
      "sample = c_sample * sample + c_output * model_output, in place, fp32 math (a DDIM step)", 3.0,
      [](A& a, const Json& w) {
        a.c_sample = static_cast<float>(wl_float(w, "c_sample", 1.1));
        a.c_output = static_cast<float>(wl_float(w, "c_output", -0.14));
      },
      [](const A& a) {
        return Json{{"c_sample", static_cast<double>(a.c_sample)}, {"c_output", static_cast<double>(a.c_output)}};
      });
  // The last step (to a clean frame: x0 = sqrt(a) x - sqrt(1 - a) v) and a no-op step.
  d.test_workloads.push_back({{"tokens", 16}, {"hidden", 64}, {"c_sample", 0.0447}, {"c_output", -0.999}});
  d.test_workloads.push_back({{"tokens", 5}, {"hidden", 64}, {"c_sample", 1.0}, {"c_output", 0.0}, {"dtype", "f32"}});
  // Oasis-500m: the new frame's 144 patches of 64 features, one clip and eight.
  for (int64_t t : {144, 1152}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 64}});
  d.architectures = {"oasis"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("ddim_step", cpu, ddim_step_cpu);

}  // namespace
}  // namespace fk::ops
