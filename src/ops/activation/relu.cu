// relu CUDA baseline (kernel: act_kernels.cuh, 16-byte words where the rows allow).
// DLRM's top MLP activation at 16384 x 1024 bf16 moves 67 MB (read once, written once).
#include "fk/op_registry.h"
#include "ops/activation/act_kernels.cuh"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

struct ReluOp {
  static constexpr bool kGated = false;
  __device__ __forceinline__ float operator()(float x) const { return x < 0.f ? 0.f : x; }  // NaN stays NaN
};

fk_status relu_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ReluArgs*>(args);
    validate_elementwise(a, DeviceType::cuda);
    act_cuda::run_rowwise(a.kName, a.out, a.input, stream, [](auto) { return ReluOp{}; });
  });
}

FK_REGISTER_IMPL("relu", cuda, relu_cuda);

}  // namespace
}  // namespace fk::ops
