// A CPU-only build sees no CUDA device.
#include "harness/device/device_info.h"
#include "fk/status.h"

namespace fk::bench {

EnvReport query_env() {
  EnvReport r;
  r.host = query_host();
  r.built_with_cuda = false;
  r.cuda_error = "fastkernels was built without CUDA (FK_CUDA=OFF)";
  return r;
}

GpuInfo query_gpu(int device) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "GPU ", device, ": fastkernels was built without CUDA (FK_CUDA=OFF)");
}

}  // namespace fk::bench
