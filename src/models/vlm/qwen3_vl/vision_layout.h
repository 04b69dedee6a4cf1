// Host-side geometry of a Qwen3-VL vision step, computed from the images' patch grids
// (image_grid_thw) as transformers' Qwen3VLVisionModel does before its blocks run:
//
// - Patch order. The processor lays out each image's patches frame by frame, and within a
//   frame by spatial_merge_size x spatial_merge_size blocks (block row, block column, then
//   row and column inside the block), so that each merged token's patches are consecutive.
//   Every per-patch table below follows that order.
// - 2D rope. With D the head dim, frequency k in [0, D/4) is theta^(-4k/D) (the rotary
//   embedding of dim D/2); pair i in [0, D/2) of rotate-half rope turns by row * f(i) for
//   i < D/4 and by column * f(i - D/4) after. `rope_cos_sin` holds one row per patch in
//   rotary_embedding's cache layout (cos of the D/2 pairs, then their sin), so the rope op
//   runs with positions 0..N-1 (`rope_positions`).
// - Position embedding. The learned side x side grid is sampled bilinearly at
//   linspace(0, side - 1, h) x linspace(0, side - 1, w) (fast_pos_embed_interpolate): four
//   grid rows and weights per patch for weighted_embedding_add; frames repeat the image's.
// - Attention. Each frame attends within itself: cu_seqlens over frames.
#pragma once
#include <cstdint>
#include <vector>

#include "models/vlm/qwen3_vl/vision_config.h"

namespace fk::models::vlm {

// One image or video's patch grid: frames (temporal patches), rows and columns of patches.
struct PatchGrid {
  int64_t t = 1, h = 0, w = 0;
  int64_t patches() const { return t * h * w; }
};

struct VisionLayout {
  int64_t patches = 0;
  int64_t merged_tokens = 0;          // patches / merge_unit
  std::vector<int32_t> cu_seqlens;    // [frames + 1]
  int32_t max_seqlen = 0;
  std::vector<int32_t> rope_positions;  // [patches]: 0..N-1
  std::vector<float> rope_cos_sin;      // [patches, head_dim]
  std::vector<int32_t> pos_ids;         // [patches, 4]: grid rows (floor/floor, floor/ceil, ceil/floor, ceil/ceil)
  std::vector<float> pos_weights;       // [patches, 4]
  std::vector<int64_t> row, col;        // [patches]: each patch's row and column in its frame
};

// Throws naming the grid that the config cannot take (not a multiple of the merge size).
VisionLayout qwen3_vl_vision_layout(const Qwen3VLVisionConfig& c, const std::vector<PatchGrid>& grids);

// The grids' checks alone (named errors: an empty side, a side not a multiple of the merge
// size); returns their patch count.
int64_t check_qwen3_vl_grids(const Qwen3VLVisionConfig& c, const std::vector<PatchGrid>& grids);

}  // namespace fk::models::vlm
