#include "ops/attention/contiguous_kv_policy.h"

#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/status.h"
#include "ops/attention/visible_keys.h"
#include "ops/common/variant_flag.h"

namespace fk::ops::attn {

int64_t contiguous_kv_rows(const PagedBatch& pb) { return int64_t{pb.kv_indptr.back()} * pb.page_size; }

double visible_pairs(const PagedBatch& pb, bool causal, int64_t window_left) {
  double pairs = 0;
  for (int64_t b = 0; b < pb.size(); ++b) {
    const int64_t qo = pb.qo_len(b), kv = pb.kv_len[b];
    for (int64_t i = 0; i < qo; ++i) pairs += static_cast<double>(visible_keys(qo, kv, i, causal, window_left));
  }
  return pairs;
}

namespace {

constexpr const char* kPrefillOp = BatchPrefillPagedAttentionArgs::kName;
FK_REGISTER_VARIANT(BatchPrefillPagedAttentionArgs::kName, "contiguous_kv",
                    "the batch's KV pages copied into contiguous buffers first wherever supported");
FK_REGISTER_VARIANT(BatchPrefillPagedAttentionArgs::kName, "no_contiguous_kv",
                    "the kernel always gathers KV from the pages (no contiguous copy)");

}  // namespace

ContiguousKvMode contiguous_kv_mode() {
  static const VariantFlag always(kPrefillOp, "contiguous_kv");
  static const VariantFlag never(kPrefillOp, "no_contiguous_kv");
  const bool a = always.on(), n = never.on();
  if (a && n)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, kPrefillOp, ": variants contiguous_kv and no_contiguous_kv are both selected; "
            "select one");
  return a ? ContiguousKvMode::always : n ? ContiguousKvMode::never : ContiguousKvMode::automatic;
}

bool choose_contiguous_kv(const PagedBatch& pb, const ContiguousKvRequest& r, ContiguousKvMode mode) {
  if (mode == ContiguousKvMode::never) return false;
  if (r.head_dim != 128 || r.dtype_bytes != 2 || r.cuda_graph || r.page_size >= kPagedTmaMinPageSize) return false;
  const int64_t rows = contiguous_kv_rows(pb);
  if (rows == 0 || prefill_contiguous_kv_bytes(rows, r.num_kv_heads, r.head_dim) > r.float_workspace_bytes)
    return false;
  if (mode == ContiguousKvMode::always) return true;
  int64_t query_tiles = 0;
  for (int64_t b = 0; b < pb.size(); ++b) query_tiles += (pb.qo_len(b) + kPrefillQueryTile - 1) / kPrefillQueryTile;
  return query_tiles * r.num_qo_heads >= kContiguousKvMinWorkPerSm * r.sm_count &&
         visible_pairs(pb, r.causal, r.window_left) >= kContiguousKvMinPairsPerRow * static_cast<double>(rows);
}

}  // namespace fk::ops::attn
