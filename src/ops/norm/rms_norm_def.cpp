// rms_norm: definition (workloads, inputs, cost) and CPU reference.
#include "fk/ops/norm.h"
#include "ops/norm/norm_defs.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {
namespace {

fk_status rms_norm_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const RmsNormArgs*>(args);
    validate_rms_norm(a, DeviceType::cpu);
    rms_norm_reference(a.out, a.input, nullptr, a.weight, a.eps, NormScale::weight);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const RmsNormArgs*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d = rms_norm_def<RmsNormArgs>("out = input * rsqrt(mean(input^2) + eps) * weight, per row", {0.5f, 1.5f});
  d.workload_from_call = workload_from_call;
  // The first layer's norm where rms_norm_linear runs as its parts; OLMoE's q/k norms.
  d.architectures = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rms_norm", cpu, rms_norm_cpu);

}  // namespace
}  // namespace fk::ops
