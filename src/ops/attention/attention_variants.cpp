#include "ops/attention/attention_variants.h"

#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "ops/common/variant_flag.h"

namespace fk::ops::attn {
namespace {

constexpr const char* kNoPagedTmaSummary = "KV pages gathered by cp.async, never by the paged-TMA mainloop";
FK_REGISTER_VARIANT(BatchPrefillPagedAttentionArgs::kName, "no_paged_tma", kNoPagedTmaSummary);
FK_REGISTER_VARIANT(BatchDecodePagedAttentionArgs::kName, "no_paged_tma", kNoPagedTmaSummary);

}  // namespace

bool paged_tma_off(std::string_view op) {
  static const VariantFlagPerOp no_paged_tma(
      {BatchPrefillPagedAttentionArgs::kName, BatchDecodePagedAttentionArgs::kName}, "no_paged_tma");
  return no_paged_tma.on(op);
}

}  // namespace fk::ops::attn
