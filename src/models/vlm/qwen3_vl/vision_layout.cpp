#include "models/vlm/qwen3_vl/vision_layout.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::models::vlm {
namespace {

// torch.linspace(0, end, steps) in float32, as the upstream interpolation computes it (the
// first half counted up from 0, the second down from end), so that floors and fractions
// land where upstream's do.
std::vector<float> linspace(double end, int64_t steps) {
  std::vector<float> v(static_cast<size_t>(steps));
  if (steps == 1) {
    v[0] = 0.f;
    return v;
  }
  const float step = static_cast<float>(end / static_cast<double>(steps - 1));
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    v[static_cast<size_t>(i)] = i < half ? static_cast<float>(i) * step
                                         : static_cast<float>(end) - static_cast<float>(steps - 1 - i) * step;
  return v;
}

// cos or sin (f32, of the double angle) of positions [0, n) times each inverse frequency:
// [n][quarter], the rows of one rotary axis.
template <class Fn>
std::vector<float> axis_table(int64_t n, const std::vector<double>& inv_freq, Fn fn) {
  std::vector<float> t;
  t.reserve(static_cast<size_t>(n) * inv_freq.size());
  for (int64_t p = 0; p < n; ++p)
    for (double f : inv_freq) t.push_back(static_cast<float>(fn(static_cast<double>(p) * f)));
  return t;
}

}  // namespace

int64_t check_qwen3_vl_grids(const Qwen3VLVisionConfig& c, const std::vector<PatchGrid>& grids) {
  const int64_t m = c.spatial_merge_size;
  int64_t patches = 0;
  for (size_t g = 0; g < grids.size(); ++g) {
    const PatchGrid& grid = grids[g];
    FK_CHECK(grid.t >= 1 && grid.h >= 1 && grid.w >= 1, "qwen3_vl vision: grid ", g, " (t ", grid.t, ", h ", grid.h,
             ", w ", grid.w, ") must have at least one frame, row and column");
    FK_CHECK(grid.h % m == 0 && grid.w % m == 0, "qwen3_vl vision: grid ", g, " (h ", grid.h, ", w ", grid.w,
             ") is not a multiple of spatial_merge_size ", m, " in both directions");
    patches += grid.patches();
  }
  return patches;
}

VisionLayout qwen3_vl_vision_layout(const Qwen3VLVisionConfig& c, const std::vector<PatchGrid>& grids) {
  const int64_t m = c.spatial_merge_size, side = c.grid_side(), D = c.head_dim(), quarter = D / 4;
  VisionLayout L;
  L.patches = check_qwen3_vl_grids(c, grids);
  L.cu_seqlens.push_back(0);
  for (const PatchGrid& grid : grids)
    for (int64_t f = 0; f < grid.t; ++f) {
      L.cu_seqlens.push_back(L.cu_seqlens.back() + static_cast<int32_t>(grid.h * grid.w));
      L.max_seqlen = std::max(L.max_seqlen, static_cast<int32_t>(grid.h * grid.w));
    }
  FK_CHECK(L.patches % c.merge_unit() == 0, "qwen3_vl vision: internal: patches not a multiple of the merge unit");
  L.merged_tokens = L.patches / c.merge_unit();

  // inv_freq of the rotary embedding of dim D/2: theta^(-2k / (D/2)), k < D/4.
  std::vector<double> inv_freq(static_cast<size_t>(quarter));
  for (int64_t k = 0; k < quarter; ++k)
    inv_freq[static_cast<size_t>(k)] =
        static_cast<double>(1.0f / static_cast<float>(std::pow(c.rope_theta, 2.0 * k / (D / 2.0))));

  L.rope_cos_sin.reserve(static_cast<size_t>(L.patches * D));
  L.pos_ids.reserve(static_cast<size_t>(L.patches * 4));
  L.pos_weights.reserve(static_cast<size_t>(L.patches * 4));
  const auto q = static_cast<size_t>(quarter);
  for (const PatchGrid& grid : grids) {
    const std::vector<float> hs = linspace(static_cast<double>(side - 1), grid.h);
    const std::vector<float> ws = linspace(static_cast<double>(side - 1), grid.w);
    // A patch's angles are its row's then its column's (r * inv_freq, col * inv_freq): the
    // cos and sin of each axis position once, not once per patch.
    const auto cos = [](double a) { return std::cos(a); };
    const auto sin = [](double a) { return std::sin(a); };
    const std::vector<float> row_cos = axis_table(grid.h, inv_freq, cos), row_sin = axis_table(grid.h, inv_freq, sin);
    const std::vector<float> col_cos = axis_table(grid.w, inv_freq, cos), col_sin = axis_table(grid.w, inv_freq, sin);
    auto append = [&](const std::vector<float>& table, int64_t p) {
      const auto first = table.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(p) * q);
      L.rope_cos_sin.insert(L.rope_cos_sin.end(), first, first + static_cast<std::ptrdiff_t>(q));
    };
    for (int64_t f = 0; f < grid.t; ++f)
      for (int64_t br = 0; br < grid.h / m; ++br)
        for (int64_t bc = 0; bc < grid.w / m; ++bc)
          for (int64_t ir = 0; ir < m; ++ir)
            for (int64_t ic = 0; ic < m; ++ic) {
              const int64_t r = br * m + ir, col = bc * m + ic;
              L.row.push_back(r);
              L.col.push_back(col);
              // Rope: cos of the D/2 pairs (row's, column's) then their sin.
              append(row_cos, r), append(col_cos, col), append(row_sin, r), append(col_sin, col);
              // Bilinear taps of the position grid.
              const float hy = hs[static_cast<size_t>(r)], wx = ws[static_cast<size_t>(col)];
              const int64_t h0 = static_cast<int64_t>(hy), w0 = static_cast<int64_t>(wx);
              const int64_t h1 = std::min(h0 + 1, side - 1), w1 = std::min(w0 + 1, side - 1);
              const float dh = hy - static_cast<float>(h0), dw = wx - static_cast<float>(w0);
              for (int64_t id : {h0 * side + w0, h0 * side + w1, h1 * side + w0, h1 * side + w1})
                L.pos_ids.push_back(static_cast<int32_t>(id));
              L.pos_weights.push_back((1 - dh) * (1 - dw));
              L.pos_weights.push_back((1 - dh) * dw);
              L.pos_weights.push_back(dh * (1 - dw));
              L.pos_weights.push_back(dh * dw);
            }
  }
  L.rope_positions.resize(static_cast<size_t>(L.patches));
  for (int64_t i = 0; i < L.patches; ++i) L.rope_positions[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return L;
}

}  // namespace fk::models::vlm
