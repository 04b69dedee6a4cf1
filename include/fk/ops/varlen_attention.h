// Attention over packed variable-length sequences without a KV cache (encoders; prefill of
// models that keep no cache), FlashAttention's flash_attn_varlen_func conventions.
//
// Shapes: B sequences, Tq packed query tokens, Tk packed key tokens, Hq query heads, Hk
// key/value heads (Hq % Hk == 0; query head h reads KV head h / (Hq / Hk), GQA), D head dim.
// Sequence b owns the query tokens [cu_seqlens_q[b], cu_seqlens_q[b+1]) and the key tokens
// [cu_seqlens_k[b], cu_seqlens_k[b+1]); its lengths are Lq[b] and Lk[b] (self-attention:
// the same offsets for both, Lq = Lk).
//
// Query i of sequence b (i in [0, Lq)) sees every key j in [0, Lk) of its own sequence, or
// with causal = 1 the keys j <= i + Lk - Lq (FlashAttention's bottom-right alignment: the
// last query sees every key). Logits s_j = sm_scale * (q . k_j); out = softmax(s) @ v per
// query token and head, accumulated in fp32 (CUDA) or double (CPU reference) and rounded
// once to the dtype. A query that sees no key (causal with Lq > Lk) gets zeros, as
// FlashAttention writes.
//
// seqused_k (optional, FlashAttention's seqused_k): sequence b's keys are only its first
// seqused_k[b] <= Lk[b] key tokens; the rest of its tokens still query (ColBERT's query
// padding: [MASK] tokens no token attends to, whose own outputs are used). Causal alignment
// then counts the used keys.
//
// Layout: q, k, v and out are [tokens, heads, D] with a contiguous last dimension; the
// token and head strides are free (q, k and v may be slices of one fused qkv GEMM output).
// Dtypes: q, k, v and out f16 or bf16 (one dtype; the CPU oracle writes f64). cu_seqlens_q
// and cu_seqlens_k: contiguous int32 [B + 1], starting at 0, non-decreasing, ending at Tq
// (Tk). max_seqlen_q / max_seqlen_k bound every Lq / Lk (the CUDA grid is sized from
// them, as FlashAttention's are; the device metadata is not read on the host). The CPU
// implementation checks the metadata and fails naming the first bad entry; the CUDA one
// cannot read it without a synchronisation, so wrong metadata there is undefined.
// The CUDA baseline needs D a multiple of 8 in [8, 256], token and head strides multiples of
// 8 elements and 16-byte aligned q, k, v, out; it reports FK_ERR_UNSUPPORTED otherwise.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

struct VarlenAttentionArgs {
  static constexpr const char* kName = "varlen_attention";
  TensorView out;           // [Tq, Hq, D] written; dtype of q; must not overlap any input
  TensorView q;             // [Tq, Hq, D] read; f16/bf16
  TensorView k;             // [Tk, Hk, D] read; dtype of q
  TensorView v;             // [Tk, Hk, D] read; dtype of q
  TensorView cu_seqlens_q;  // [B + 1] read; i32; contiguous
  TensorView cu_seqlens_k;  // [B + 1] read; i32; contiguous
  int32_t max_seqlen_q;     // >= every Lq
  int32_t max_seqlen_k;     // >= every Lk
  float sm_scale;           // usually 1 / sqrt(D)
  int32_t causal;           // 0: bidirectional (encoders); 1: causal, bottom-right aligned
  TensorView seqused_k;     // [B] read; i32; contiguous; optional (empty: every key of each sequence)
};

}  // namespace fk::ops
