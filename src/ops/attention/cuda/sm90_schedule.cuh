// Where a PrefillSM90Plan schedule lies in its device workspace, for the Hopper prefill
// launch (attention_kernels.h): its eight i32 arrays at the offsets FlashInfer's plan info
// names. Include after <flashinfer/attention/scheduler.cuh>.
#pragma once
#include <cstdint>

#include "ops/attention/cuda/attention_kernels.h"

namespace fk::ops::attn {

inline void point_at_schedule(Sm90PrefillLaunch& l, const flashinfer::PrefillPlanSM90Info& info, void* int_workspace) {
  char* ws = static_cast<char*>(int_workspace);
  auto at = [&](int64_t offset) { return reinterpret_cast<int32_t*>(ws + offset); };
  l.qo_tile_indices = at(info.qo_tile_indices_offset);
  l.qo_indptr = at(info.qo_indptr_offset);
  l.kv_indptr = at(info.kv_indptr_offset);
  l.qo_lens = at(info.qo_len_offset);
  l.kv_lens = at(info.kv_len_offset);
  l.head_indices = at(info.head_indices_offset);
  l.work_indptr = at(info.work_indptr_offset);
  l.batch_indices = at(info.batch_indices_offset);
}

}  // namespace fk::ops::attn
