// Which weight-streaming kernel takes a decode GEMM of up to kSkinnyMaxRows input rows
// (plain C++, tested on the CPU). Both kernels stream the weight; what differs is how many
// warps a narrow weight gives them. skinny_gemm takes two weight rows per warp from 2 rows
// on, so a weight of N rows makes N / 2 warps: at Llama-3.1-8B's o and down projections
// (N = 4096) that is 15.5 warps per SM on an H100, too few loads in flight. At 2 rows it
// splits K for such weights; at 3-4 rows its K slices lost (more partial sums in registers,
// bench/results/h100/linear_decode_rows.json), and small_m_gemm, which splits K until the
// grid is full (small_m_plan.h), is faster there: at 4 rows o 20.56 -> 19.49 us, down
// 53.95 -> 50.78 us, while the wide qkv and gate_up stay faster on skinny_gemm
// (bench/results/h100/linear_decode_narrow.json).
#pragma once
#include <cstdint>

namespace fk::ops {

// A weight is narrow when its row pairs give fewer than this many warps per SM.
constexpr int64_t kNarrowWarpsPerSm = 16;
// From this many input rows on, a narrow weight goes to small_m_gemm.
constexpr int64_t kNarrowSmallMMinRows = 3;

inline bool narrow_weight(int64_t N, int64_t sm_count) { return (N + 1) / 2 < kNarrowWarpsPerSm * sm_count; }

// True when a decode GEMM of M <= kSkinnyMaxRows rows should take small_m_gemm rather than
// skinny_gemm.
inline bool small_m_for_narrow_weight(int64_t M, int64_t N, int64_t sm_count) {
  return M >= kNarrowSmallMMinRows && narrow_weight(N, sm_count);
}

// Weight rows per warp of skinny_gemm's unsliced kernel at M = 2..4 input rows. Each input
// chunk a warp loads serves its R weight rows, so a larger R means fewer input loads and
// conversions per weight byte; what limits R is registers (R x M accumulators, R weight
// chunks per unrolled step) and, for narrow weights, warps. At 4 rows a wide weight takes
// 3: the decode GEMMs of a Llama-3.1-8B step 5.382 -> 5.347 ms at 4 rows (probe of
// bench/results/h100/decode_batch4_gap.json), while at 2 and 3 rows 3 was slower (5.318 ->
// 5.391, 5.283 -> 5.303 ms). Narrow weights keep 2 (they run small_m_gemm from 3 rows).
constexpr int kWideWeightRowsPerWarpAt4 = 3;

inline int skinny_weight_rows_per_warp(int64_t M, int64_t N, int64_t sm_count) {
  if (M <= 1) return 1;
  return M == 4 && !narrow_weight(N, sm_count) ? kWideWeightRowsPerWarpAt4 : 2;
}

}  // namespace fk::ops
