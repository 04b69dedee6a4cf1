#include "ops/rope/rope_variants.h"

#include "fk/op_registry.h"
#include "ops/common/variant_flag.h"

namespace fk::ops {
namespace {

constexpr const char* kLateReadsSummary =
    "positions, cos/sin rows, slots and norm weights read after the PDL wait, not before";
FK_REGISTER_VARIANT("rotary_embedding", "late_reads", kLateReadsSummary);
FK_REGISTER_VARIANT("qk_norm_rope", "late_reads", kLateReadsSummary);
FK_REGISTER_VARIANT("rope_and_cache", "late_reads", kLateReadsSummary);

}  // namespace

bool rope_late_reads(std::string_view op) {
  static const VariantFlagPerOp late_reads({"rotary_embedding", "qk_norm_rope", "rope_and_cache"}, "late_reads");
  return late_reads.on(op);
}

}  // namespace fk::ops
