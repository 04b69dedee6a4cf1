// How small_m_gemm feeds mma.sync.m16n8k16 (A row-major 16x16, B column-major 16x8, f32 C)
// from 16-byte loads. Plain constexpr functions so that a CPU test checks the mapping
// against the PTX ISA's fragment layouts.
//
// The PTX layouts (lane t: group g = t / 4, quad q = t % 4; each 32-bit register holds two
// 16-bit elements, the lower k in the low half):
//   A: reg 0 = A[g][2q, 2q+1]      reg 1 = A[g+8][2q, 2q+1]
//      reg 2 = A[g][2q+8, 2q+9]    reg 3 = A[g+8][2q+8, 2q+9]
//   B: reg 0 = B[2q, 2q+1][g]      reg 1 = B[2q+8, 2q+9][g]
//   C: c0, c1 = C[g][2q, 2q+1]     c2, c3 = C[g+8][2q, 2q+1]
// A lane therefore supplies A and B at the same four k of the mma: {2q, 2q+1, 2q+8, 2q+9}.
// The sum over k inside an mma does not depend on which physical k sits at which mma
// position, so any permutation applied to A and B alike is legal. We pick the one that
// makes every operand a 16-byte load of 8 consecutive k:
//   a chunk is 32 consecutive k (kb .. kb+31); lane (g, q) loads the 8 elements
//   kb + 8q .. kb + 8q + 7 of weight row n0 + g (B column g) and of input rows g and g + 8
//   (A rows), as four 32-bit words w0..w3 (word j holds k = kb + 8q + 2j and the next).
//   The chunk takes two mma steps:
//     step s, mma k 2q, 2q+1   <- word 2s     (physical k kb + 8q + 4s + 0, 1)
//     step s, mma k 2q+8, 2q+9 <- word 2s + 1 (physical k kb + 8q + 4s + 2, 3)
//   so B reg j of step s = weight word 2s + j, A reg r of step s = word 2s + r / 2 of input
//   row g + 8 * (r % 2). Over q = 0..3 and s = 0..1 this visits each of the 32 k once.
// A warp load of one chunk is then 8 rows x 64 contiguous bytes (512 bytes, every 32-byte
// sector fully used), and the input rows are 16-byte loads at the same offsets.
#pragma once
#include "fk/tensor_view.h"  // FK_HD

namespace fk::ops::small_m {

constexpr int kChunkK = 32;        // k per chunk: 4 lanes x 8 elements per weight row
constexpr int kStepsPerChunk = 2;  // mma k16 steps per chunk
constexpr int kElemsPerLane = 8;   // k per lane and row in a chunk (one 16-byte load)

// The 32-bit word (0..3) of a lane's 16-byte input chunk that fills A register `reg` (0..3)
// at mma step `step` (0..1), and which of the lane's two input rows it comes from (0: row
// g, 1: row g + 8).
FK_HD constexpr int a_word(int step, int reg) { return 2 * step + reg / 2; }
FK_HD constexpr int a_row_half(int reg) { return reg % 2; }
// The word of a lane's 16-byte weight chunk that fills B register `reg` (0..1) at `step`.
FK_HD constexpr int b_word(int step, int reg) { return 2 * step + reg; }

// Output of C element `i` (0..3) of lane (g, q): row g + 8 * (i / 2) of the 16 input rows,
// column 2q + i % 2 of the 8-wide n-tile.
FK_HD constexpr int c_row(int g, int i) { return g + 8 * (i / 2); }
FK_HD constexpr int c_col(int q, int i) { return 2 * q + i % 2; }

}  // namespace fk::ops::small_m
