// rms_norm_linear CUDA baseline. One row (16-byte aligned, K within kSkinnyNormMaxBytes):
// one kernel, skinny_gemm with its norm prologue, so the sub-layer's norm costs no kernel
// of its own. Anything else: the norm kernels (residual written out of place) into
// `normed`, then the linear baseline on it.
//
// Why one row only (H100, bench/results/h100/rms_norm_linear.json): every CTA of the
// fused kernel reads the whole input and residual rows, 4 x M x K bytes, from L2, and a
// decode GEMM has 1-2 thousand CTAs. At 1 row that costs less than the norm kernel's
// launch gap (Llama-3.1-8B batch 1 x 1k: 5.67 ms a step against 5.72 unfused); at 4 rows
// it is 64 KB a CTA and the step got slower (6.72 against 6.46 ms).
// The variant rms_norm_linear=unfused (or linear=no_skinny) takes the second path
// everywhere, for A/B runs; in the engine that variant makes the registry run the op as
// its parts (rms_norm_linear_composed.cpp, where the variant is registered).
#include <cuda_runtime.h>

#include "fk/op_registry.h"
#include "ops/linear/cublaslt_context.h"
#include "ops/linear/linear_variants.h"
#include "ops/linear/rms_norm_linear_validate.h"
#include "ops/linear/skinny_gemm.h"
#include "ops/norm/norm_kernels.cuh"

namespace fk::ops {
namespace {

constexpr const char* kOp = RmsNormLinearArgs::kName;

bool fused_enabled() {
  return linear_paths().skinny && !OpRegistry::global().variant_on(kOp, "unfused");
}

// The one-kernel path; false when skinny_gemm does not take the problem.
bool run_fused(const RmsNormLinearArgs& a, bool has_residual, void* stream) {
  SkinnyNorm n;
  n.residual_in = has_residual ? a.residual_in.data : nullptr;
  n.residual_out = has_residual ? a.residual_out.data : nullptr;
  n.normed = a.normed.data;
  n.weight = a.norm_weight.data;
  n.ld_residual_in = has_residual ? leading_dim(a.residual_in) : 0;
  n.ld_residual_out = has_residual ? leading_dim(a.residual_out) : 0;
  n.ld_normed = leading_dim(a.normed);
  n.eps = a.eps;
  SkinnyGemm g;
  g.out = a.out.data;
  g.input = a.input.data;
  g.weight = a.weight.data;
  g.bias = arg_present(a.bias) ? a.bias.data : nullptr;
  g.M = a.input.shape[0];
  g.N = a.weight.shape[0];
  g.K = a.input.shape[1];
  g.ld_out = leading_dim(a.out);
  g.ld_input = leading_dim(a.input);
  g.ld_weight = leading_dim(a.weight);
  g.dtype = a.input.dtype;
  g.norm = &n;
  // N = 0 launches no CTA, and then nothing would write normed and residual_out.
  if (!fused_enabled() || g.N == 0 || !skinny_gemm_applies(g)) return false;  // applies at 1 row only
  cublaslt::DeviceGuard guard(a.out.device.index);
  skinny_gemm(g, stream);
  return true;
}

void run_unfused(const RmsNormLinearArgs& a, bool has_residual, void* stream) {
  if (has_residual)
    norm_cuda::run_norm<norm_cuda::FusedAddRmsNormSpec>(kOp, a.normed, a.input, &a.residual_in, a.norm_weight,
                                                         nullptr, a.eps, stream, &a.residual_out);
  else
    norm_cuda::run_norm<norm_cuda::RmsNormSpec>(kOp, a.normed, a.input, nullptr, a.norm_weight, nullptr, a.eps,
                                                stream);
  if (a.weight.shape[0] == 0) return;
  // The linear baseline, not whatever candidate is installed for linear: this op's
  // behaviour does not change with another op's implementation.
  const LinearArgs linear{a.out, a.normed, a.weight, a.bias, TensorView{}, TensorView{}};
  const fk_op_fn fn = OpRegistry::global().baseline(LinearArgs::kName, DeviceType::cuda);
  FK_CHECK(fn != nullptr, kOp, ": no CUDA baseline of linear is registered");
  const fk_status st = fn(&linear, stream);
  if (st != FK_OK) FK_FAIL(st, kOp, ": the linear step failed: ", last_error_message());
}

fk_status rms_norm_linear_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RmsNormLinearArgs*>(args);
    validate_rms_norm_linear(a, DeviceType::cuda);
    if (a.input.shape[0] == 0) return;
    const bool has_residual = arg_present(a.residual_in);
    if (!run_fused(a, has_residual, stream)) run_unfused(a, has_residual, stream);
  });
}

FK_REGISTER_IMPL("rms_norm_linear", cuda, rms_norm_linear_cuda);

}  // namespace
}  // namespace fk::ops
