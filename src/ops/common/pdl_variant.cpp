// The ops with the variant no_pdl (pdl_variant.h): those whose CUDA baselines launch kernels
// with launch_pdl() and open a PdlOffScope. Registered here in one list, compiled in CPU
// builds too, so that every build lists the same variants.
#include "ops/common/pdl_variant.h"

#include "fk/op_registry.h"
#include "ops/common/variant_flag.h"

namespace fk::ops {
namespace {

constexpr const char* kNoPdl = "no_pdl";

constexpr const char* kPdlOps[] = {
    "batch_decode_paged_attention", "fused_add_rms_norm", "fused_experts", "fused_moe", "gelu", "gelu_and_mul",
    "gemma_fused_add_rms_norm", "gemma_rms_norm", "layer_norm", "linear", "logit_softcap", "moe_grouped_topk",
    "moe_topk_sigmoid", "moe_topk_softmax", "qk_norm_rope", "relu2", "reshape_and_cache", "rms_norm",
    "rope_and_cache", "rotary_embedding", "silu_and_mul"};

[[maybe_unused]] const bool registered = [] {
  for (const char* op : kPdlOps)
    OpRegistry::global().define_variant(op, kNoPdl,
                                        "kernels launched without programmatic dependent launch (each waits for the "
                                        "whole kernel before it)");
  return true;
}();

}  // namespace

bool pdl_off_for(std::string_view op) {
  static const VariantFlagPerOp no_pdl(kPdlOps, kNoPdl);
  return no_pdl.on(op);
}

}  // namespace fk::ops
