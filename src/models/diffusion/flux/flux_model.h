// FLUX.1's transformer (diffusers' FluxTransformer2DModel) as a models::Model of the
// Denoise pattern: one forward pass predicts the flow (velocity) of the packed latents at
// one timestep; the runner (serving/denoise) drives the steps. Every op through the registry.
//
// Forward, per call of B samples, each a joint sequence of S = Lt text + Li image tokens
// kept in one residual buffer [B * S, H] (sample b: text rows [b S, b S + Lt), image rows
// after them):
//   temb = timestep_embedder(sinusoid(1000 t)) [+ guidance_embedder(sinusoid(1000 g))]
//          + text_embedder(pooled);  c = silu(temb)
//   text = context_embedder(encoder_hidden_states), image = x_embedder(hidden_states)
//   double-stream blocks, each one flux_double_block call (L3) (per stream: adaLN-Zero from
//   linear(c) -> shift, scale, gate x 2):
//     n = adaln_modulate(x);  q, k, v = one GEMM of n per stream; per-head RMSNorm of q, k
//     (the stream's own weights) and FLUX's 3-axis RoPE (qk_norm_rope, interleaved pairs,
//     per-token cos/sin); joint attention over [text; image] (varlen_attention, one
//     sequence per sample); x += gate * out_proj(attention);
//     x += gate * ff(adaln_modulate(x)), ff = linear, gelu (tanh), linear
//   single-stream blocks over the joint sequence, each one flux_single_block call (L3):
//     n = adaln_modulate(x);  x += gate * proj_out([attention(n) | gelu(proj_mlp(n))])
//   out = proj_out(adaln_modulate(image rows, AdaLayerNormContinuous's scale, shift))
// Host-side in plan: the sinusoidal timestep / guidance projections (diffusers' Timesteps:
// flip_sin_to_cos, no shift), and the RoPE table from txt_ids / img_ids (FluxPosEmbed,
// theta 10000, computed in double as diffusers does), uploaded once per step.
//
// Inputs (StepInputs::tensors, by name):
//   hidden_states          [B * Li, in_channels]      model dtype, on the device (packed latents)
//   encoder_hidden_states  [B * Lt, joint_attention_dim]  model dtype, on the device (T5)
//   pooled_projections     [B, pooled_projection_dim] model dtype, on the device (CLIP)
//   timestep               [B] f32 on the host: sigma in [0, 1] (the model scales by 1000)
//   guidance               [B] f32 on the host: the guidance scale (guidance_embeds only)
//   txt_ids                [Lt, 3] f32 on the host;  img_ids [Li, 3] f32 on the host
// Output: the predicted flow [B * Li, patch_size^2 * out_channels].
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/diffusion/flux/flux_config.h"
#include "models/diffusion/flux/flux_weights.h"
#include "models/model.h"

namespace fk::models::diffusion {

class FluxModel final : public Model {
 public:
  explicit FluxModel(FluxConfig config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "flux"; }
  RunPattern pattern() const override { return RunPattern::denoise; }
  std::string task_category() const override { return "vision-video-audio"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  // max_tokens bounds B * (Lt + Li), max_seqs bounds B.
  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  const FluxConfig& config() const { return config_; }
  const LoadOptions& load_options() const { return options_; }

 private:
  void conditioning(const StepInputs& in, void* stream);
  void double_block(const FluxDoubleBlockWeights& w, void* stream);
  void single_block(const FluxSingleBlockWeights& w, void* stream);
  void final_layer(void* stream);

  // Row views of the planned batch: sample b's text, image or whole joint rows.
  TensorView text_rows(const Tensor& t, int64_t b) const;
  TensorView image_rows(const Tensor& t, int64_t b) const;
  TensorView sample_rows(const Tensor& t, int64_t b) const;

  FluxConfig config_;
  LoadOptions options_;
  bool loaded_ = false;
  FluxWeights weights_;
  // Activations, for options_.max_tokens joint rows and max_seqs samples.
  Tensor x_;      // [T, H] the residual stream
  Tensor n_;      // [T, H] normalised and modulated
  Tensor qkv_;    // [T, 3H]
  Tensor cat_;    // [T, H + M]: attention output | gelu(MLP hidden)
  Tensor mlp_;    // [T, M] MLP hidden before the GELU
  Tensor y_;      // [T, H] a branch's output before its gate
  Tensor y2_;     // [T, H] the double-stream blocks' attention output
  Tensor act_;    // [T, M] the double-stream blocks' MLP hidden after the GELU
  Tensor out_;    // [T, p*p*C] the predicted flow (image rows, packed)
  Tensor mod_, mod_context_;  // [B, 6H] modulation vectors
  Tensor mod_single_;         // [B, 3H] the single-stream block's (its op wants it contiguous)
  Tensor t_proj_, g_proj_;    // [B, 256] sinusoidal projections
  Tensor c1_, c2_, temb_, cond_;  // [B, H]; cond_ = silu(temb)
  Tensor positions_;          // [T] i32: index within the joint sequence
  Tensor cu_seqlens_;         // [B + 1] i32
  Tensor cos_sin_;            // [S, D] f32: cos of the D/2 pair angles | their sin
  std::vector<float> ids_;    // the ids cos_sin_ was built from
  // The planned batch.
  int64_t batch_ = 0, text_len_ = 0, image_len_ = 0;
};

}  // namespace fk::models::diffusion
