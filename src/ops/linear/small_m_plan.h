// How small_m_gemm splits a problem over warps and blocks (plain C++, tested on the CPU).
//
// A warp's unit of work is kTilesPerWarp consecutive 8-row n-tiles of the weight (each
// input chunk it loads feeds all of them) over one slice of K. A block of kWarps warps
// holds kWarps / ks units, each split over ks K-slices (ks = 1, 2, 4 or 8); the ks partial
// sums of a unit are added through shared memory in slice order, so every output element
// is written once, by one thread, in a fixed order (deterministic, no atomics, no memset).
//
// The product is a stream over the weight, so what matters is the bytes in flight: each
// warp keeps kUnroll x kTilesPerWarp 512-byte loads outstanding, and ks grows until the
// grid has about kTargetWarpsPerSm warps per SM (small N: o and down projections), as long
// as every slice keeps at least kUnroll chunks.
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"  // FK_HD
#include "ops/linear/small_m_fragment.h"

namespace fk::ops::small_m {

constexpr int kWarps = 8;             // warps per block
constexpr int kTilesPerWarp = 2;      // 8-row n-tiles per warp (R)
constexpr int kUnroll = 4;            // chunks in flight per warp and n-tile
constexpr int kMaxSliceLog2 = 3;      // ks <= kWarps
constexpr int kTargetWarpsPerSm = 16;

struct Grid {
  int64_t blocks = 0;
  int ks_log2 = 0;  // K-slices per unit: 1 << ks_log2
};

// Rows of the weight a warp covers, and the warp units of an N-row weight.
constexpr int64_t kRowsPerUnit = 8 * kTilesPerWarp;
inline int64_t units_for(int64_t N) { return (N + kRowsPerUnit - 1) / kRowsPerUnit; }

inline Grid plan_grid(int64_t N, int64_t K, int sm_count) {
  const int64_t units = units_for(N);
  const int64_t full_chunks = K / kChunkK;
  const int64_t target = static_cast<int64_t>(sm_count > 0 ? sm_count : 1) * kTargetWarpsPerSm;
  Grid g;
  while (g.ks_log2 < kMaxSliceLog2 && (units << g.ks_log2) < target &&
         full_chunks >= (int64_t{2} << g.ks_log2) * kUnroll)
    ++g.ks_log2;
  const int64_t units_per_block = kWarps >> g.ks_log2;
  g.blocks = (units + units_per_block - 1) / units_per_block;
  return g;
}

// First full chunk of K-slice `slice` of `ks` (slice ks gives the end). Slices split the
// K / kChunkK full chunks evenly; the partial chunk past them (K % kChunkK, a multiple of
// 8) belongs to the last slice.
FK_HD inline int64_t slice_begin(int64_t full_chunks, int ks, int slice) { return full_chunks * slice / ks; }

}  // namespace fk::ops::small_m
