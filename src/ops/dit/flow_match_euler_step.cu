// flow_match_euler_step CUDA baseline: sample[t, :] += dt * model_output[t, :], in place
// (scaled_update.cuh with coefficients 1 and dt: the same bits as one fused multiply-add).
#include "fk/op_registry.h"
#include "ops/dit/dit_validate.h"
#include "ops/dit/scaled_update.cuh"

namespace fk::ops {
namespace {

fk_status flow_match_euler_step_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const FlowMatchEulerStepArgs*>(args);
    validate_flow_match_euler_step(a, DeviceType::cuda);
    scaled_update::launch(a.sample, a.model_output, 1.f, a.dt, a.kName, stream);
  });
}

FK_REGISTER_IMPL("flow_match_euler_step", cuda, flow_match_euler_step_cuda);

}  // namespace
}  // namespace fk::ops
