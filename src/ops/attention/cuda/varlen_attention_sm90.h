// varlen_attention on Hopper for head dim 128 (the variant sm90_ragged): FlashInfer's
// FA3-style ragged prefill kernel, the instantiation the paged prefill's contiguous-KV path
// already compiles, over K and V copied head-major. The 64-row mma.sync kernel of
// varlen_attention.cu keeps every other call.
#pragma once
#include <cuda_runtime.h>

#include "fk/ops/varlen_attention.h"

namespace fk::ops::attn {

// Runs the call and returns true, or returns false having written nothing when the path
// does not take it: a head dim other than 128, an output that is not contiguous, views not
// 16-byte aligned, a sequence with queries and no keys, causal queries that see no key
// (more queries than keys), or more query tiles than FlashInfer's per-head schedule holds.
// Reads the sequence offsets to the host (a synchronisation of `stream`), which the
// schedule needs; the call therefore cannot be captured in a CUDA graph.
bool varlen_attention_sm90(const VarlenAttentionArgs& a, cudaStream_t stream);

}  // namespace fk::ops::attn
