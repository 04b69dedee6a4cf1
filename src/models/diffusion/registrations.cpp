// Diffusion models in the model registry: FLUX.1 (diffusers' FluxTransformer2DModel) with
// the published transformer configs of FLUX.1-dev and FLUX.1-schnell, run with dummy
// weights, and a tiny config of the same architecture, which is also the config of the
// golden checkpoint (tests/data/models/flux/, made by tests/data/models/make_flux_goldens.py).
#include "models/diffusion/flux/flux_model.h"
#include "models/registry.h"

namespace fk::models::diffusion {
namespace {

// black-forest-labs/FLUX.1-dev transformer/config.json (axes_dims_rope: the class default).
constexpr const char* kFluxDevConfig = R"({
  "_class_name": "FluxTransformer2DModel",
  "_diffusers_version": "0.30.0.dev0",
  "attention_head_dim": 128,
  "axes_dims_rope": [16, 56, 56],
  "guidance_embeds": true,
  "in_channels": 64,
  "joint_attention_dim": 4096,
  "num_attention_heads": 24,
  "num_layers": 19,
  "num_single_layers": 38,
  "patch_size": 1,
  "pooled_projection_dim": 768
})";

// black-forest-labs/FLUX.1-schnell transformer/config.json: no guidance embedder.
constexpr const char* kFluxSchnellConfig = R"({
  "_class_name": "FluxTransformer2DModel",
  "_diffusers_version": "0.30.0.dev0",
  "attention_head_dim": 128,
  "axes_dims_rope": [16, 56, 56],
  "guidance_embeds": false,
  "in_channels": 64,
  "joint_attention_dim": 4096,
  "num_attention_heads": 24,
  "num_layers": 19,
  "num_single_layers": 38,
  "patch_size": 1,
  "pooled_projection_dim": 768
})";

// 2 double + 2 single blocks of 128 (2 heads of 64, the CUDA attention's smallest tile),
// RoPE axes 16/24/24, 16 latent channels, guidance embedded as FLUX.1-dev does.
constexpr const char* kTinyFluxConfig = R"({
  "_class_name": "FluxTransformer2DModel",
  "attention_head_dim": 64,
  "axes_dims_rope": [16, 24, 24],
  "guidance_embeds": true,
  "in_channels": 16,
  "joint_attention_dim": 32,
  "num_attention_heads": 2,
  "num_layers": 2,
  "num_single_layers": 2,
  "patch_size": 1,
  "pooled_projection_dim": 24
})";

ModelRegistration flux() {
  ModelRegistration r;
  r.architecture = "flux";
  r.names = {"FLUX.1"};
  r.category = "vision-video-audio";
  r.pattern = RunPattern::denoise;
  r.config_types = {"FluxTransformer2DModel"};
  r.presets = {{"flux.1-dev", PresetKind::production,
                "FLUX.1-dev transformer: 19 double + 38 single blocks of 3072, 24 heads of 128, guidance embedded; "
                "about 12B parameters (24 GB in bf16)",
                kFluxDevConfig},
               {"flux.1-schnell", PresetKind::production,
                "FLUX.1-schnell transformer: FLUX.1-dev's shape without the guidance embedder", kFluxSchnellConfig},
               {"tiny-flux", PresetKind::tiny, "2 double + 2 single blocks of 128, 2 heads of 64, guidance embedded",
                kTinyFluxConfig}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "FluxGolden.TransformerMatchesDiffusers";
  r.factory = [](std::string_view json, std::string_view source) { return FluxModel::from_config(json, source); };
  return r;
}

const ModelRegistrar kFlux(flux());

}  // namespace
}  // namespace fk::models::diffusion
