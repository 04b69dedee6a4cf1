// The streaming-multiprocessor count of the current device, which kernels' launch plans
// size their grids by. Looked up once per device and cached (the lookup is a driver call;
// launch paths ask on every call). Include only from CUDA-enabled translation units.
#pragma once

namespace fk::cuda {

int current_sm_count();

}  // namespace fk::cuda
