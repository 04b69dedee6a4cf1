// Qwen3-VL's image processor (transformers' Qwen2VLImageProcessor, which Qwen3VLProcessor
// uses): an RGB image to the vision tower's pixel_values and patch grid.
//   smart_resize: the height and width rounded to multiples of factor = patch_size *
//     spatial_merge_size, scaled (keeping the aspect ratio) into [min_pixels, max_pixels];
//   resize (bicubic, antialiased when shrinking, as PIL's) unless the size is already that;
//   rescale by 1/255, normalize by the mean and std (Qwen3-VL: 0.5 and 0.5 per channel);
//   patchify: the frame repeated to temporal_patch_size frames, cut into patch x patch
//     squares, the squares ordered by merge window (rows of windows, each window's
//     merge x merge squares row by row), each square's values channel, frame, row, column:
//     pixel_values [grid_h * grid_w, C * Tp * P * P], grid (1, H / P, W / P).
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/image/rgb_image.h"
#include "models/vlm/qwen3_vl/vision_config.h"

namespace fk::models::vlm {

using image::decode_rgb_image;
using image::load_rgb_image;
using image::resize_bicubic;
using image::RgbImage;

struct ImageProcessorOptions {
  int64_t min_pixels = 65536;     // Qwen3-VL's size.shortest_edge (a pixel budget, not an edge)
  int64_t max_pixels = 16777216;  // size.longest_edge
  std::array<double, 3> mean = {0.5, 0.5, 0.5};
  std::array<double, 3> std = {0.5, 0.5, 0.5};
};

// The processor's pixel budget in patches (Qwen3-VL's 65536 to 16777216 pixels at its
// 16-pixel patches: 256 to 65536 patches) for `config`'s patch size, the upper end at most
// `max_patches` (what the engine's vision tower takes).
ImageProcessorOptions qwen3_vl_processor_options(const Qwen3VLVisionConfig& config, int64_t max_patches);

struct ProcessedImage {
  Tensor pixel_values;  // [patches, C * Tp * P * P] f32 on the host
  std::array<int64_t, 3> grid = {1, 0, 0};  // (t, h, w) in patches
  int64_t tokens = 0;                       // image tokens it takes: h * w / merge^2
};

// (height, width) after smart_resize; throws naming the image size when it cannot be
// placed (an aspect ratio over 200, as upstream).
std::array<int64_t, 2> qwen3_vl_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                             int64_t max_pixels);

ProcessedImage qwen3_vl_process_image(const RgbImage& image, const Qwen3VLVisionConfig& config,
                                      const ImageProcessorOptions& options = {});

}  // namespace fk::models::vlm
