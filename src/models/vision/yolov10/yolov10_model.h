// YOLOv10 (n / s / m) as a models::Model of the Batch pattern: one forward pass over a
// batch of square images, every layer a registry op call, no state between calls.
//
// Forward, per yaml row (yolov10_config.h), activations NHWC in the model dtype:
//   Conv     conv2d (BatchNorm folded at load) + SiLU
//   C2f      the L3 op yolov10_c2f (fk/ops/yolo.h): cv1 into the first 2c channels of one
//            buffer, each bottleneck (two 3x3 Convs, the second adding its input when
//            shortcut) writing the next c channels, cv2 over the whole buffer: the
//            concatenation is never copied
//   C2fCIB   the same with CIB bottlenecks (dw 3x3, 1x1, dw 3x3 or RepVGGDW 7x7, 1x1, dw 3x3)
//   SCDown   1x1 Conv, then a depthwise strided Conv without activation
//   SPPF     1x1 Conv into slice 0, three 5x5 max pools each into the next slice, 1x1 Conv
//   PSA      cv1 -> [a | b]; b += proj(attn(b) + pe(v)); b += ffn(b) (written back into
//            cv1's buffer); cv2 over [a | b]. attn: varlen_attention over the H x W
//            positions of each image (one "sequence" per image) with the padded q, k layout
//            of yolov10_weights.h, scale key_dim^-1/2
//   Upsample upsample_nearest2d x2; Concat concat_channels
//   v10Detect the one-to-one head per level: box branch (3x3 Conv, 3x3 Conv, 1x1 conv to
//            4 x reg_max DFL logits) and class branch (dw 3x3, 1x1, dw 3x3, 1x1 Convs, 1x1
//            conv to nc logits) writing their channel slices of the raw output
// Output (forward's return): raw [N, A, 4 * reg_max + nc], the anchors of P3, P4, P5 in
// order (row-major over each grid): upstream's concatenated head output, transposed. Then
// dfl_box_decode (fk/ops/detect.h) writes boxes [N, A, 4] (xyxy pixels) and scores
// [N, A, nc] (sigmoid), both f32 (boxes_output, scores_output); the top-k selection is
// yolov10_detect.h's, on the host.
//
// Inputs (StepInputs::tensors): "images" [N, imgsz, imgsz, 3], the model dtype, RGB in
// [0, 1] (the letterboxed image / 255), channels last, on the model's device; N at most
// LoadOptions::max_seqs (the images the buffers are sized for).
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vision/yolov10/yolov10_config.h"
#include "models/vision/yolov10/yolov10_weights.h"

namespace fk::models::vision {

class Yolov10Model final : public Model {
 public:
  explicit Yolov10Model(Yolov10Config config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "yolov10"; }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "edge-detection"; }  // its registration's category
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  // Reads the images' batch size; checks the shape.
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  const Yolov10Config& config() const { return config_; }
  const LoadOptions& load_options() const { return options_; }
  // The decoded outputs of the last forward: boxes [N, A, 4], scores [N, A, nc] (f32).
  TensorView boxes_output() const;
  TensorView scores_output() const;
  // A layer's output of the last forward ([N, H, W, C] NHWC): tests compare blocks.
  TensorView layer_output(int index) const;

 private:
  struct LayerBuffers {
    Tensor out;                 // [max_images, H, W, c_out]
    std::vector<Tensor> temps;  // per block kind, see load()
  };
  void run_layer(const Yolov10Layer& l, void* stream);

  Yolov10Config config_;
  LoadOptions options_;
  bool loaded_ = false;
  Yolov10Weights weights_;
  std::vector<LayerBuffers> buffers_;
  Tensor raw_;         // [max_images, A, 4 * reg_max + nc]
  Tensor anchors_;     // [A, 3] f32: anchor x, y (grid units), stride
  Tensor boxes_, scores_;  // [max_images, A, 4], [max_images, A, nc] f32
  Tensor cu_seqlens_;  // [max_images + 1] i32: k * (P5 positions), PSA's sequences
  int64_t images_ = 0;
  TensorView input_{};
};

}  // namespace fk::models::vision
