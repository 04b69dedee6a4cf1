// Token embedding lookup. Shapes are written beside each field: T tokens (packed), V vocab
// rows of the table, H hidden.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[t, :] = table[ids[t], :]
//
// Precondition: every id lies in [0, V) (engines guarantee it: the tokenizer and sampler
// only produce valid ids). On violation:
// - the CPU implementation (and oracle) fails with FK_ERR_INVALID_ARGUMENT naming the first
//   bad token and its id, before writing anything;
// - the CUDA implementation cannot report errors from the device without a synchronisation,
//   so it writes a row of zeros for such a token. It never reads outside the table.
struct EmbeddingArgs {
  static constexpr const char* kName = "embedding";
  TensorView out;    // [T, H] written; dtype of table; rows contiguous (row stride free)
  TensorView ids;    // [T]    read; i32 or i64; contiguous
  TensorView table;  // [V, H] read; f32/f16/bf16; rows contiguous (row stride free)
};

}  // namespace fk::ops
