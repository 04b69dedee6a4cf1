#include "models/vlm/qwen3_vl/image_prompt.h"

#include <cstring>

namespace fk::models::vlm {

ImagePrompt qwen3_vl_image_prompt(const Qwen3VLImageEncoder& encoder, const std::vector<ProcessedImage>& images) {
  ImagePrompt p;
  p.images = std::make_shared<engine::RequestImages>();
  int64_t patches = 0;
  for (const ProcessedImage& im : images) {
    p.ids.push_back(encoder.vision_start_token_id());
    p.ids.insert(p.ids.end(), im.tokens, encoder.image_token_id());
    p.ids.push_back(encoder.vision_end_token_id());
    p.images->grids.push_back(im.grid);
    patches += im.pixel_values.size(0);
  }
  const int64_t dim = encoder.config().patch_dim();
  p.images->pixel_values = Tensor::empty({patches, dim}, DType::f32);
  int64_t row = 0;
  for (const ProcessedImage& im : images) {
    std::memcpy(p.images->pixel_values.data_as<float>() + row * dim, im.pixel_values.data(), im.pixel_values.nbytes());
    row += im.pixel_values.size(0);
  }
  return p;
}

}  // namespace fk::models::vlm
