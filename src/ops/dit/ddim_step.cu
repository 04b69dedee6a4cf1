// ddim_step CUDA baseline: sample = c_sample * sample + c_output * model_output, in place
// (scaled_update.cuh).
#include "fk/op_registry.h"
#include "ops/dit/dit_validate.h"
#include "ops/dit/scaled_update.cuh"

namespace fk::ops {
namespace {

fk_status ddim_step_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DdimStepArgs*>(args);
    validate_ddim_step(a, DeviceType::cuda);
    scaled_update::launch(a.sample, a.model_output, a.c_sample, a.c_output, a.kName, stream);
  });
}

FK_REGISTER_IMPL("ddim_step", cuda, ddim_step_cuda);

}  // namespace
}  // namespace fk::ops
