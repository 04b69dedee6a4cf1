// fused_experts' CUDA baseline as functions, shared by the op and by fused_moe's general
// path (routing launched first, then these).
#pragma once
#include "fk/ops/moe.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops::moe_cuda {

// FK_ERR_UNSUPPORTED (naming `op`) for validated arguments the baseline does not run: H or
// I not multiples of 8 (16 with fp8 weights), more than kAlignMaxExperts experts,
// misaligned tensors or hidden row stride.
void expect_fused_experts_supported(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const char* op);

// Launches fused_experts for supported arguments on `stream` (a cudaStream_t): the GEMV
// decode path, the grouped prefill path or the tiled kernels (fused_experts.cu). Kernels
// only (capturable); no-op for zero tokens.
void launch_fused_experts(const FusedExpertsArgs& a, const FusedExpertsShape& sh, void* stream);

}  // namespace fk::ops::moe_cuda
