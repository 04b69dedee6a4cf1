// ConvNeXt V2 (transformers' ConvNextV2ForImageClassification) as a models::Model of the Batch
// pattern: one forward pass over a batch of images, every layer a registry op call, no state.
//
// Forward, activations NHWC in the model dtype:
//   embeddings  conv2d p x p / p (+ bias) -> layer_norm over channels (eps 1e-6)
//   stage i     (i > 0: layer_norm (1e-6) -> conv2d 2x2 / 2 (+ bias)), then depths[i] blocks:
//   block       the convnextv2_block op (L3): dwconv 7x7 depthwise conv2d (+ bias) -> layer_norm
//               (1e-6) -> pwconv1 linear C -> 4C -> gelu (erf) -> grn -> pwconv2 linear 4C -> C
//               -> add to the block's input
//   head        global_avg_pool -> layer_norm (layer_norm_eps) -> classifier linear
// Output (forward's return): logits [N, num_classes] in the model dtype.
//
// Inputs (StepInputs::tensors): "images" [N, image_size, image_size, 3] in the model dtype,
// channels last, normalised as its eval transform says (transformers' ConvNextImageProcessor:
// below 384 the crop_pct crop, at 384 and above the image squashed to the square; the ImageNet
// mean and std of the released checkpoints), on the model's device; N at most max_seqs.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vision/convnextv2/convnextv2_config.h"
#include "models/vision/convnextv2/convnextv2_weights.h"
#include "models/vision/image_classifier.h"

namespace fk::models::vision {

class ConvNextV2Model final : public ImageClassifier {
 public:
  explicit ConvNextV2Model(ConvNextV2Config config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "convnextv2"; }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "edge-detection"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  // The model dtype must be bf16 or f16 (the MLPs are linear op calls).
  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  int64_t image_size() const override { return config_.image_size; }
  ClassifierTransform transform() const override;
  int64_t num_classes() const override { return config_.num_classes; }
  const LoadOptions& load_options() const override { return options_; }
  // The pooled features after their LayerNorm (transformers' pooler_output): [N, C_last].
  TensorView pooled_output() const override;

  const ConvNextV2Config& config() const { return config_; }

 private:
  // Per stage: its activations and the block's scratch (NHWC, max_seqs images).
  struct StageBuffers {
    Tensor x, a, b;      // [n, S, S, C]
    Tensor wide, wide2;  // [n, S, S, 4C]
    Tensor scale;        // [n, 4C] f32: the GRN's
  };
  // One block as the convnextv2_block op (L3) over the stage's activations, in place.
  void block(const ConvNextV2Block& w, StageBuffers& s, void* stream);

  ConvNextV2Config config_;
  LoadOptions options_;
  bool loaded_ = false;
  ConvNextV2Weights weights_;
  Tensor embed_;  // [n, S0, S0, C0]: the patch conv's output
  std::vector<StageBuffers> stages_;
  Tensor pooled_, pooled_norm_, logits_;  // [n, C_last], [n, C_last], [n, classes]
  int64_t images_ = 0;
  TensorView input_{};
};

}  // namespace fk::models::vision
