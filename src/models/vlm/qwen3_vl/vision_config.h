// The vision tower's config of Qwen3-VL (HF Qwen3VLVisionConfig: the "vision_config" object
// of a Qwen3-VL config.json, model_type "qwen3_vl" or "qwen3_vl_moe", or that object alone,
// model_type "qwen3_vl_vision"), parsed with named errors for what the tower does not run.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fk/ops/activation.h"

namespace fk::models::vlm {

struct Qwen3VLVisionConfig {
  int64_t depth = 27;
  int64_t hidden_size = 1152;
  int64_t intermediate_size = 4304;
  int64_t num_heads = 16;
  int64_t in_channels = 3;
  int64_t patch_size = 16;
  int64_t temporal_patch_size = 2;
  int64_t spatial_merge_size = 2;
  int64_t out_hidden_size = 4096;  // the text model's width
  int64_t num_position_embeddings = 2304;  // a square grid (48 x 48)
  std::vector<int64_t> deepstack_visual_indexes = {8, 16, 24};
  ops::GeluApprox gelu = ops::GeluApprox::tanh;  // hidden_act "gelu_pytorch_tanh"
  double layer_norm_eps = 1e-6;                  // fixed in the upstream modules
  double rope_theta = 10000.0;                   // the 2D vision rope, fixed upstream

  int64_t head_dim() const { return hidden_size / num_heads; }
  // Values of one patch: channels x temporal x patch x patch (pixel_values' width).
  int64_t patch_dim() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  int64_t merge_unit() const { return spatial_merge_size * spatial_merge_size; }
  int64_t merged_dim() const { return hidden_size * merge_unit(); }
  int64_t grid_side() const;  // sqrt(num_position_embeddings)
};

// Parses config.json text (a whole Qwen3-VL config or its vision_config); `source` names it
// in errors. Throws fk::Error naming the field or the unsupported setting.
Qwen3VLVisionConfig parse_qwen3_vl_vision_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::vlm
