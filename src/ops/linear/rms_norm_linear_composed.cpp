// rms_norm_linear composed of registry calls, with the fused op's output contract: the norm
// op writes `normed` (fused_add_rms_norm works in place, so `normed` and `residual_out`
// first take copies of input and residual_in: the residual stays out of place), then
// linear reads it.
#include "ops/linear/rms_norm_linear_composed.h"

#include <cstddef>

#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "ops/common/validate.h"
#include "ops/linear/rms_norm_linear_validate.h"

namespace fk::ops {
namespace {

// dst = src for two [M, K] views whose rows may be strided (one copy when both are packed).
void copy_rows(const TensorView& dst, const TensorView& src, void* stream) {
  const int64_t M = src.shape[0], K = src.shape[1];
  const size_t row_bytes = static_cast<size_t>(K) * dtype_size(src.dtype);
  if (dst.strides[0] == K && src.strides[0] == K) {
    rt::memcpy_async(dst.data, dst.device, src.data, src.device, row_bytes * static_cast<size_t>(M), stream);
    return;
  }
  const size_t dst_pitch = static_cast<size_t>(dst.strides[0]) * dtype_size(dst.dtype);
  const size_t src_pitch = static_cast<size_t>(src.strides[0]) * dtype_size(src.dtype);
  for (int64_t m = 0; m < M; ++m)
    rt::memcpy_async(static_cast<std::byte*>(dst.data) + static_cast<size_t>(m) * dst_pitch, dst.device,
                     static_cast<const std::byte*>(src.data) + static_cast<size_t>(m) * src_pitch, src.device,
                     row_bytes, stream);
}

}  // namespace

template <DeviceType Backend>
fk_status rms_norm_linear_composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RmsNormLinearArgs*>(args);
    validate_rms_norm_linear(a, Backend);
    if (a.input.shape[0] == 0) return;
    if (arg_present(a.residual_in)) {
      copy_rows(a.normed, a.input, stream);
      copy_rows(a.residual_out, a.residual_in, stream);
      call_op(FusedAddRmsNormArgs{a.normed, a.residual_out, a.norm_weight, a.eps}, Backend, stream);
    } else {
      call_op(RmsNormArgs{a.normed, a.input, a.norm_weight, a.eps}, Backend, stream);
    }
    call_op(LinearArgs{a.out, a.normed, a.weight, a.bias, TensorView{}, TensorView{}}, Backend, stream);
  });
}

template fk_status rms_norm_linear_composed<DeviceType::cpu>(const void*, void*);
template fk_status rms_norm_linear_composed<DeviceType::cuda>(const void*, void*);

FK_REGISTER_VARIANT("rms_norm_linear", "unfused",
                    "the norm op, then linear, as separate registry calls (the residual copied out of place first)");

}  // namespace fk::ops
