// Every variant that an op's CUDA launch path asks for (some from files CPU builds do not
// compile) is registered in every build, on an op the registry defines: asking for an
// unregistered one is an error at the first launch, and `fk ops variants` must list it.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "fk/op_registry.h"

namespace fk {
namespace {

TEST(OpVariants, EveryLaunchPathVariantIsRegisteredOnADefinedOp) {
  const std::vector<std::pair<std::string, std::string>> asked = {
      {"batch_prefill_paged_attention", "contiguous_kv"},
      {"batch_prefill_paged_attention", "no_contiguous_kv"},
      {"batch_prefill_paged_attention", "no_paged_tma"},
      {"batch_decode_paged_attention", "no_paged_tma"},
      {"batch_decode_paged_attention", "no_pdl"},
      {"conv2d", "simt"},
      {"conv2d", "scalar_loads"},
      {"varlen_attention", "no_sm90_ragged"},
      {"fused_experts", "tiled_decode"},
      {"fused_experts", "no_grouped_gemm"},
      {"fused_experts", "unfused_gate_up"},
      {"fused_experts", "no_pdl"},
      {"fused_moe", "no_pdl"},
      {"linear", "no_autotune"},
      {"linear", "no_skinny"},
      {"linear", "no_small_m"},
      {"linear", "skinny_max_rows_0"},
      {"linear", "skinny_max_rows_3"},
      {"linear", "no_pdl"},
      {"rms_norm", "late_weight"},
      {"layer_norm", "late_weight"},
      {"gemma_fused_add_rms_norm", "no_pdl"},
      {"rope_and_cache", "late_reads"},
      {"rotary_embedding", "no_pdl"},
      {"moe_topk_softmax", "no_pdl"},
      {"reshape_and_cache", "no_pdl"},
      {"silu_and_mul", "no_pdl"},
      {"sample", "max_cluster_1"},
  };
  const OpRegistry& r = OpRegistry::global();
  for (const auto& [op, name] : asked) {
    SCOPED_TRACE(op + " " + name);
    EXPECT_TRUE(r.has(op));
    EXPECT_NO_THROW(r.variant_on(op, name));
  }
  for (const OpVariantInfo& v : r.variants()) {
    EXPECT_TRUE(r.has(v.op)) << "variant " << v.name << " of an op the registry does not define: " << v.op;
    EXPECT_FALSE(v.summary.empty()) << v.op << " " << v.name;
  }
}

}  // namespace
}  // namespace fk
