// pairformer_transition's CUDA baseline: its parts' CUDA baselines through the registry
// (f32 projections through the cuBLAS GEMM of triangle_multiplication_gemm_cuda.cpp).
#include "fk/op_registry.h"
#include "ops/pairformer/pairformer_transition_composed.h"
#include "ops/pairformer/triangle_multiplication_kernels.h"

namespace fk::ops {
namespace {

fk_status pairformer_transition_cuda(const void* args, void* stream) {
  return op_guard([&] {
    pairformer_transition_composed(*static_cast<const TransitionArgs*>(args), DeviceType::cuda, nt_gemm_cuda, stream);
  });
}

FK_REGISTER_IMPL("pairformer_transition", cuda, pairformer_transition_cuda);

}  // namespace
}  // namespace fk::ops
