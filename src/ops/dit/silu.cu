// silu CUDA baseline: the activation ops' row-chunked element-wise kernel (act_kernels.cuh)
// with x / (1 + exp(-x)) in fp32 (the fast intrinsics for 16-bit outputs, whose few-ulp
// errors are far below half an ulp of bf16/f16).
#include "fk/op_registry.h"
#include "ops/activation/act_kernels.cuh"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

template <bool kFast>
struct SiluOp {
  static constexpr bool kGated = false;
  __device__ __forceinline__ float operator()(float x) const {
    if constexpr (kFast) return __fdividef(x, 1.f + __expf(-x));  // x < -88: exp overflows, result -0
    else return x / (1.f + expf(-x));
  }
};

fk_status silu_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const SiluArgs*>(args);
    validate_silu(a, DeviceType::cuda);
    act_cuda::run_rowwise(a.kName, a.out, a.input, stream, [](auto tag) {
      using T = typename decltype(tag)::type;
      return SiluOp<!std::is_same_v<T, float>>{};
    });
  });
}

FK_REGISTER_IMPL("silu", cuda, silu_cuda);

}  // namespace
}  // namespace fk::ops
