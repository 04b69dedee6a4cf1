#include "models/vlm/qwen3_vl/rope_index.h"

#include <algorithm>

#include "fk/status.h"

namespace fk::models::vlm {

MropePositions qwen3_vl_rope_index(const std::vector<int64_t>& ids, const std::vector<PatchGrid>& grids,
                                   int64_t image_token_id, int64_t merge) {
  FK_CHECK(merge >= 1, "qwen3_vl rope index: spatial_merge_size must be positive, got ", merge);
  const int64_t T = static_cast<int64_t>(ids.size());
  MropePositions out;
  out.positions.assign(static_cast<size_t>(3 * T), 0);
  auto put = [&](int64_t tok, int64_t t, int64_t h, int64_t w) {
    out.positions[static_cast<size_t>(tok)] = t;
    out.positions[static_cast<size_t>(T + tok)] = h;
    out.positions[static_cast<size_t>(2 * T + tok)] = w;
  };
  int64_t next = 0;  // the position the next text token takes
  int64_t i = 0;
  size_t image = 0;
  while (i < T) {
    if (ids[static_cast<size_t>(i)] != image_token_id) {
      put(i, next, next, next);
      ++next, ++i;
      continue;
    }
    FK_CHECK(image < grids.size(), "qwen3_vl rope index: the prompt has more image-token runs than the ", grids.size(),
             " images given (a run starts at token ", i, ")");
    const PatchGrid& g = grids[image];
    FK_CHECK(g.t >= 1 && g.h % merge == 0 && g.w % merge == 0 && g.h > 0 && g.w > 0, "qwen3_vl rope index: image ",
             image, " grid (t ", g.t, ", h ", g.h, ", w ", g.w, ") is not a multiple of spatial_merge_size ", merge);
    const int64_t gh = g.h / merge, gw = g.w / merge, n = g.t * gh * gw;
    int64_t run = 0;
    while (i + run < T && ids[static_cast<size_t>(i + run)] == image_token_id) ++run;
    FK_CHECK(run == n, "qwen3_vl rope index: image ", image, " has ", run, " image tokens at token ", i,
             ", but its grid (t ", g.t, ", h ", g.h, ", w ", g.w, ") merges to ", n);
    int64_t largest = next - 1;
    for (int64_t f = 0; f < g.t; ++f)
      for (int64_t r = 0; r < gh; ++r)
        for (int64_t c = 0; c < gw; ++c) {
          put(i + (f * gh + r) * gw + c, next + f, next + r, next + c);
          largest = std::max({largest, next + f, next + r, next + c});
        }
    next = largest + 1;
    i += n;
    ++image;
  }
  FK_CHECK(image == grids.size(), "qwen3_vl rope index: ", grids.size(), " images given but the prompt has ", image,
           " image-token runs");
  out.delta = next - T;
  return out;
}

}  // namespace fk::models::vlm
