// A weighted sum of embedding-table rows added to each token's row: the bilinear
// interpolation of a learned position-embedding grid (Qwen3-VL's vision tower: each patch
// mixes the four grid rows around its scaled position) is this op with K = 4 taps; the
// patch embeddings it is added to are updated in place. Shapes beside each field: T tokens
// (patches), K taps per token, V table rows, H hidden.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[t, :] += sum_{j < K} weights[t, j] * table[ids[t, j], :]
//
// Accumulated in fp32 (CUDA) or double (CPU reference) from the current out row, rounded
// once to the dtype. Every id must lie in [0, V): the CPU implementation reports the first
// bad one before writing anything; the CUDA baseline cannot report without a host sync and
// leaves such a token's row unchanged. K in [1, 16].
struct WeightedEmbeddingAddArgs {
  static constexpr const char* kName = "weighted_embedding_add";
  TensorView out;      // [T, H] inout; dtype of table; rows contiguous (row stride free)
  TensorView ids;      // [T, K] read; i32 or i64; contiguous
  TensorView weights;  // [T, K] read; f32; contiguous
  TensorView table;    // [V, H] read; f32/f16/bf16; rows contiguous (row stride free)
};

}  // namespace fk::ops
