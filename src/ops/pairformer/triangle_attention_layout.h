// The two data movements of the pair-biased attentions that no registry op does, on the
// CPU and on CUDA (triangle_attention_layout.cu; a build without CUDA refuses the CUDA
// path, triangle_attention_layout_nocuda.cpp). Used by triangle_attention's and
// single_attention_pair_bias's composed baselines. Every tensor is packed except where
// said; src and dst have one dtype and do not overlap.
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"

namespace fk::ops {

// Columns [col0, col0 + width) of the rows of src, a [nb, n1, n2, src_cols] grid of rows
// seen as [nb n1 n2, src_cols], into dst [nb n1 n2, width]:
//   dst[b, i, j, :] = src[b, i, j, col0:col0 + width]   (transpose = false)
//                   = src[b, j, i, col0:col0 + width]   (transpose = true; n1 == n2)
// Splits a fused projection into q, k, v and moves a pair representation's rows to its
// columns (the ending node's transposes).
void pair_rows_copy(const TensorView& dst, const TensorView& src, int64_t nb, int64_t n1, int64_t n2, int64_t col0,
                    bool transpose, DeviceType backend, void* stream);

// A per-pair, per-head projection [nb, n, n, heads] (seen as [nb n n, heads]) into the
// attention's bias layout dst [nb, heads, n, n]:
//   dst[b, h, i, j] = src[b, i, j, h]   (transpose = false)
//                   = src[b, j, i, h]   (transpose = true)
void pair_heads_major(const TensorView& dst, const TensorView& src, int64_t nb, int64_t n, bool transpose,
                      DeviceType backend, void* stream);

// The CUDA kernels behind them (stream-ordered, no synchronisation).
void pair_rows_copy_cuda(const TensorView& dst, const TensorView& src, int64_t nb, int64_t n1, int64_t n2,
                         int64_t col0, bool transpose, void* stream);
void pair_heads_major_cuda(const TensorView& dst, const TensorView& src, int64_t nb, int64_t n, bool transpose,
                           void* stream);

}  // namespace fk::ops
