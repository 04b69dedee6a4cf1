// The images a generation request brings (Qwen3-VL), and the seam between the engine and a
// model's vision side. A request's prompt holds each image's placeholder tokens (the
// model's image token, as many as the image's merged patches); its pixel values and patch
// grids ride along here. The engine asks the model's ImageEncoder to check them against the
// prompt and compute the M-RoPE positions when the request is added; the runner runs the
// vision tower once, at the request's first step that computes image tokens, and keeps the
// features here until the last image token is computed (a chunked prefill may span them;
// a preempted request computes them again when it is recomputed).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"

namespace fk::engine {

// A request's features on the model's device: one row per image token, in prompt order.
struct ImageFeatures {
  Tensor merged;                   // [image tokens, H]: the image tokens' embeddings
  std::vector<Tensor> deepstack;   // per deepstack layer j: [image tokens, H], added after text layer j
};

struct RequestImages {
  // The processor's patches of every image in order: [patches, C * Tp * P * P] f32 on the host.
  Tensor pixel_values;
  std::vector<std::array<int64_t, 3>> grids;  // (t, h, w) patches per image

  // Set by ImageEncoder::prepare.
  std::vector<int64_t> mrope_positions;  // [3, prompt tokens], row-major
  int64_t rope_delta = 0;                // a token at index i >= prompt length is at i + rope_delta
  int64_t image_tokens_end = 0;          // one past the prompt's last image token
  std::vector<int64_t> feature_of;       // per prompt token: its feature row, or -1 (text)

  // Held between the first and the last step that computes image tokens.
  std::shared_ptr<ImageFeatures> features;
};

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  // Checks the images against the prompt (named errors: grids, image-token runs, sizes) and
  // fills the positions and feature rows of `images`.
  virtual void prepare(RequestImages& images, const std::vector<int64_t>& prompt) const = 0;
  // Runs the vision tower on the request's images (on the stream; valid once it gets there).
  virtual std::shared_ptr<ImageFeatures> encode(const RequestImages& images, void* stream) = 0;
};

}  // namespace fk::engine
