// The Denoise pattern's runner for FLUX.1-style flow-matching transformers: latents drawn
// from a seeded counter-based RNG (identical on CPU and GPU), FluxPipeline's schedule
// (flow_match_euler.h) and its step loop — plan, one forward pass per step predicting the
// flow at sigma, the Euler update on the device (flow_match_euler_step). Guidance is
// FLUX.1-dev's embedded guidance: the scale goes in as a model input, no doubled batch.
//
// Not here yet: the text encoders (T5-XXL, CLIP-L) and the VAE decoder. The prompt
// embeddings are inputs (drawn at random from the seed when not given), and the result is
// the packed latents of the last step ([B * (H/16) * (W/16), 64] for FLUX: 16 VAE channels
// of 2 x 2 patches), what FluxPipeline hands to _unpack_latents and the VAE.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "serving/denoise/flow_match_euler.h"

namespace fk::serving::denoise {

struct DenoiseRequest {
  int64_t batch = 1;                     // images
  int64_t height = 1024, width = 1024;   // pixels; multiples of 16 (the VAE's 8x, then 2x2 packing)
  int64_t steps = 28;
  float guidance_scale = 3.5f;           // embedded guidance (guidance-distilled models only)
  uint64_t seed = 0;
  int64_t text_len = 512;                // prompt tokens (FluxPipeline's max_sequence_length)
  // Optional, in the model dtype on any device: [B * text_len, joint_attention_dim] and
  // [B, pooled_projection_dim] prompt embeddings, [B * image tokens, channels] initial
  // latents. Absent: standard normal draws from `seed`.
  Tensor prompt_embeds, pooled_prompt_embeds, latents;
};

struct DenoiseResult {
  Tensor latents;              // [B * image_seq_len, channels] on the host, model dtype
  int64_t image_seq_len = 0;   // packed image tokens per sample
  FlowMatchEulerSchedule schedule;
  double seconds = 0;          // the step loop, wall clock (device synchronised)
};

class DenoiseRunner {
 public:
  // `model` is loaded (its load options say its device and dtype) and of the Denoise
  // pattern with FLUX's inputs (models/diffusion/flux/flux_model.h).
  DenoiseRunner(models::Model& model, const models::LoadOptions& loaded_with, FlowMatchEulerConfig scheduler);

  // Throws named errors for a bad request (a resolution that is not a multiple of 16, steps
  // < 1, a negative guidance scale, embeddings of the wrong shape) before any step runs.
  DenoiseResult run(const DenoiseRequest& request, void* stream = nullptr);

 private:
  Tensor device_tensor(const Tensor& given, const Shape& shape, const char* what, uint64_t offset, uint64_t seed,
                       void* stream) const;

  models::Model& model_;
  models::LoadOptions options_;
  FlowMatchEulerConfig scheduler_;
  int64_t channels_ = 0, joint_dim_ = 0, pooled_dim_ = 0;
  bool takes_guidance_ = false;
};

}  // namespace fk::serving::denoise
