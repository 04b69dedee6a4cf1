// triangle_multiplication's CUDA baseline: the composed path (layer_norm and linear through
// the registry) with the CUDA steps of triangle_multiplication.cu and the cuBLAS GEMMs.
#include "fk/op_registry.h"
#include "ops/pairformer/triangle_multiplication_kernels.h"

namespace fk::ops {
namespace {

constexpr TriangleMultiplicationSteps kCudaSteps{triangle_gate_cuda, nt_gemm_cuda, triangle_to_token_major_cuda,
                                                 triangle_output_gate_cuda};

fk_status triangle_multiplication_cuda(const void* args, void* stream) {
  return op_guard([&] {
    triangle_multiplication_composed(*static_cast<const TriangleMultiplicationArgs*>(args), DeviceType::cuda,
                                     kCudaSteps, stream);
  });
}

FK_REGISTER_IMPL("triangle_multiplication", cuda, triangle_multiplication_cuda);

}  // namespace
}  // namespace fk::ops
