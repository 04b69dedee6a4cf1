// Adds a bias row to every row of a matrix on the GPU: out[m, n] += bias[n]. The linear
// baseline's fallback for problems whose cuBLASLt bias epilogue has no algorithm.
#pragma once
#include <cstdint>

#include "fk/dtype.h"

namespace fk::ops {

// out: [M, N] with row stride ld_out, bias: [N], both bf16 or both f16; async on `stream`.
void add_bias_rows(void* out, int64_t ld_out, const void* bias, int64_t M, int64_t N, DType dtype, void* stream);

}  // namespace fk::ops
