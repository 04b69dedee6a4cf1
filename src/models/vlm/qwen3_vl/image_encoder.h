// Qwen3-VL's vision side as the engine's ImageEncoder (serving/generate/request_images.h):
// checks a request's images against its prompt (video and mismatched image-token runs are
// refused by name), computes the text model's M-RoPE positions (qwen3_vl_rope_index) and
// runs the vision tower (merged features and deepstack features, copied out of the tower's
// buffers so that they stay with the request while its image tokens are prefilled).
#pragma once
#include <filesystem>
#include <memory>
#include <string_view>

#include "models/vlm/qwen3_vl/vision_tower.h"
#include "serving/generate/request_images.h"

namespace fk::models::vlm {

// Whether config.json text is a whole Qwen3-VL checkpoint's (model_type qwen3_vl).
bool is_qwen3_vl_config(std::string_view config_json);

class Qwen3VLImageEncoder final : public engine::ImageEncoder {
 public:
  // config_json: the whole Qwen3-VL config (vision_config and the image / video token ids).
  // checkpoint: a safetensors file or folder with the "model.visual." tensors; empty: dummy
  // weights from `seed`. max_patches: the most patches of one request's images.
  Qwen3VLImageEncoder(std::string_view config_json, std::string_view source, const std::filesystem::path& checkpoint,
                      DType dtype, Device device, uint64_t seed, int64_t max_patches, void* stream);

  void prepare(engine::RequestImages& images, const std::vector<int64_t>& prompt) const override;
  std::shared_ptr<engine::ImageFeatures> encode(const engine::RequestImages& images, void* stream) override;

  const Qwen3VLVisionConfig& config() const { return config_; }
  int64_t image_token_id() const { return image_token_id_; }
  int64_t vision_start_token_id() const { return vision_start_token_id_; }
  int64_t vision_end_token_id() const { return vision_end_token_id_; }
  int64_t max_patches() const { return max_patches_; }

 private:
  Qwen3VLVisionConfig config_;
  int64_t image_token_id_ = 0, video_token_id_ = 0, vision_start_token_id_ = 0, vision_end_token_id_ = 0;
  DType dtype_;
  Device device_;
  int64_t max_patches_;
  std::unique_ptr<Qwen3VLVisionTower> tower_;
};

}  // namespace fk::models::vlm
