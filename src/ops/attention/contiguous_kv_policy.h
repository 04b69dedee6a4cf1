// When the Hopper prefill copies the batch's KV pages into contiguous buffers first (the
// contiguous-KV path, paged_attention_cuda.cu) instead of letting the kernel gather them.
//
// Why a copy can pay: FlashInfer's paged prefill gathers a KV tile row by row with
// cp.async from a whole producer warpgroup; from contiguous rows its TMA mainloop loads a
// tile in one box per 64 columns. At head dim 128 on an H100 the TMA kernel runs 16k causal
// tokens ~15% faster (bench/results/h100/attention_prefill_contiguous_kv.json), while the
// copy moves every page row once (read + write of K and V). Each copied row serves as
// many query-key pairs as the queries that see it, so the copy pays for long prompts and
// prefill chunks over long contexts, not for short ones.
#pragma once
#include <cstdint>

#include "ops/attention/paged_batch.h"

namespace fk::ops::attn {

// Page rows the copy moves: every page of every sequence, whole.
int64_t contiguous_kv_rows(const PagedBatch& pb);

// Query-key pairs the batch's attention visits (causal and window masking applied).
double visible_pairs(const PagedBatch& pb, bool causal, int64_t window_left);

// Pages of at least this many tokens go to the paged-TMA mainloop (prefill_sm90_launch.cuh),
// which loads them by TMA where they lie: no copy needed.
inline constexpr int64_t kPagedTmaMinPageSize = 64;

// The automatic choice (bench/results/h100/attention_prefill_contiguous_kv.json, from
// 32 x 128 to 16k-token batches): the copy pays where
//   - each copied row serves at least kContiguousKvMinPairsPerRow query-key pairs (at 128
//     the two paths tie, at 64 the copy loses 6%: 8,192 rows cost ~25 us to copy), and
//   - the kernel has at least kContiguousKvMinWorkPerSm work items (128-query tiles times
//     query heads) per SM: with fewer the kernel runs one or two waves whose time the copy
//     only adds to (one 1,024-token prompt: 256 items, 5% slower; a 256-token chunk over
//     8,192 cached tokens: 64 items, 3% slower).
inline constexpr double kContiguousKvMinPairsPerRow = 256;
inline constexpr int64_t kContiguousKvMinWorkPerSm = 2;
inline constexpr int64_t kPrefillQueryTile = 128;  // the kernel's query tile at head dim 128

enum class ContiguousKvMode { automatic, always, never };

// From batch_prefill_paged_attention's variants: contiguous_kv always (where supported),
// no_contiguous_kv never, neither automatic; both selected is an fk::Error. Read at every
// plan, so one process can compare the paths.
ContiguousKvMode contiguous_kv_mode();

struct ContiguousKvRequest {
  int64_t head_dim = 0, page_size = 0, num_qo_heads = 0, num_kv_heads = 0;
  int64_t sm_count = 0;
  int64_t dtype_bytes = 0;
  int64_t float_workspace_bytes = 0;
  bool cuda_graph = false;
  bool causal = true;
  int64_t window_left = -1;
};

// Whether the plan takes the contiguous-KV path for this batch: the kernel exists for it
// (head dim 128, 16-bit KV, pages below the paged-TMA path's minimum, no CUDA graph: the
// copy's size follows the batch), the float workspace holds the copy, and the mode allows
// it (automatic: the two thresholds above).
bool choose_contiguous_kv(const PagedBatch& pb, const ContiguousKvRequest& r, ContiguousKvMode mode);

}  // namespace fk::ops::attn
