// gelu_and_mul CUDA baseline (kernel: act_kernels.cuh).
// gelu_and_mul 16384 x 2*14336 bf16 moves 1409 MB: 470 us at 3.0 TB/s (erf/tanh cost about
// 20 instructions an element, still under the memory time).
#include "fk/op_registry.h"
#include "ops/activation/act_kernels.cuh"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

fk_status gelu_and_mul_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const GeluAndMulArgs*>(args);
    validate_gated(a, DeviceType::cuda);
    expect_gelu_approx(a.kName, a.approximate);
    if (a.approximate == GeluApprox::tanh)
      act_cuda::run_rowwise(a.kName, a.out, a.input, stream, [](auto) { return act_cuda::GeluAndMulOp<true>{}; });
    else
      act_cuda::run_rowwise(a.kName, a.out, a.input, stream, [](auto) { return act_cuda::GeluAndMulOp<false>{}; });
  });
}

FK_REGISTER_IMPL("gelu_and_mul", cuda, gelu_and_mul_cuda);

}  // namespace
}  // namespace fk::ops
