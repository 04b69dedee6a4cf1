// gemma_rms_norm: definition and CPU reference (rms_norm scaled by 1 + weight).
#include "fk/ops/norm.h"
#include "ops/norm/norm_defs.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {
namespace {

fk_status gemma_rms_norm_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const GemmaRmsNormArgs*>(args);
    validate_rms_norm(a, DeviceType::cpu);
    rms_norm_reference(a.out, a.input, nullptr, a.weight, a.eps, NormScale::one_plus_weight);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const GemmaRmsNormArgs*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  // Gemma checkpoints store weights as offsets from one: values around zero.
  OpDef d = rms_norm_def<GemmaRmsNormArgs>(
      "out = input * rsqrt(mean(input^2) + eps) * (1 + weight), per row (Gemma)", {-0.5f, 0.5f});
  d.workload_from_call = workload_from_call;
  d.architectures = {"gemma", "gemma2", "gemma3"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("gemma_rms_norm", cpu, gemma_rms_norm_cpu);

}  // namespace
}  // namespace fk::ops
