#include "ops/norm/norm_variants.h"

#include "fk/op_registry.h"
#include "ops/common/variant_flag.h"

namespace fk::ops {
namespace {

constexpr const char* kLateWeightSummary = "the weight read after the PDL wait, not before it";
FK_REGISTER_VARIANT("rms_norm", "late_weight", kLateWeightSummary);
FK_REGISTER_VARIANT("gemma_rms_norm", "late_weight", kLateWeightSummary);
FK_REGISTER_VARIANT("fused_add_rms_norm", "late_weight", kLateWeightSummary);
FK_REGISTER_VARIANT("gemma_fused_add_rms_norm", "late_weight", kLateWeightSummary);
FK_REGISTER_VARIANT("layer_norm", "late_weight", kLateWeightSummary);

}  // namespace

bool norm_late_weight(std::string_view op) {
  static const VariantFlagPerOp late_weight(
      {"rms_norm", "gemma_rms_norm", "fused_add_rms_norm", "gemma_fused_add_rms_norm", "layer_norm"}, "late_weight");
  return late_weight.on(op);
}

}  // namespace fk::ops
