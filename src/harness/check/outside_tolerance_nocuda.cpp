#include "fk/status.h"
#include "harness/check/outside_tolerance.h"

namespace fk::bench {

int64_t count_outside_tolerance(const void* x, const void* ref, int64_t n, DType dtype, Tolerance tol,
                                Device device, void* /*stream*/) {
  FK_CHECK(device.is_cpu(),
           "count_outside_tolerance: fastkernels was built without CUDA, so device buffers cannot be compared");
  return detail::count_outside_tolerance_host(x, ref, n, dtype, tol);
}

}  // namespace fk::bench
