// MobileNetV4 (timm's mobilenetv4_conv_small and _conv_medium) as a models::Model of the Batch pattern: one
// forward pass over a batch of images, every layer a registry op call, no state.
//
// Forward, activations NHWC in the model dtype (BatchNorms folded at load):
//   stem       conv2d 3x3 / 2 + ReLU
//   ConvBnAct  conv2d + ReLU
//   EdgeRes.   conv_exp KxK conv2d (the block's stride) + ReLU -> conv_pwl 1x1 conv2d, no
//              activation, adding the block's input when the block keeps its shape
//   UIR        [dw_start depthwise conv2d, no activation] -> pw_exp 1x1 conv2d + ReLU ->
//              [dw_mid depthwise conv2d (the block's stride) + ReLU] -> pw_proj 1x1 conv2d,
//              no activation, adding the block's input in its epilogue when the block keeps
//              its shape (timm's has_skip)
//   head       global_avg_pool [N, C] -> conv_head 1x1 + norm_head + ReLU as one conv2d over
//              the pooled 1x1 image -> classifier linear (+ bias)
// Output (forward's return): logits [N, num_classes] in the model dtype.
//
// Inputs (StepInputs::tensors): "images" [N, image_size, image_size, 3] in the model dtype,
// channels last, already normalised as timm's data config says (RGB in [0, 1], minus the
// ImageNet mean (0.485, 0.456, 0.406), divided by the std (0.229, 0.224, 0.225)), on the
// model's device; N at most LoadOptions::max_seqs.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vision/image_classifier.h"
#include "models/vision/mobilenetv4/mobilenetv4_config.h"
#include "models/vision/mobilenetv4/mobilenetv4_weights.h"

namespace fk::models::vision {

class MobileNetV4Model final : public ImageClassifier {
 public:
  explicit MobileNetV4Model(MobileNetV4Config config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "mobilenetv4"; }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "edge-detection"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  // The model dtype must be bf16 or f16 (the classifier is a linear op call).
  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  // Reads the images' batch size; checks the shape.
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  int64_t image_size() const override { return config_.image_size; }
  ClassifierTransform transform() const override;
  int64_t num_classes() const override { return config_.num_classes; }
  const LoadOptions& load_options() const override { return options_; }
  // The pooled features of the last forward: [N, last_channels] (global_avg_pool's output).
  TensorView pooled_output() const override;

  const MobileNetV4Config& config() const { return config_; }
  // A block's output of the last forward ([N, H, W, C]); tests compare blocks.
  TensorView block_output(int index) const;
  const MobileNetV4Weights& folded_weights() const { return weights_; }

 private:
  // One UIR block as the uir_block op (L3) over `x`; returns its output.
  TensorView uir_block(const MobileNetV4Block& block, const std::vector<MobileNetV4Conv>& convs,
                       const std::vector<Tensor>& outs, const TensorView& x, void* stream);
  Tensor buffer(int64_t size, int64_t channels) const;

  MobileNetV4Config config_;
  LoadOptions options_;
  bool loaded_ = false;
  MobileNetV4Weights weights_;
  Tensor stem_;                            // [max_images, S/2, S/2, stem]
  std::vector<std::vector<Tensor>> outs_;  // per block, one output per conv (the last: the block's)
  Tensor pooled_, head_, logits_;          // [n, C], [n, 1, 1, F], [n, classes]
  int64_t images_ = 0;
  TensorView input_{};
};

}  // namespace fk::models::vision
