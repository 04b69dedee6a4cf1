#include "ops/attention/contiguous_kv_policy.h"

#include <cstdlib>
#include <cstring>

#include "fk/ops/attention.h"
#include "ops/attention/visible_keys.h"

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

ContiguousKvMode contiguous_kv_mode_from_env() {
  const char* v = std::getenv("FK_PREFILL_CONTIGUOUS_KV");
  if (v == nullptr) return ContiguousKvMode::automatic;
  if (std::strcmp(v, "1") == 0) return ContiguousKvMode::always;
  if (std::strcmp(v, "0") == 0) return ContiguousKvMode::never;
  return ContiguousKvMode::automatic;
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
