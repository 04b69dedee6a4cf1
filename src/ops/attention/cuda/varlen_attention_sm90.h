// varlen_attention on Hopper for head dims 72 to 128 (the default; the variant no_sm90_ragged
// turns it off): FlashInfer's FA3-style ragged prefill kernel, the head-dim-128 instantiation
// the paged prefill's contiguous-KV path already compiles, over K and V copied head-major.
// Narrower heads (Qwen3-VL's vision tower: 72) are zero-padded to 128 on the way in and cut
// on the way out: up to 1.8x the kernel's FLOPs, still faster than the 64-row mma.sync kernel
// of varlen_attention.cu, which keeps every other call.
#pragma once
#include <cuda_runtime.h>

#include "fk/ops/varlen_attention.h"

namespace fk::ops::attn {

// Runs the call and returns true, or returns false having written nothing when the path
// does not take it: a head dim under 72, over 128 or not a multiple of 8, views whose rows or
// heads are not 16-byte aligned, a sequence with queries and no keys, causal queries that see no key
// (more queries than keys), more query tiles than FlashInfer's per-head schedule holds, or
// a stream being captured into a CUDA graph: the schedule needs the sequence offsets on the
// host, read with a synchronisation of `stream`.
bool varlen_attention_sm90(const VarlenAttentionArgs& a, cudaStream_t stream);

}  // namespace fk::ops::attn
