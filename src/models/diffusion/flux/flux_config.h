// FLUX.1's transformer config: diffusers' FluxTransformer2DModel config.json (the
// checkpoint's transformer/config.json), parsed with named refusals of what the engine
// does not run.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace fk::models::diffusion {

struct FluxConfig {
  int64_t patch_size = 1;
  int64_t in_channels = 64;    // packed latents: 16 VAE channels x 2 x 2 patches
  int64_t out_channels = 64;   // null in the config: in_channels
  int64_t num_layers = 19;     // double-stream (MMDiT) blocks
  int64_t num_single_layers = 38;
  int64_t attention_head_dim = 128;
  int64_t num_attention_heads = 24;
  int64_t joint_attention_dim = 4096;   // T5 hidden size (encoder_hidden_states)
  int64_t pooled_projection_dim = 768;  // CLIP pooled output
  bool guidance_embeds = false;         // FLUX.1-dev: true (guidance-distilled)
  std::array<int64_t, 3> axes_dims_rope = {16, 56, 56};
  double rope_theta = 10000;            // FluxPosEmbed's theta (fixed in diffusers)
  double norm_eps = 1e-6;               // every LayerNorm and q/k RMSNorm of the model
  int64_t timestep_channels = 256;      // the sinusoidal projection's width

  int64_t hidden() const { return attention_head_dim * num_attention_heads; }
  int64_t mlp_hidden() const { return 4 * hidden(); }  // mlp_ratio 4 (FeedForward, single blocks)
  int64_t out_features() const { return patch_size * patch_size * out_channels; }
};

FluxConfig parse_flux_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::diffusion
