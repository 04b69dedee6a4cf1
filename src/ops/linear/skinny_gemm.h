// The linear baseline's path for decode shapes: a few rows of input (M <= kSkinnyMaxRows)
// against a large weight. Such a product is a stream over the weight (M flops per byte
// loaded), and cuBLASLt's small-M kernels leave a third of the memory bandwidth unused on
// Hopper (bench/results: 48-68% of speed of light at M = 1). This kernel streams each
// weight row through one warp with 16-byte loads, several in flight per thread; from 2
// input rows on, a warp takes two weight rows and reuses every input chunk across them
// (bench/results/h100/linear_decode_rows.json), three for wide weights at 4 rows
// (decode_gemm_choice.h). At 1 row, and at 2 rows for a narrow
// weight, a row is split over up to 8 warps along K (summed in a fixed order), so that
// enough loads are in flight: Qwen3-30B-A3B's batch-1 dense GEMVs 1,127 -> 949 us a step
// (bench/results/h100/linear_decode_slices.json).
// Measured on an H100 (bench/results/h100/linear_bench.json, engine decode steps): up to
// 4 rows it beats cuBLASLt (Llama-3.1-8B batch-1 step 6.26 ms against 6.73 ms), at 8 rows
// it lost (7.74 against 7.04 ms, ALU-bound), so from 5 rows on linear uses the
// tensor-core kernel of small_m_gemm.h (up to kSmallMMaxRows rows), then cuBLASLt; narrow
// weights take small_m_gemm from 3 rows on (decode_gemm_choice.h).
#pragma once
#include <cstdint>

#include "fk/dtype.h"

namespace fk::ops {

constexpr int64_t kSkinnyMaxRows = 4;

// Optional prologue of the kernel at 1 input row (rms_norm_linear): the row is first
// normalised,
//   s = round(input + residual_in) (input alone without residual_in)
//   row = round(s * rsqrt(mean(s^2) + eps) * weight)
// by every CTA into its shared memory (the row is a few KB: recomputing it costs less than
// a kernel boundary), and CTA 0 stores s to residual_out and the row to normed. Not at more
// rows: every CTA reads 4 x M x K bytes for it, and at 4 rows that made decode steps slower
// (bench/results/h100/rms_norm_linear.json).
struct SkinnyNorm {
  const void* residual_in = nullptr;  // [M, K], row stride ld_residual_in; or null
  void* residual_out = nullptr;       // [M, K], row stride ld_residual_out; with residual_in
  void* normed = nullptr;             // [M, K], row stride ld_normed
  const void* weight = nullptr;       // [K]
  int64_t ld_residual_in = 0, ld_residual_out = 0, ld_normed = 0;
  float eps = 0;
};

// Shared memory the prologue may use for its row (K up to 32768 16-bit elements).
constexpr int64_t kSkinnyNormMaxBytes = 64 * 1024;

struct SkinnyGemm {
  void* out = nullptr;         // [M, N], row stride ld_out; dtype
  const void* input = nullptr;  // [M, K], row stride ld_input; dtype
  const void* weight = nullptr; // [N, K], row stride ld_weight; dtype
  const void* bias = nullptr;   // [N] or null; dtype
  int64_t M = 0, N = 0, K = 0, ld_out = 0, ld_input = 0, ld_weight = 0;
  DType dtype = DType::bf16;    // bf16 or f16, all operands
  const SkinnyNorm* norm = nullptr;  // M = 1 only: the input row is normalised first (see SkinnyNorm)
};

// True when the kernel takes the problem: 1 <= M <= kSkinnyMaxRows, bf16/f16 throughout,
// K a multiple of 8, input and weight rows 16-byte aligned (pointers and strides); with a
// norm prologue also M = 1, its tensors 16-byte aligned and K within kSkinnyNormMaxBytes.
bool skinny_gemm_applies(const SkinnyGemm& g);
// out = input @ weight^T (+ bias), f32 accumulation in an order fixed by (M, N, K, device SM
// count): repeated calls are bit-identical; async on `stream`.
void skinny_gemm(const SkinnyGemm& g, void* stream);

}  // namespace fk::ops
