#include "harness/check/reference_choice.h"

namespace fk::bench {

std::string_view reference_name(ReferenceKind kind) {
  switch (kind) {
    case ReferenceKind::oracle: return "oracle";
    case ReferenceKind::gpu_oracle: return "gpu_oracle";
    case ReferenceKind::baseline: return "baseline";
  }
  return "?";
}

ReferenceKind choose_reference(const OpCost& cost, const EvalConfig& cfg, bool has_gpu_reference) {
  if (cost.flops <= cfg.oracle_flop_budget && cost.bytes <= cfg.oracle_byte_budget) return ReferenceKind::oracle;
  if (cfg.backend == DeviceType::cuda && has_gpu_reference) return ReferenceKind::gpu_oracle;
  return ReferenceKind::baseline;
}

ReferenceKind choose_reference(const OpDef& def, const OpCase& host_case, const EvalConfig& cfg) {
  const OpCost cost = def.cost ? def.cost(host_case) : OpCost{};
  return choose_reference(cost, cfg, OpRegistry::global().gpu_reference(def.name) != nullptr);
}

}  // namespace fk::bench
