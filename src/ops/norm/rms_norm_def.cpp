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

OpDef make_def() {
  return rms_norm_def<RmsNormArgs>("out = input * rsqrt(mean(input^2) + eps) * weight, per row", {0.5f, 1.5f});
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rms_norm", cpu, rms_norm_cpu);

}  // namespace
}  // namespace fk::ops
