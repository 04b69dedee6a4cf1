// The small-M tensor-core kernel's layout on the CPU: its operand mapping (small_m_fragment.h)
// checked against the PTX ISA's m16n8k16 fragment layouts by emulating one chunk of a warp,
// and its work split (small_m_plan.h) for coverage and the production shapes.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "ops/linear/small_m_fragment.h"
#include "ops/linear/small_m_plan.h"

namespace fk::ops::small_m {
namespace {

// Written from the PTX ISA's tables for mma.m16n8k16 with 16-bit A/B and f32 C, not from
// the kernel: (row, col) of fragment element i of lane t (g = t / 4, q = t % 4). Element i
// sits in register i / 2, half i % 2.
struct RowCol {
  int row, col;
};
RowCol ptx_a(int lane, int i) {  // A 16 x 16 (m, k), i in 0..7
  const int g = lane / 4, q = lane % 4;
  const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
  const int col = 2 * q + (i & 1) + (i >= 4 ? 8 : 0);
  return {row, col};
}
RowCol ptx_b(int lane, int i) {  // B 16 x 8 (k, n), i in 0..3
  const int g = lane / 4, q = lane % 4;
  return {2 * q + (i & 1) + (i >= 2 ? 8 : 0), g};
}
RowCol ptx_c(int lane, int i) {  // C 16 x 8 (m, n), i in 0..3
  const int g = lane / 4, q = lane % 4;
  return {g + (i >= 2 ? 8 : 0), 2 * q + (i & 1)};
}

// One chunk of 32 k: what each lane loads (8 consecutive k of weight row g and of input
// rows g, g + 8, at 8q), put into fragments as the kernel does, and multiplied as the
// hardware does. Every physical k must meet itself in A and B exactly once per row.
TEST(LinearSmallMLayout, ChunkMappingIsOneConsistentPermutationOfK) {
  // phys_a[s][row][mma k], phys_b[s][mma k][n]: the physical k that lands there.
  int phys_a[kStepsPerChunk][16][16], phys_b[kStepsPerChunk][16][8];
  for (auto& s : phys_a)
    for (auto& r : s)
      for (int& k : r) k = -1;
  for (auto& s : phys_b)
    for (auto& r : s)
      for (int& k : r) k = -1;

  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, q = lane % 4;
    for (int s = 0; s < kStepsPerChunk; ++s) {
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const RowCol rc = ptx_a(lane, 2 * reg + half);
          const int data_row = g + 8 * a_row_half(reg);  // the input row the kernel puts there
          ASSERT_EQ(rc.row, data_row) << "A reg " << reg << " of lane " << lane << " holds the wrong row";
          int& slot = phys_a[s][rc.row][rc.col];
          ASSERT_EQ(slot, -1) << "A position filled twice";
          slot = kElemsPerLane * q + 2 * a_word(s, reg) + half;
        }
      for (int reg = 0; reg < 2; ++reg)
        for (int half = 0; half < 2; ++half) {
          const RowCol rc = ptx_b(lane, 2 * reg + half);
          ASSERT_EQ(rc.col, g) << "B column of lane " << lane << " is not its weight row";
          int& slot = phys_b[s][rc.row][rc.col];
          ASSERT_EQ(slot, -1) << "B position filled twice";
          slot = kElemsPerLane * q + 2 * b_word(s, reg) + half;
        }
    }
  }
  std::multiset<int> seen;
  for (int s = 0; s < kStepsPerChunk; ++s)
    for (int k = 0; k < 16; ++k) {
      const int p = phys_b[s][k][0];
      for (int n = 0; n < 8; ++n) ASSERT_EQ(phys_b[s][k][n], p) << "step " << s << " k " << k;
      for (int m = 0; m < 16; ++m) ASSERT_EQ(phys_a[s][m][k], p) << "A and B disagree at step " << s << " k " << k;
      seen.insert(p);
    }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kChunkK));
  for (int k = 0; k < kChunkK; ++k) EXPECT_EQ(seen.count(k), 1u) << "physical k " << k;
}

