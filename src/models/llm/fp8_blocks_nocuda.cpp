#include "models/llm/fp8_blocks.h"
#include "fk/status.h"

namespace fk::engine {

void quantize_fp8_blocks_cuda(const TensorView&, const TensorView&, const TensorView&, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "quantize_fp8_blocks: fastkernels was built without CUDA (FK_CUDA=OFF)");
}

}  // namespace fk::engine
