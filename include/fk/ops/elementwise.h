// Element-wise ops of the candidate ABI that belong to no other family.
#pragma once
#include "fk/op.h"
#include "fk/tensor_view.h"

namespace fk::ops {

// out[t, :] = round_to_dtype(a[t, :] + b[t, :]): the residual adds of encoders and vision
// models, and the sum of an encoder's token, type and position embeddings. `out` may be `a`
// itself (accumulating in place); it must not overlap `b`.
struct AddArgs {
  static constexpr const char* kName = "add";
  TensorView out;  // [T, H] written; dtype of a; rows contiguous (row stride free); may be `a` itself
  TensorView a;    // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView b;    // [T, H] read; dtype of a; rows contiguous (row stride free)
};

}  // namespace fk::ops
