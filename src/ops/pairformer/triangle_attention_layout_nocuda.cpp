// triangle_attention_layout.h's CUDA path in a build without CUDA: a named refusal.
#include "fk/status.h"
#include "ops/pairformer/triangle_attention_layout.h"

namespace fk::ops {

void pair_rows_copy_cuda(const TensorView&, const TensorView&, int64_t, int64_t, int64_t, int64_t, bool, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "pair_rows_copy on CUDA tensors: built without CUDA");
}
void pair_heads_major_cuda(const TensorView&, const TensorView&, int64_t, int64_t, bool, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "pair_heads_major on CUDA tensors: built without CUDA");
}

}  // namespace fk::ops
