#include "serving/generate/pending_tokens.h"
#include "fk/status.h"

namespace fk::engine {

void fill_pending_tokens_cuda(const TensorView&, const TensorView&, const TensorView&, const TensorView&, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "fill_pending_tokens: fastkernels was built without CUDA (FK_CUDA=OFF)");
}

}  // namespace fk::engine
