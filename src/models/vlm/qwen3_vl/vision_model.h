// Qwen3-VL's vision tower as a registry Model of the Batch pattern (architecture
// "qwen3_vl_vision"): one forward over the patches of a batch of images and clips. Inputs:
// pixel_values [patches, C*Tp*P*P] in the model dtype and image_grid_thw [images, 3] (i64,
// on the host: the layout is planned from it); outputs: the merged features the text model
// takes in place of the image tokens [patches / merge_unit, out] (forward's result) and the
// deepstack features added to the first text layers' hidden states (deepstack.K).
// The text model side (M-RoPE decoder with deepstack injection) is not wired here yet.
#pragma once
#include <memory>
#include <optional>

#include "models/model.h"
#include "models/vlm/qwen3_vl/vision_tower.h"

namespace fk::models::vlm {

class Qwen3VLVisionModel final : public Model {
 public:
  explicit Qwen3VLVisionModel(Qwen3VLVisionConfig config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "qwen3_vl_vision"; }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "multimodal"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  // max_tokens is the most patches of one call.
  void load(const LoadOptions& options) override;
  bool loaded() const override { return tower_ != nullptr; }
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  const Qwen3VLVisionConfig& config() const { return config_; }
  TensorView deepstack(size_t k) const { return tower_->deepstack(k); }

 private:
  Qwen3VLVisionConfig config_;
  LoadOptions options_;
  std::unique_ptr<Qwen3VLVisionTower> tower_;
  std::vector<PatchGrid> grids_;  // planned
};

}  // namespace fk::models::vlm
