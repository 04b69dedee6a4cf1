// World models in the model registry: Oasis-500m (open-oasis's spatio-temporal DiT, the
// Denoise pattern over latent video frames conditioned on actions) with its published
// DiT-S/2 shape, run with dummy weights, and a tiny config of the same architecture, which is
// also the config of the golden checkpoint (tests/data/models/oasis/, made by
// tests/data/models/make_oasis_goldens.py).
#include "models/registry.h"
#include "models/world/oasis/oasis_model.h"

namespace fk::models::world {
namespace {

// open-oasis's DiT_S_2(): the 500M-parameter transformer over 18x32 latent frames of its
// ViT VAE (360x640 pixels), 25-dimensional actions, 32-frame context.
constexpr const char* kOasis500mConfig = R"({
  "_class_name": "OasisDiT",
  "input_h": 18,
  "input_w": 32,
  "patch_size": 2,
  "in_channels": 16,
  "hidden_size": 1024,
  "depth": 16,
  "num_heads": 16,
  "mlp_ratio": 4.0,
  "external_cond_dim": 25,
  "max_frames": 32
})";

// 2 blocks of 128 (2 heads of 64, the CUDA attention's smallest tile) over 6x8 latent frames
// of 4 channels (3x4 patches), 5-dimensional actions, 8-frame context.
constexpr const char* kTinyOasisConfig = R"({
  "_class_name": "OasisDiT",
  "input_h": 6,
  "input_w": 8,
  "patch_size": 2,
  "in_channels": 4,
  "hidden_size": 128,
  "depth": 2,
  "num_heads": 2,
  "mlp_ratio": 4.0,
  "external_cond_dim": 5,
  "max_frames": 8
})";

ModelRegistration oasis() {
  ModelRegistration r;
  r.architecture = "oasis";
  r.names = {"Oasis-500m"};
  r.category = "world-models";
  r.pattern = RunPattern::denoise;
  r.config_types = {"OasisDiT"};
  r.presets = {{"oasis-500m", PresetKind::production,
                "Oasis-500m's DiT-S/2: 16 spatio-temporal blocks of 1024, 16 heads of 64, 18x32 latent frames in 2x2 "
                "patches, 25-dim actions, 32-frame context; about 604M parameters (1.2 GB in bf16)",
                kOasis500mConfig},
               {"tiny-oasis", PresetKind::tiny,
                "2 spatio-temporal blocks of 128, 2 heads of 64, 6x8 latent frames of 4 channels, 5-dim actions",
                kTinyOasisConfig}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "OasisGolden.DiTMatchesThePyTorchReference";
  r.factory = [](std::string_view json, std::string_view source) { return OasisModel::from_config(json, source); };
  return r;
}

const ModelRegistrar kOasis(oasis());

}  // namespace
}  // namespace fk::models::world
