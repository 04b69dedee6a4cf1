#include "core/random_device.h"
#include "fk/status.h"

namespace fk::detail {
void fill_uniform_device(const TensorView&, uint64_t, uint64_t, UniformParams, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "fill_uniform on a CUDA tensor: built without CUDA");
}
void fill_int_device(const TensorView&, uint64_t, uint64_t, int64_t, int64_t, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "fill_int on a CUDA tensor: built without CUDA");
}
void fill_normal_device(const TensorView&, uint64_t, uint64_t, NormalParams, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "fill_normal on a CUDA tensor: built without CUDA");
}
}  // namespace fk::detail
