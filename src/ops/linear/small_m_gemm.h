// The linear baseline's path for decode batches of kSkinnyMaxRows + 1 .. kSmallMMaxRows input
// rows. Like skinny_gemm it is a stream over the weight, but the skinny kernel's FMAs on
// CUDA cores run out of ALU at 8 rows (8 rows x 8 elements of FMA plus conversions per
// 16-byte weight load), and cuBLASLt's kernels for these shapes leave bandwidth unused
// (Llama-3.1-8B decode step on an H100: 7.04 ms at batch 8 against 6.13 ms at batch 1).
// This kernel puts the rows on tensor cores: mma.sync m16n8k16 with the (up to 16) input
// rows as A and 8 weight rows as B, f32 accumulation, weight read with streaming 16-byte
// loads (small_m_fragment.h: the operand layout; small_m_plan.h: the work split).
// It is correct for any M in 1..kSmallMMaxRows; linear uses it above kSkinnyMaxRows, and
// for narrow weights from 3 rows on (decode_gemm_choice.h).
#pragma once
#include <cstdint>

#include "ops/linear/skinny_gemm.h"

namespace fk::ops {

constexpr int64_t kSmallMMaxRows = 16;

// The problem is described as for skinny_gemm (SkinnyGemm: out, input, weight, bias, M, N,
// K, row strides, dtype). True when the kernel takes it: 1 <= M <= kSmallMMaxRows, N >= 1,
// bf16/f16 throughout, K a positive multiple of 8, input and weight rows 16-byte aligned
// (pointers and strides; a single row may have any stride). out and bias have no alignment
// needs (scalar stores and loads).
bool small_m_gemm_applies(const SkinnyGemm& g);
// out = input @ weight^T (+ bias), f32 accumulation in an order fixed by (N, K, device SM
// count): repeated calls are bit-identical; async on `stream`, graph-capturable.
void small_m_gemm(const SkinnyGemm& g, void* stream);

}  // namespace fk::ops
