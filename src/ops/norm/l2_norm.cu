// l2_norm CUDA baseline (kernels: l2_norm_and_gated_kernels.cuh, a group of lanes per row,
// the row in registers).
// Qwen3-Next q or k of an 8192-token chunk, 8192 x 16 heads x 128 bf16: 67 MB: 22 us at
// 3.0 TB/s.
#include "fk/op_registry.h"
#include "ops/norm/l2_norm_and_gated_kernels.cuh"
#include "ops/norm/l2_norm_validate.h"

namespace fk::ops {
namespace {

fk_status l2_norm_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const L2NormArgs*>(args);
    validate_l2_norm(a, DeviceType::cuda);
    cuda::dispatch_float_dtype(a.input.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const row_norm_cuda::RowNormParams<T> p{a.out.ptr<T>(), a.out.strides[0], a.input.ptr<T>(), a.input.strides[0],
                                              nullptr,        0,                nullptr,          a.input.shape[0],
                                              static_cast<int>(a.input.shape[1]), a.eps, 0, 0};
      row_norm_cuda::launch_row_norm<false>(p, static_cast<cudaStream_t>(stream));
    });
  });
}

FK_REGISTER_IMPL("l2_norm", cuda, l2_norm_cuda);

}  // namespace
}  // namespace fk::ops
