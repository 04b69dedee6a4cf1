// fused_add_rms_norm: definition and CPU reference (residual add, then rms_norm, in place).
#include "fk/ops/norm.h"
#include "ops/norm/norm_defs.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {
namespace {

fk_status fused_add_rms_norm_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedAddRmsNormArgs*>(args);
    validate_fused_add_rms_norm(a, DeviceType::cpu);
    rms_norm_reference(a.input, a.input, &a.residual, a.weight, a.eps, NormScale::weight);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const FusedAddRmsNormArgs*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d = fused_add_rms_norm_def<FusedAddRmsNormArgs>(
      "residual += input (rounded); input = residual * rsqrt(mean(residual^2) + eps) * weight, in place",
      {0.5f, 1.5f});
  d.workload_from_call = workload_from_call;
  // The final norm, and the layers' norms where rms_norm_linear runs as its parts.
  d.architectures = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("fused_add_rms_norm", cpu, fused_add_rms_norm_cpu);

}  // namespace
}  // namespace fk::ops
