// The image part of a Qwen3-VL prompt as its chat template places it: for each image in
// order, <|vision_start|>, one image token per merged patch, <|vision_end|>; with the
// request's images (every image's pixel values in order, their grids) that ride along.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/vlm/qwen3_vl/image_encoder.h"
#include "models/vlm/qwen3_vl/image_processor.h"
#include "serving/generate/request_images.h"

namespace fk::models::vlm {

struct ImagePrompt {
  std::vector<int64_t> ids;                       // the placeholders, to go before the text
  std::shared_ptr<engine::RequestImages> images;  // fresh for each request: the engine fills it
};

ImagePrompt qwen3_vl_image_prompt(const Qwen3VLImageEncoder& encoder, const std::vector<ProcessedImage>& images);

}  // namespace fk::models::vlm
