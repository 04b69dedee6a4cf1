// Late-interaction (MaxSim) relevance scores of ColBERT (ColBERTv2's colbert_score): every
// query token embedding is matched with its most similar document token embedding, and the
// matches add up.
//
// Shapes: Bq queries packed as Tq token rows, Bd documents packed as Td token rows, D the
// embedding width. Query a owns the rows [cu_seqlens_q[a], cu_seqlens_q[a+1]) of query (Lq[a]
// rows), document b the rows [cu_seqlens_d[b], cu_seqlens_d[b+1]) of doc (Ld[b] rows):
//   scores[a, b] = sum over query rows i of a of ( max over doc rows j of b of query_i . doc_j )
// A document without rows matches nothing: every query row contributes 0, so its scores are
// 0; a query without rows scores 0. No normalisation or scaling: ColBERT normalises the
// embeddings before they are stored, so the dot product is the cosine similarity.
// Products and sums accumulate in fp32 (CUDA) or double (CPU reference); scores are f32.
//
// Layout: query and doc are [tokens, D] with a contiguous last dimension; the row stride is
// free (a slice of a wider embedding store). Dtypes: query and doc f32, f16 or bf16 (one
// dtype); scores f32 (the CPU oracle writes f64), [Bq, Bd] contiguous. cu_seqlens_q and
// cu_seqlens_d: contiguous int32 [Bq + 1] and [Bd + 1], starting at 0, non-decreasing,
// ending at Tq (Td). max_seqlen_q / max_seqlen_d bound every Lq / Ld: the CUDA grid is sized
// from them (as FlashAttention's is), and the device metadata is not read on the host. The
// CPU implementation checks the metadata and fails naming the first bad entry; the CUDA one
// cannot read it without a synchronisation, so wrong metadata there is undefined.
// The CUDA baseline needs D a multiple of 8 in [8, 256], row strides whose rows start 16-byte
// aligned (data and stride in bytes); it reports FK_ERR_UNSUPPORTED otherwise.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

struct MaxSimArgs {
  static constexpr const char* kName = "maxsim";
  TensorView scores;        // [Bq, Bd] written; f32; contiguous; must not overlap any input
  TensorView query;         // [Tq, D] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView doc;           // [Td, D] read; dtype of query; rows contiguous (row stride free)
  TensorView cu_seqlens_q;  // [Bq + 1] read; i32; contiguous
  TensorView cu_seqlens_d;  // [Bd + 1] read; i32; contiguous
  int32_t max_seqlen_q;     // >= every Lq
  int32_t max_seqlen_d;     // >= every Ld
};

}  // namespace fk::ops
