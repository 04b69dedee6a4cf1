#include "bench/call_timer.h"
#include "fk/status.h"

namespace fk::bench {
std::unique_ptr<CallTimer> make_cuda_timer() {
  FK_FAIL(FK_ERR_UNSUPPORTED, "CUDA timing: fastkernels was built without CUDA");
}
}  // namespace fk::bench
