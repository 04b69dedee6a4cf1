// The Denoise pattern's rollout for Oasis (models/world/oasis): frame by frame, a new latent
// frame of noise is appended to the clip and denoised by N DDIM steps (ddim_schedule.h), each
// a forward pass of the DiT over the sliding window of the last max_frames frames, the
// earlier frames held at a low noise level (diffusion forcing's stabilization level) and the
// new one at the step's level, conditioned on each frame's action. Only the new frame's
// patches are updated (ddim_step on the device).
//
// Latents live in the model's patch layout ([frames * S, C p p] per clip: frame-major, each
// patch's (channel, row, column) values; OasisModel says why). The window of a clip is a
// range of its rows, so with one clip the model reads it in place; with several, the
// windows are copied into one batch per step. Differences from the reference sampler: the
// latents are kept in the model dtype between steps (it keeps float32), and the new frame's
// noise is not clamped to +-20 (a standard normal draw beyond 20 has probability 1e-88).
//
// Not here yet: the ViT VAE (the prompt is a latent frame, the result latent frames).
#pragma once
#include <cstdint>

#include "fk/tensor.h"
#include "models/model.h"
#include "serving/denoise/ddim_schedule.h"

namespace fk::serving::denoise {

struct OasisRolloutRequest {
  int64_t clips = 1;
  int64_t prompt_frames = 1;  // given (or drawn) latent frames the rollout continues
  int64_t frames = 32;        // total frames of each clip, prompt included
  int64_t ddim_steps = 10;
  int64_t stabilization_level = 15;  // context frames run at noise level stabilization_level - 1
  uint64_t seed = 0;
  // Optional, in the model dtype on any device: [clips * prompt_frames * S, C p p] prompt
  // latents (patch layout) and [clips * frames, E] actions. Absent: the prompt is a standard
  // normal draw of `seed`, each action a random 0/1 vector of it. `noise`:
  // [clips * (frames - prompt_frames) * S, C p p], each generated frame's starting noise
  // (absent: standard normal draws of `seed`).
  Tensor prompt, actions, noise;
};

struct OasisRolloutResult {
  Tensor latents;      // [clips * frames * S, C p p] on the host, model dtype
  double seconds = 0;  // the generated frames' loop, wall clock (device synchronised)
  int64_t forward_passes = 0;
  double frames_per_second() const;  // generated frames (all clips) per second
  int64_t generated_frames = 0;
};

class OasisRollout {
 public:
  // `model` is loaded with max_seqs >= clips * max_frames frames and max_tokens >= that times S.
  OasisRollout(models::Model& model, const models::LoadOptions& loaded_with);

  // Throws named errors for a bad request (no frame to generate, more frames than the
  // schedule allows, inputs of the wrong shape) before any step runs.
  OasisRolloutResult run(const OasisRolloutRequest& request, void* stream = nullptr);

 private:
  models::Model& model_;
  models::LoadOptions options_;
  int64_t features_ = 0, frame_tokens_ = 0, action_dim_ = 0, max_frames_ = 0;
};

}  // namespace fk::serving::denoise
