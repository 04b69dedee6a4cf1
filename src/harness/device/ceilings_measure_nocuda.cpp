#include "harness/device/ceilings.h"

namespace fk::bench {

DeviceCeilings measure_ceilings(const MeasureOptions&) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "fk env --measure needs a CUDA device: fastkernels was built without CUDA (FK_CUDA=OFF)");
}

}  // namespace fk::bench
