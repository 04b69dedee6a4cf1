// ddim_step: definition (workloads, inputs, cost) and CPU reference (in place).
// Workload fields: tokens, hidden (the patch features), dtype (bf16), c_sample, c_output
// (defaults: Oasis's 10-step sampler at noise level 499 -> 399, coefficients 1.1 and -0.14).
#include "fk/element.h"
#include "ops/dit/dit_defs.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

using A = DdimStepArgs;

void ddim_step_reference(const A& a) {
  for (int64_t t = 0; t < a.sample.shape[0]; ++t)
    for (int64_t j = 0; j < a.sample.shape[1]; ++j)
      set(a.sample,
          static_cast<double>(a.c_sample) * get(a.sample, t, j) + static_cast<double>(a.c_output) * get(a.model_output, t, j),
          t, j);
}

fk_status ddim_step_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_ddim_step(a, DeviceType::cpu);
    ddim_step_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.sample.shape[0]},
              {"hidden", a.sample.shape[1]},
              {"c_sample", static_cast<double>(a.c_sample)},
              {"c_output", static_cast<double>(a.c_output)},
              {"dtype", std::string(dtype_name(a.model_output.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "dit";
  d.level = "L1";
  d.summary = "sample = c_sample * sample + c_output * model_output, in place, fp32 math (a DDIM step)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"sample", ArgRole::inout, offsetof(A, sample), RowStride::any},
                   {"model_output", ArgRole::in, offsetof(A, model_output), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const DitShape s = dit_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -3.f, 3.f);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 2, -3.f, 3.f);
    c.as<A>().c_sample = static_cast<float>(wl_float(w, "c_sample", 1.1));
    c.as<A>().c_output = static_cast<float>(wl_float(w, "c_output", -0.14));
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.sample.numel()), es = static_cast<double>(a.sample.element_size());
    return OpCost{3.0 * n * es, 3.0 * n, DType::f32};  // sample read and written, model_output read
  };
  d.test_workloads = dit_test_workloads();
  // The last step (to a clean frame: x0 = sqrt(a) x - sqrt(1 - a) v) and a no-op step.
  d.test_workloads.push_back({{"tokens", 16}, {"hidden", 64}, {"c_sample", 0.0447}, {"c_output", -0.999}});
  d.test_workloads.push_back({{"tokens", 5}, {"hidden", 64}, {"c_sample", 1.0}, {"c_output", 0.0}, {"dtype", "f32"}});
  // Oasis-500m: the new frame's 144 patches of 64 features, one clip and eight.
  for (int64_t t : {144, 1152}) d.bench_workloads.push_back({{"tokens", t}, {"hidden", 64}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"oasis"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("ddim_step", cpu, ddim_step_cpu);

}  // namespace
}  // namespace fk::ops
