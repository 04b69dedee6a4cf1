// The text model's M-RoPE positions of a Qwen3-VL prompt (transformers' get_rope_index for
// one sequence of images and text): text tokens count up on all three rows; an image's
// tokens (t x h/merge x w/merge placeholders, image_token_id) take (st + t_i, st + h_i,
// st + w_i) from st = the position after the text before them; the text after an image
// continues from the largest position so far plus one. `delta` is max position + 1 - tokens
// (what decode steps add to their token index: rope_deltas).
#pragma once
#include <cstdint>
#include <vector>

#include "models/vlm/qwen3_vl/vision_layout.h"

namespace fk::models::vlm {

struct MropePositions {
  std::vector<int64_t> positions;  // [3, tokens], row-major (t row, h row, w row)
  int64_t delta = 0;
};

// `grids` are the images' patch grids in prompt order. Throws naming the mismatch: fewer or
// more image-token runs than images, or a run whose length is not its grid's merged size.
MropePositions qwen3_vl_rope_index(const std::vector<int64_t>& input_ids, const std::vector<PatchGrid>& grids,
                                   int64_t image_token_id, int64_t spatial_merge_size);

}  // namespace fk::models::vlm
