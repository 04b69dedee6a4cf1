// The fused-experts grouped GEMM's index math (ops/moe/moe_gemm_layout.h) replayed on the
// CPU: one CTA's 16-byte copies into padded shared-memory tiles, ldmatrix and mma.sync
// m16n8k16 modelled after their PTX fragment layouts, the fp8 dequantisation and the two
// epilogues, for every tile configuration of the CUDA baseline (moe_gemm.cuh follows the
// same steps). The result must equal a plain double-precision GEMM on every row and
// column the CTAs own, and nothing else may be written.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "fk/dtype_convert.h"
#include "fk/ops/moe.h"
#include "fk/philox.h"
#include "ops/moe/moe_gemm_layout.h"
#include "ops/moe/moe_workspace.h"

namespace fk::ops::moe_gemm {
namespace {

constexpr uint16_t kPoison = 0xFFFF;  // a bf16 NaN

struct Problem {
  Tile t;
  Kind kind;
  bool fp8;
  int64_t E = 3, e = 1, K, n_size, w_rows, top_k = 2, num_slots, lda;
  int m_block = 1;
  std::vector<uint16_t> a;       // [rows][lda] bf16: hidden (gate_up) or intermediate (down)
  std::vector<uint8_t> w;        // [E][w_rows][K], 2 bytes (bf16) or 1 byte (fp8) an element
  std::vector<float> scale;      // fp8: [E][ceil(w_rows/128)][ceil(K/128)]
  std::vector<int32_t> sorted;   // [2 * bm]: block m_block is the second
  std::vector<float> topk_weights;
  std::vector<uint16_t> c;       // output, poisoned
};

float bf(uint16_t x) { return bf16_to_float(x); }
uint32_t pack(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16; }
uint16_t lo16(uint32_t r) { return static_cast<uint16_t>(r & 0xFFFF); }
uint16_t hi16(uint32_t r) { return static_cast<uint16_t>(r >> 16); }

double weight(const Problem& p, int64_t row, int64_t k) {
  const int64_t i = (p.e * p.w_rows + row) * p.K + k;
  if (!p.fp8) {
    uint16_t v;
    std::memcpy(&v, &p.w[static_cast<size_t>(2 * i)], 2);
    return bf(v);
  }
  // [E][ceil(w_rows / 128)][ceil(K / 128)], indexed here without the kernel's helper.
  const int64_t row_blocks = (p.w_rows + 127) / 128, col_blocks = (p.K + 127) / 128;
  return f8e4m3fn_to_double(p.w[static_cast<size_t>(i)]) *
         p.scale[static_cast<size_t>((p.e * row_blocks + row / 128) * col_blocks + k / 128)];
}

Problem make_problem(const Tile& t, Kind kind, bool fp8, uint64_t seed) {
  Problem p;
  p.t = t;
  p.kind = kind;
  p.fp8 = fp8;
  // Sizes off every tile multiple (k tails, partial column tiles); fp8 needs multiples of
  // 16 and crosses 128-row scale blocks (2I = 160, H = 144).
  if (kind == Kind::gate_up) {
    p.K = fp8 ? 208 : 200;
    p.n_size = fp8 ? 80 : 40;
    p.w_rows = 2 * p.n_size;
  } else {
    p.K = fp8 ? 144 : 136;
    p.n_size = fp8 ? 144 : 72;
    p.w_rows = p.n_size;
  }
  p.num_slots = 5 * t.bm;
  const int64_t tokens = p.num_slots / p.top_k;
  p.lda = kind == Kind::gate_up ? p.K + 8 : p.K;  // hidden rows with a padded stride
  const int64_t a_rows = kind == Kind::gate_up ? tokens : 2 * t.bm;
  p.a.resize(static_cast<size_t>(a_rows * p.lda));
  for (size_t i = 0; i < p.a.size(); ++i) p.a[i] = double_to_bf16(philox_uniform(seed, 1, i) * 2.0 - 1.0);
  const int64_t wn = p.E * p.w_rows * p.K;
  p.w.resize(static_cast<size_t>(wn * (fp8 ? 1 : 2)));
  for (int64_t i = 0; i < wn; ++i) {
    const double u = philox_uniform(seed, 2, static_cast<uint64_t>(i)) * 2.0 - 1.0;
    if (fp8) {
      p.w[static_cast<size_t>(i)] = double_to_f8e4m3fn(4.0 * u);
    } else {
      const uint16_t v = double_to_bf16(u / std::sqrt(static_cast<double>(p.K)));
      std::memcpy(&p.w[static_cast<size_t>(2 * i)], &v, 2);
    }
  }
  if (fp8) {
    const int64_t n = p.E * ((p.w_rows + 127) / 128) * ((p.K + 127) / 128);
    for (int64_t i = 0; i < n; ++i)
      p.scale.push_back(static_cast<float>((0.5 + philox_uniform(seed, 3, static_cast<uint64_t>(i))) / std::sqrt(static_cast<double>(p.K)) / 4.0));
  }
  // Block 1 holds distinct slots with sentinels among them (not only at the end).
  p.sorted.assign(static_cast<size_t>(2 * t.bm), static_cast<int32_t>(p.num_slots));
  for (int r = 0; r < t.bm; ++r)
    if (r % 4 != 3) p.sorted[static_cast<size_t>(t.bm + r)] = static_cast<int32_t>((7 * r + 3) % p.num_slots);
  for (int64_t s = 0; s < p.num_slots; ++s) p.topk_weights.push_back(static_cast<float>(0.25 + 0.01 * static_cast<double>(s % 50)));
  const int64_t c_rows = kind == Kind::gate_up ? 2 * t.bm : p.num_slots;
  p.c.assign(static_cast<size_t>(c_rows * p.n_size), kPoison);
  return p;
}

// ldmatrix.x4: lane l addresses row l % 8 of matrix l / 8; register j of lane l gets
// elements 2 (l % 4) and 2 (l % 4) + 1 of row l / 4 of matrix j.
void ldmatrix_x4(const std::vector<uint8_t>& smem, const int64_t (&addr)[32], uint32_t (&out)[32][4]) {
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      const int64_t base = addr[8 * j + l / 4] + 4 * (l % 4);
      uint16_t x, y;
      std::memcpy(&x, &smem[static_cast<size_t>(base)], 2);
      std::memcpy(&y, &smem[static_cast<size_t>(base + 2)], 2);
      out[l][j] = pack(x, y);
    }
}

// mma.sync m16n8k16 row.col, fp32 accumulate, from the PTX fragment layouts.
void mma(float (&acc)[32][4], const uint32_t (&a)[32][4], const uint32_t (&b)[32][2]) {
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = 2 * (l % 4);
    A[g][q] = bf(lo16(a[l][0]));
    A[g][q + 1] = bf(hi16(a[l][0]));
    A[g + 8][q] = bf(lo16(a[l][1]));
    A[g + 8][q + 1] = bf(hi16(a[l][1]));
    A[g][q + 8] = bf(lo16(a[l][2]));
    A[g][q + 9] = bf(hi16(a[l][2]));
    A[g + 8][q + 8] = bf(lo16(a[l][3]));
    A[g + 8][q + 9] = bf(hi16(a[l][3]));
    B[q][g] = bf(lo16(b[l][0]));
    B[q + 1][g] = bf(hi16(b[l][0]));
    B[q + 8][g] = bf(lo16(b[l][1]));
    B[q + 9][g] = bf(hi16(b[l][1]));
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = 2 * (l % 4);
    for (int h = 0; h < 2; ++h)
      for (int cc = 0; cc < 2; ++cc) {
        float d = 0;
        for (int k = 0; k < 16; ++k) d += A[g + 8 * h][k] * B[k][q + cc];
        acc[l][2 * h + cc] += d;
      }
  }
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// One CTA, step by step as moe_gemm_kernel does it.
void run_cta(Problem& p, int n_tile) {
  const Tile& t = p.t;
  const int wb = p.fp8 ? 1 : 2, threads = t.threads();
  const int a_cpr = t.a_chunks_per_row(), b_cpr = t.b_chunks_per_row(wb);
  const int a_chunks = t.bm * a_cpr / threads, b_chunks = t.bn_rows() * b_cpr / threads;
  ASSERT_EQ(t.bm * a_cpr % threads, 0);
  ASSERT_EQ(t.bn_rows() * b_cpr % threads, 0);
  const int64_t N = p.num_slots;
  std::vector<int32_t> slot(p.sorted.begin() + p.m_block * t.bm, p.sorted.begin() + (p.m_block + 1) * t.bm);
  std::vector<uint8_t> as(static_cast<size_t>(t.a_stage_bytes())), bs(static_cast<size_t>(t.b_stage_bytes(wb)));
  const int warps = t.warps_m * t.warps_n;
  std::vector<float> acc_store(static_cast<size_t>(warps * t.mt * t.nt * 32 * 4), 0.f);
  auto acc = [&](int w, int i, int j) -> float(&)[32][4] {
    return *reinterpret_cast<float(*)[32][4]>(&acc_store[static_cast<size_t>(((w * t.mt + i) * t.nt + j) * 128)]);
  };
  const int KT = static_cast<int>((p.K + t.bk - 1) / t.bk);
  for (int kt = 0; kt < KT; ++kt) {
    const int64_t k0 = static_cast<int64_t>(kt) * t.bk;
    std::fill(as.begin(), as.end(), 0xAB);  // padding bytes must never be read as data
    std::fill(bs.begin(), bs.end(), 0xAB);
    for (int tid = 0; tid < threads; ++tid) {
      for (int i = 0; i < a_chunks; ++i) {
        const int c = tid + i * threads, row = c / a_cpr, ch = c % a_cpr;
        const int s = slot[static_cast<size_t>(row)];
        const int64_t k = k0 + ch * 8;
        const bool ok = s < N && k < p.K;
        const int64_t a_row = p.kind == Kind::gate_up ? s / p.top_k : static_cast<int64_t>(p.m_block) * t.bm + row;
        uint8_t* dst = &as[static_cast<size_t>(row * t.a_row_bytes() + ch * 16)];
        if (ok) std::memcpy(dst, &p.a[static_cast<size_t>(a_row * p.lda + k)], 16);
        else std::memset(dst, 0, 16);
      }
      for (int i = 0; i < b_chunks; ++i) {
        const int c = tid + i * threads, row = c / b_cpr, ch = c % b_cpr;
        const int64_t w_row = b_weight_row(p.kind, t, n_tile, row, p.n_size);
        const int64_t k = k0 + ch * (16 / wb);
        const bool ok = w_row >= 0 && k < p.K;
        uint8_t* dst = &bs[static_cast<size_t>(row * t.b_row_bytes(wb) + ch * 16)];
        if (ok) std::memcpy(dst, &p.w[static_cast<size_t>(((p.e * p.w_rows + w_row) * p.K + k) * wb)], 16);
        else std::memset(dst, 0, 16);
      }
    }
    for (int w = 0; w < warps; ++w) {
      const int wm = w / t.warps_n, wn = w % t.warps_n;
      for (int ks = 0; ks < t.bk / 16; ++ks) {
        std::vector<std::array<std::array<uint32_t, 4>, 32>> af(static_cast<size_t>(t.mt));
        for (int i = 0; i < t.mt; ++i) {
          int64_t addr[32];
          for (int l = 0; l < 32; ++l)
            addr[l] = a_ldm_row((wm * t.mt + i) * 16, l) * t.a_row_bytes() + a_ldm_col(ks, l) * 2;
          uint32_t r[32][4];
          ldmatrix_x4(as, addr, r);
          for (int l = 0; l < 32; ++l)
            for (int q = 0; q < 4; ++q) af[static_cast<size_t>(i)][static_cast<size_t>(l)][static_cast<size_t>(q)] = r[l][q];
        }
        std::vector<std::array<std::array<uint32_t, 2>, 32>> bfr(static_cast<size_t>(t.nt));
        if (!p.fp8) {
          for (int j = 0; j < t.nt; j += 2) {
            int64_t addr[32];
            for (int l = 0; l < 32; ++l)
              addr[l] = b_ldm_row(b_tile_row(p.kind, t, wn, j), b_tile_row(p.kind, t, wn, j + 1), l) * t.b_row_bytes(wb) +
                        b_ldm_col(ks, l) * 2;
            uint32_t r[32][4];
            ldmatrix_x4(bs, addr, r);
            for (int l = 0; l < 32; ++l) {
              bfr[static_cast<size_t>(j)][static_cast<size_t>(l)] = {r[l][0], r[l][1]};
              bfr[static_cast<size_t>(j + 1)][static_cast<size_t>(l)] = {r[l][2], r[l][3]};
            }
          }
        } else {
          for (int j = 0; j < t.nt; ++j)
            for (int l = 0; l < 32; ++l) {
              const int n = b_tile_row(p.kind, t, wn, j) + frag_row(l);
              const int k = ks * 16 + frag_col(l);
              const int64_t w_row = b_weight_row(p.kind, t, n_tile, n, p.n_size);
              const double sc =
                  w_row < 0 ? 0.0 : p.scale[static_cast<size_t>(scale_index(p.e, w_row, k0, p.w_rows, p.K))];
              auto deq = [&](int kk) {
                const uint8_t* q = &bs[static_cast<size_t>(n * t.b_row_bytes(wb) + kk)];
                return pack(float_to_bf16(f8e4m3fn_to_float(q[0]) * static_cast<float>(sc)),
                            float_to_bf16(f8e4m3fn_to_float(q[1]) * static_cast<float>(sc)));
              };
              bfr[static_cast<size_t>(j)][static_cast<size_t>(l)] = {deq(k), deq(k + 8)};
            }
        }
        for (int i = 0; i < t.mt; ++i)
          for (int j = 0; j < t.nt; ++j) {
            uint32_t a[32][4], b[32][2];
            for (int l = 0; l < 32; ++l) {
              for (int q = 0; q < 4; ++q) a[l][q] = af[static_cast<size_t>(i)][static_cast<size_t>(l)][static_cast<size_t>(q)];
              for (int q = 0; q < 2; ++q) b[l][q] = bfr[static_cast<size_t>(j)][static_cast<size_t>(l)][static_cast<size_t>(q)];
            }
            mma(acc(w, i, j), a, b);
          }
      }
    }
  }
  // Epilogue.
  for (int w = 0; w < warps; ++w) {
    const int wm = w / t.warps_n, wn = w % t.warps_n;
    for (int i = 0; i < t.mt; ++i)
      for (int half = 0; half < 2; ++half)
        for (int l = 0; l < 32; ++l) {
          const int r = (wm * t.mt + i) * 16 + frag_row(l) + 8 * half;
          const int s = slot[static_cast<size_t>(r)];
          if (s >= N) continue;
          if (p.kind == Kind::gate_up) {
            const int64_t pos = static_cast<int64_t>(p.m_block) * t.bm + r;
            for (int j = 0; j < t.nt / 2; ++j) {
              const int64_t col = out_col(p.kind, t, n_tile, wn, j, l);
              if (col >= p.n_size) continue;
              for (int cc = 0; cc < 2; ++cc) {
                const float g = acc(w, i, j)[l][2 * half + cc], u = acc(w, i, j + t.nt / 2)[l][2 * half + cc];
                p.c[static_cast<size_t>(pos * p.n_size + col + cc)] = float_to_bf16(static_cast<float>(silu(g) * u));
              }
            }
          } else {
            for (int j = 0; j < t.nt; ++j) {
              const int64_t col = out_col(p.kind, t, n_tile, wn, j, l);
              if (col >= p.n_size) continue;
              for (int cc = 0; cc < 2; ++cc)
                p.c[static_cast<size_t>(s * p.n_size + col + cc)] =
                    float_to_bf16(acc(w, i, j)[l][2 * half + cc] * p.topk_weights[static_cast<size_t>(s)]);
            }
          }
        }
  }
}

void check_tile(const Tile& t, Kind kind, bool fp8) {
  SCOPED_TRACE(testing::Message() << "bm " << t.bm << (kind == Kind::gate_up ? " gate_up" : " down")
                                  << (fp8 ? " fp8" : " bf16"));
  Problem p = make_problem(t, kind, fp8, 1234 + t.bm);
  const int64_t tiles = (p.n_size + t.out_cols(kind) - 1) / t.out_cols(kind);
  for (int n = 0; n < tiles; ++n) run_cta(p, n);
  if (testing::Test::HasFatalFailure()) return;
  double worst = 0;
  int64_t written = 0;
  const int64_t N = p.num_slots;
  for (int r = 0; r < t.bm; ++r) {
    const int s = p.sorted[static_cast<size_t>(p.m_block * t.bm + r)];
    if (s >= N) continue;
    for (int64_t col = 0; col < p.n_size; ++col) {
      double want;
      size_t at;
      if (kind == Kind::gate_up) {
        const int64_t token = s / p.top_k;
        double g = 0, u = 0;
        for (int64_t k = 0; k < p.K; ++k) {
          const double x = bf(p.a[static_cast<size_t>(token * p.lda + k)]);
          g += x * weight(p, col, k);
          u += x * weight(p, p.n_size + col, k);
        }
        want = silu(g) * u;
        at = static_cast<size_t>((p.m_block * t.bm + r) * p.n_size + col);
      } else {
        const int64_t row = p.m_block * t.bm + r;
        double d = 0;
        for (int64_t k = 0; k < p.K; ++k) d += bf(p.a[static_cast<size_t>(row * p.lda + k)]) * weight(p, col, k);
        want = d * p.topk_weights[static_cast<size_t>(s)];
        at = static_cast<size_t>(s * p.n_size + col);
      }
      ASSERT_NE(p.c[at], kPoison) << "row " << r << " (slot " << s << ") column " << col << " was not written";
      const double got = bf(p.c[at]);
      // bf16 output rounding plus (fp8) the bf16 rounding of the dequantised weights.
      const double tol = 0.01 * std::fabs(want) + (fp8 ? 0.02 : 0.005);
      EXPECT_NEAR(got, want, tol) << "row " << r << " (slot " << s << ") column " << col;
      worst = std::max(worst, std::fabs(got - want));
      ++written;
      p.c[at] = kPoison;  // consumed: whatever is left must be poison
    }
  }
  EXPECT_GT(written, 0);
  for (size_t i = 0; i < p.c.size(); ++i) ASSERT_EQ(p.c[i], kPoison) << "element " << i << " written outside the tile";
}

TEST(MoeGemmLayout, EveryTileConfigurationComputesTheGroupedGemm) {
  for (const Tile& t : {kTile16, kTile32, kTile64, kTile128})
    for (Kind kind : {Kind::gate_up, Kind::down})
      for (bool fp8 : {false, true}) check_tile(t, kind, fp8);
}

TEST(MoeGemmLayout, TilesFitTheHardware) {
  for (const Tile& t : {kTile16, kTile32, kTile64, kTile128}) {
    EXPECT_EQ(t.bm, t.warps_m * t.mt * 16);
    EXPECT_EQ(t.nt % 2, 0);
    EXPECT_EQ(kScaleBlock % t.bk, 0);
    for (int wb : {1, 2}) {
      EXPECT_LE(t.smem_bytes(wb), 227 * 1024) << t.bm;
      EXPECT_EQ(t.a_row_bytes() % 16, 0);
      EXPECT_EQ(t.b_row_bytes(wb) % 16, 0);
      // 8 consecutive rows of an ldmatrix fall in 8 distinct 16-byte bank groups.
      for (int row_bytes : {t.a_row_bytes(), t.b_row_bytes(wb)}) {
        std::vector<int> seen;
        for (int r = 0; r < 8; ++r) seen.push_back((r * row_bytes / 16) % 8);
        std::sort(seen.begin(), seen.end());
        EXPECT_EQ(std::unique(seen.begin(), seen.end()) - seen.begin(), 8) << "row bytes " << row_bytes;
      }
    }
  }
}

TEST(MoeGemmLayout, BlockRowsFollowTheSlotsPerExpert) {
  EXPECT_EQ(choose_block_rows(8, 128), 16);      // Qwen3-30B-A3B, batch 1
  EXPECT_EQ(choose_block_rows(512, 128), 16);    // batch 64: 4 slots an expert
  EXPECT_EQ(choose_block_rows(2048, 128), 32);   // batch 256: 16 an expert
  EXPECT_EQ(choose_block_rows(65536, 128), 128); // prefill 8192
  EXPECT_EQ(choose_block_rows(128, 8), 32);      // Mixtral batch 64
  EXPECT_EQ(choose_block_rows(0, 8), 16);
}

TEST(MoeWorkspace, RegionsFitTheDeclaredSize) {
  const int64_t shapes[][5] = {{1, 8, 128, 2048, 768}, {64, 8, 128, 2048, 768}, {8192, 8, 128, 2048, 768},
                               {3, 2, 8, 64, 40},      {0, 2, 8, 64, 32},       {4096, 2, 8, 4096, 14336}};
  for (const auto& s : shapes) {
    const int64_t bytes = fused_experts_workspace_bytes(s[0], s[1], s[2], s[3], s[4]);
    for (uintptr_t misalign : {0u, 4u, 200u}) {
      const MoeWorkspace w = carve_moe_workspace(reinterpret_cast<void*>(0x100000 + misalign), s[0], s[1], s[2], s[3], s[4]);
      EXPECT_LE(w.end, bytes) << s[0];
      EXPECT_EQ(reinterpret_cast<uintptr_t>(w.sorted_ids) % 256, 0u);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(w.intermediate) % 256, 0u);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(w.y) % 256, 0u);
      const int64_t slots = s[0] * s[1];
      EXPECT_GE(reinterpret_cast<char*>(w.expert_ids) - reinterpret_cast<char*>(w.sorted_ids),
                4 * moe_align_max_padded(slots, s[2], 128));
      const int64_t padded = moe_align_max_padded(slots, s[2], 128);
      // The grouped prefill path: gate | up rows [padded, 2I], sorted hidden rows / expert
      // outputs [padded, H], the slots' sorted positions, then its GEMM scratch.
      EXPECT_GE(reinterpret_cast<char*>(w.y) - reinterpret_cast<char*>(w.intermediate), 2 * padded * 2 * s[4]);
      EXPECT_GE(reinterpret_cast<char*>(w.slot_rows) - reinterpret_cast<char*>(w.y), 2 * padded * s[3]);
      EXPECT_GE(reinterpret_cast<char*>(w.grouped_scratch) - reinterpret_cast<char*>(w.slot_rows), 4 * slots);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(w.grouped_scratch) % 256, 0u);
      EXPECT_GE(0x100000 + static_cast<int64_t>(misalign) + w.end -
                    static_cast<int64_t>(reinterpret_cast<uintptr_t>(w.grouped_scratch)),
                fused_experts_grouped_scratch_bytes(s[2]));
    }
  }
}

}  // namespace
}  // namespace fk::ops::moe_gemm
