// Oasis-500m's diffusion transformer config: the arguments of open-oasis's DiT constructor
// (input_h, input_w, patch_size, in_channels, hidden_size, depth, num_heads, mlp_ratio,
// external_cond_dim, max_frames) as a JSON object under those names, "_class_name": "OasisDiT".
// Upstream ships no config file beside its checkpoint; its one model, DiT-S/2, is the
// oasis-500m preset. Parsed with named refusals of what the engine does not run.
#pragma once
#include <cstdint>
#include <string_view>

namespace fk::models::world {

struct OasisConfig {
  int64_t input_h = 18, input_w = 32;  // latent frame size (the ViT VAE's 360x640 / 20)
  int64_t patch_size = 2;
  int64_t in_channels = 16;  // latent channels (out_channels: the same)
  int64_t hidden_size = 1024;
  int64_t depth = 16;  // spatio-temporal blocks
  int64_t num_heads = 16;
  double mlp_ratio = 4.0;
  int64_t external_cond_dim = 25;   // the action vector per frame; 0: none
  int64_t max_frames = 32;          // the temporal attention's context window
  double norm_eps = 1e-6;           // every LayerNorm (fixed upstream)
  int64_t timestep_channels = 256;  // the sinusoidal projection's width (fixed upstream)

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t mlp_hidden() const { return static_cast<int64_t>(static_cast<double>(hidden_size) * mlp_ratio); }
  int64_t grid_h() const { return input_h / patch_size; }
  int64_t grid_w() const { return input_w / patch_size; }
  int64_t frame_tokens() const { return grid_h() * grid_w(); }
  int64_t patch_features() const { return in_channels * patch_size * patch_size; }
};

OasisConfig parse_oasis_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::world
