// Index math of the fused-experts grouped GEMM (moe_gemm.cuh), host and device alike, so
// that a CPU test can replay a CTA's data movement and tensor-core fragments exactly
// (tests/ops/moe_gemm_layout_test.cpp).
//
// One CTA computes a [bm, n] tile of one GEMM for one block of bm sorted slots (all of one
// expert, moe_align_block_size with block_size = bm):
//   gate_up  A = the slots' hidden rows (gathered by token), B = w13[e] rows: the CTA's
//            bn_rows() B rows are bn_rows()/2 gate rows and the same bn_rows()/2 up rows,
//            so silu(gate) * up of bn_rows()/2 intermediate columns is formed in registers.
//   down     A = the slots' rows of the intermediate (row = sorted position), B = w2[e]
//            rows: bn_rows() output columns, scaled by the slot's routing weight.
// Warps are warps_m x warps_n; a warp owns mt m16 tiles and nt n8 tiles (mma.sync
// m16n8k16, fp32 accumulate). In gate_up the first nt/2 n8 tiles of a warp are gate
// columns and the last nt/2 the up columns of the same intermediate columns.
//
// Shared memory: per stage an A tile [bm][bk] (16-bit) and a B tile [bn_rows][bk] (16-bit,
// or 8-bit fp8), each row padded by 16 bytes so that the 8 rows one ldmatrix reads fall in
// distinct bank groups. Global -> shared copies move 16-byte chunks.
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"  // FK_HD

namespace fk::ops::moe_gemm {

enum class Kind : int { gate_up = 0, down = 1 };

struct Tile {
  int bm, bk, warps_m, warps_n, mt, nt, stages;
  FK_HD constexpr int threads() const { return 32 * warps_m * warps_n; }
  FK_HD constexpr int bn_rows() const { return warps_n * nt * 8; }
  // Output columns of one CTA: intermediate columns (gate_up) or hidden columns (down).
  FK_HD constexpr int out_cols(Kind kind) const { return kind == Kind::gate_up ? bn_rows() / 2 : bn_rows(); }
  FK_HD constexpr int a_row_bytes() const { return bk * 2 + 16; }
  FK_HD constexpr int b_row_bytes(int weight_bytes) const { return bk * weight_bytes + 16; }
  FK_HD constexpr int a_stage_bytes() const { return bm * a_row_bytes(); }
  FK_HD constexpr int b_stage_bytes(int weight_bytes) const { return bn_rows() * b_row_bytes(weight_bytes); }
  FK_HD constexpr int smem_bytes(int weight_bytes) const {
    return stages * (a_stage_bytes() + b_stage_bytes(weight_bytes)) + bm * 4;  // + the block's slot ids
  }
  // 16-byte chunks of one row of the A tile / the B tile.
  FK_HD constexpr int a_chunks_per_row() const { return bk / 8; }
  FK_HD constexpr int b_chunks_per_row(int weight_bytes) const { return bk * weight_bytes / 16; }
};

// The configurations the baseline launches, by rows per block.
inline constexpr Tile kTile16{16, 128, 1, 4, 1, 2, 4};
inline constexpr Tile kTile32{32, 128, 1, 4, 2, 2, 4};
inline constexpr Tile kTile64{64, 64, 1, 4, 4, 2, 4};
inline constexpr Tile kTile128{128, 32, 2, 4, 4, 4, 4};

// Rows per block for N routed slots over E experts: the smallest tile that holds the
// average expert's slots with room to spare (decode: one block per expert, so each
// expert's weights are streamed once), 128 for prefill.
FK_HD constexpr int choose_block_rows(int64_t slots, int64_t experts) {
  const int64_t used = slots < experts ? slots : experts;
  const int64_t avg = used > 0 ? (slots + used - 1) / used : 0;
  return avg <= 12 ? 16 : avg <= 24 ? 32 : avg <= 48 ? 64 : 128;
}

// ---- B tile rows ----------------------------------------------------------------------
// Shared-memory row of the first row of a warp's n8 tile j.
FK_HD constexpr int b_tile_row(Kind kind, const Tile& t, int warp_n, int j) {
  if (kind == Kind::down) return (warp_n * t.nt + j) * 8;
  const int half_tiles = t.nt / 2;
  const int base = (warp_n * half_tiles + j % half_tiles) * 8;
  return j < half_tiles ? base : t.bn_rows() / 2 + base;
}

// Weight row (within expert e's matrix) copied into shared row r by CTA column tile
// n_tile, or -1 past the end (the row is zero-filled). n_size: I (gate_up) or H (down).
FK_HD constexpr int64_t b_weight_row(Kind kind, const Tile& t, int n_tile, int r, int64_t n_size) {
  if (kind == Kind::down) {
    const int64_t n = static_cast<int64_t>(n_tile) * t.bn_rows() + r;
    return n < n_size ? n : -1;
  }
  const int half = t.bn_rows() / 2;
  const int64_t col = static_cast<int64_t>(n_tile) * half + (r < half ? r : r - half);
  if (col >= n_size) return -1;
  return r < half ? col : n_size + col;
}

// First output column held by `lane` in the warp's output n8 tile j (j < nt for down,
// j < nt/2 for gate_up); the lane holds that column and the next.
FK_HD constexpr int64_t out_col(Kind kind, const Tile& t, int n_tile, int warp_n, int j, int lane) {
  const int tiles = kind == Kind::down ? t.nt : t.nt / 2;
  return static_cast<int64_t>(n_tile) * t.out_cols(kind) + (warp_n * tiles + j) * 8 + 2 * (lane & 3);
}

// ---- fragments (PTX mma.m16n8k16 / ldmatrix layouts) -----------------------------------
// Row within an m16 tile and column within an n8 tile / k8 half of the first element a
// lane holds in an accumulator (rows g and g + 8, columns c and c + 1).
FK_HD constexpr int frag_row(int lane) { return lane >> 2; }
FK_HD constexpr int frag_col(int lane) { return 2 * (lane & 3); }

// ldmatrix.x4 of an A fragment (m16 x k16): the tile row and k column whose 16 bytes
// `lane` addresses. Registers come back as a0 (rows 0-7, k 0-7), a1 (rows 8-15, k 0-7),
// a2 (rows 0-7, k 8-15), a3 (rows 8-15, k 8-15).
FK_HD constexpr int a_ldm_row(int tile_row0, int lane) { return tile_row0 + (lane & 7) + ((lane >> 3) & 1) * 8; }
FK_HD constexpr int a_ldm_col(int ks, int lane) { return ks * 16 + (lane >> 4) * 8; }

// ldmatrix.x4 of two B fragments (n8 x k16 each, rows of the [n][k] tile): registers come
// back as b0, b1 of the tile at row0 and b0, b1 of the tile at row1.
FK_HD constexpr int b_ldm_row(int row0, int row1, int lane) { return ((lane >> 4) ? row1 : row0) + (lane & 7); }
FK_HD constexpr int b_ldm_col(int ks, int lane) { return ks * 16 + ((lane >> 3) & 1) * 8; }

// ---- fp8 block scales --------------------------------------------------------------------
inline constexpr int kScaleBlock = 128;
// Index of the scale of weight element (row, col) of expert e in [E, rows_blocks, cols_blocks].
FK_HD constexpr int64_t scale_index(int64_t e, int64_t row, int64_t col, int64_t rows, int64_t cols) {
  const int64_t rb = (rows + kScaleBlock - 1) / kScaleBlock, cb = (cols + kScaleBlock - 1) / kScaleBlock;
  return (e * rb + row / kScaleBlock) * cb + col / kScaleBlock;
}

}  // namespace fk::ops::moe_gemm
