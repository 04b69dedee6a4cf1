// The config of a ConvNeXt V2 image classifier (transformers' ConvNextV2ForImageClassification),
// read from its config.json as it is:
//   {"model_type": "convnextv2", "depths": [3, 3, 27, 3], "hidden_sizes": [128, 256, 512, 1024],
//    "num_channels": 3, "patch_size": 4, "image_size": 384, "layer_norm_eps": 1e-12,
//    "hidden_act": "gelu", "id2label": {...} or "num_labels"}
// Stage i holds depths[i] blocks of hidden_sizes[i] channels; stages after the first start
// with a LayerNorm and a 2x2 stride-2 conv. Every LayerNorm inside the network has eps 1e-6
// (as upstream hard-codes); layer_norm_eps is the pooled features' final LayerNorm's.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace fk::models::vision {

struct ConvNextV2Config {
  std::vector<int64_t> depths = {3, 3, 27, 3};
  std::vector<int64_t> hidden_sizes = {128, 256, 512, 1024};
  int64_t num_channels = 3;
  int64_t patch_size = 4;
  int64_t image_size = 224;
  int64_t num_classes = 1000;
  double layer_norm_eps = 1e-12;

  int64_t stages() const { return static_cast<int64_t>(depths.size()); }
  // The height (= width) of stage i's activations at the config's image size.
  int64_t stage_size(int64_t i) const;
};

// Parses config text; `source` names it in errors. Throws fk::Error naming the field.
ConvNextV2Config parse_convnextv2_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::vision
