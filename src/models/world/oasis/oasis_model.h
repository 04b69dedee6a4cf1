// Oasis-500m's diffusion transformer (open-oasis's DiT: a spatio-temporal DiT over latent
// video frames, conditioned per frame on its noise level and the player's action) as a
// models::Model of the Denoise pattern: one forward pass predicts the noise of B clips of T
// latent frames at per-frame noise levels (diffusion forcing); the rollout drives the steps.
// Every op through the registry.
//
// Tokens: each latent frame is h x w patches of p x p (h = input_h / p, w = input_w / p,
// S = h w tokens). The residual stream [B T S, H] is frame-major (clip, frame, row, column),
// the order the per-frame modulation wants: frame f's vectors apply to its S consecutive rows.
//
// Forward:
//   x = x_embedder(patches);  c = t_embedder(sinusoid(t)) [+ external_cond(action)] per frame
//   per block (one oasis_block call, fk/ops/dit.h), two halves with adaLN-Zero (shift,
//   scale, gate x 2 from linear(silu(c))):
//     spatial:  attention within each frame (bidirectional over its S tokens), q and k turned
//               by an axial RoPE (half the head by the row, half by the column, "pixel"
//               frequencies over positions in [-1, 1]);
//     temporal: attention across frames at each position, causal in time, q and k turned by
//               a 1-D RoPE of the frame index. Its q, k, v are taken to position-major order
//               (transpose_tokens) so each position's T frames are one sequence, and the
//               output back to frame-major;
//     each:     x += gate * out(attention(modulate(LN(x))));  x += gate * fc2(gelu_tanh(fc1(modulate(LN(x)))))
//   out = final_linear(modulate(LN(x)))
// Host-side in plan: the sinusoidal timestep projection (cos | sin, max period 10000), the two
// RoPE tables (computed as upstream does, in float32) and the attention's sequence offsets.
//
// Inputs (StepInputs::tensors, by name):
//   x              [B T S, C p p]  model dtype, on the device: each patch's (channel, row,
//                                  column) values, the order the Conv2d patch embedding reads
//   timestep       [B, T] f32 on the host: each frame's noise level (diffusion step index)
//   external_cond  [B T, E] model dtype, on the device: each frame's action (optional)
// Output: the prediction [B T S, C p p] in x's layout (upstream's final linear, its rows
// reordered at load; upstream's unpatchify of it is this layout's inverse patchify).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/world/oasis/oasis_config.h"
#include "models/world/oasis/oasis_weights.h"

namespace fk::models::world {

class OasisModel final : public Model {
 public:
  explicit OasisModel(OasisConfig config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "oasis"; }
  RunPattern pattern() const override { return RunPattern::denoise; }
  std::string task_category() const override { return "world-models"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  // max_tokens bounds B T S, max_seqs bounds B T (frames).
  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  const OasisConfig& config() const { return config_; }

 private:
  void conditioning(const StepInputs& in, void* stream);
  void block(const OasisBlockWeights& w, void* stream);
  void final_layer(void* stream);

  OasisConfig config_;
  LoadOptions options_;
  bool loaded_ = false;
  OasisWeights weights_;
  // Activations, for options_.max_tokens rows and options_.max_seqs frames.
  Tensor x_;                                       // [N, H] the residual stream (frame-major)
  Tensor n_;                                       // [N, H] normalised and modulated
  Tensor qkv_;                                     // [N, 3H] frame-major
  Tensor qkv_t_;                                   // [N, 3H] position-major (the temporal attention's q, k, v)
  Tensor attn_;                                    // [N, H] attention output, frame-major
  Tensor attn_t_;                                  // [N, H] the temporal attention's output, position-major
  Tensor y_;                                       // [N, H] a branch's output before its gate
  Tensor mlp_;                                     // [N, M] the MLP hidden
  Tensor act_;                                     // [N, M] after the GELU
  Tensor out_;                                     // [N, C p p]
  Tensor mod_;                                     // [F, 6H] a half block's modulation vectors per frame
  Tensor t_proj_;                                  // [F, 256] sinusoidal projections
  Tensor c1_, c2_, temb_, cond_;                   // [F, H]; cond_ = silu(temb)
  Tensor spatial_positions_, temporal_positions_;  // [N] i32: row of the RoPE table per token
  Tensor spatial_cu_, temporal_cu_;                // [F + 1], [B S + 1] i32 sequence offsets
  Tensor spatial_cos_sin_;                         // [S, D] f32: cos of the D/2 pair angles | their sin
  Tensor temporal_cos_sin_;                        // [max_frames, D] f32
  // The planned batch: B clips of T frames.
  int64_t clips_ = 0, frames_ = 0;
};

}  // namespace fk::models::world