// The same emulation on numbers: the C elements a lane writes (c_row, c_col) hold the
// exact dot products of the input and weight rows over the chunk.
TEST(LinearSmallMLayout, EmulatedChunkGivesTheDotProducts) {
  int64_t x[16][kChunkK], w[8][kChunkK];
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < kChunkK; ++k) x[m][k] = (m * 37 + k * 11) % 19 - 9;
  for (int n = 0; n < 8; ++n)
    for (int k = 0; k < kChunkK; ++k) w[n][k] = (n * 53 + k * 7) % 23 - 11;

  int64_t d[16][8] = {};
  for (int s = 0; s < kStepsPerChunk; ++s) {
    int64_t a[16][16] = {}, b[16][8] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, q = lane % 4;
      const int64_t* lo = &x[g][kElemsPerLane * q];  // the lane's 16-byte loads
      const int64_t* hi = &x[g + 8][kElemsPerLane * q];
      const int64_t* wl = &w[g][kElemsPerLane * q];
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const RowCol rc = ptx_a(lane, 2 * reg + half);
          a[rc.row][rc.col] = (a_row_half(reg) ? hi : lo)[2 * a_word(s, reg) + half];
        }
      for (int reg = 0; reg < 2; ++reg)
        for (int half = 0; half < 2; ++half) {
          const RowCol rc = ptx_b(lane, 2 * reg + half);
          b[rc.row][rc.col] = wl[2 * b_word(s, reg) + half];
        }
    }
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < 16; ++k) d[m][n] += a[m][k] * b[k][n];
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const RowCol rc = ptx_c(lane, i);
      const int g = lane / 4, q = lane % 4;
      ASSERT_EQ(c_row(g, i), rc.row);
      ASSERT_EQ(c_col(q, i), rc.col);
      int64_t expect = 0;
      for (int k = 0; k < kChunkK; ++k) expect += x[rc.row][k] * w[rc.col][k];
      EXPECT_EQ(d[rc.row][rc.col], expect) << "row " << rc.row << " col " << rc.col;
    }
}

// Every row of the weight is some warp's, no block lies wholly past N, slices partition the
// full chunks with at least kUnroll each when split.
TEST(LinearSmallMLayout, GridCoversTheWeightAndSlicesPartitionK) {
  for (int sms : {1, 78, 132})
    for (int64_t N : {1, 7, 8, 15, 16, 17, 33, 1000, 4096, 6144, 28672, 128256})
      for (int64_t K : {8, 24, 32, 40, 256, 264, 4096, 14336}) {
        const Grid grid = plan_grid(N, K, sms);
        ASSERT_GE(grid.ks_log2, 0);
        ASSERT_LE(grid.ks_log2, kMaxSliceLog2);
        const int ks = 1 << grid.ks_log2;
        const int64_t rows_per_block = (kWarps / ks) * kRowsPerUnit;
        EXPECT_GE(grid.blocks * rows_per_block, N) << N << " " << K;
        EXPECT_LT((grid.blocks - 1) * rows_per_block, N) << N << " " << K;
        const int64_t full = K / kChunkK;
        EXPECT_EQ(slice_begin(full, ks, 0), 0);
        EXPECT_EQ(slice_begin(full, ks, ks), full);
        for (int s = 0; s < ks; ++s) {
          const int64_t chunks = slice_begin(full, ks, s + 1) - slice_begin(full, ks, s);
          EXPECT_GE(chunks, ks > 1 ? kUnroll : 0) << N << " " << K << " slice " << s;
        }
      }
}

// On an H100 (132 SMs) the Llama-3.1-8B projections keep every SM busy: qkv and the
// 4096-row ones split K 8 ways, gate_up 2, the LM head not at all.
TEST(LinearSmallMLayout, ProductionShapesOnAnH100) {
  struct Expect {
    int64_t N, K;
    int ks_log2;
  };
  for (const Expect e : {Expect{6144, 4096, 3}, Expect{4096, 4096, 3}, Expect{28672, 4096, 1},
                         Expect{4096, 14336, 3}, Expect{128256, 4096, 0}}) {
    const Grid grid = plan_grid(e.N, e.K, 132);
    EXPECT_EQ(grid.ks_log2, e.ks_log2) << e.N << " x " << e.K;
    EXPECT_GE(grid.blocks, 132) << e.N << " x " << e.K << ": SMs left idle";
  }
}

}  // namespace
}  // namespace fk::ops::small_m
