// 3D / robotics / science models in the model registry. OpenFold3: its Pairformer stack at
// the released trunk's sizes (48 blocks, c_s 384, c_z 128; dummy weights) and a tiny config
// of 2 blocks at small widths, which is also the config of the golden checkpoint
// (tests/data/models/openfold3/, made by tests/data/models/make_openfold3_goldens.py).
#include "models/registry.h"
#include "models/science/openfold3/openfold3_model.h"

namespace fk::models::science {
namespace {

constexpr const char* kOpenFold3 =
    R"({"model_type": "openfold3", "c_s": 384, "c_z": 128, "c_hidden_pair_bias": 24, "no_heads_pair_bias": 16,
 "c_hidden_mul": 128, "c_hidden_pair_att": 32, "no_heads_pair": 4, "no_blocks": 48, "transition_type": "swiglu",
 "transition_n": 4, "fuse_projection_weights": false, "max_tokens": 384})";
constexpr const char* kTinyOpenFold3 =
    R"({"model_type": "openfold3", "c_s": 32, "c_z": 16, "c_hidden_pair_bias": 8, "no_heads_pair_bias": 4,
 "c_hidden_mul": 16, "c_hidden_pair_att": 8, "no_heads_pair": 2, "no_blocks": 2, "transition_type": "swiglu",
 "transition_n": 4, "fuse_projection_weights": false, "max_tokens": 32})";

ModelRegistration openfold3() {
  ModelRegistration r;
  r.architecture = "openfold3";
  r.names = {"OpenFold3"};
  r.category = "3d-robotics-science";
  r.pattern = RunPattern::batch;
  r.config_types = {"openfold3"};
  r.presets = {{"openfold3", PresetKind::production,
                "OpenFold3's Pairformer stack: 48 blocks, c_s 384, c_z 128, triangle heads 4 x 32, single heads "
                "16 x 24, triangle multiplication 128, SwiGLU x4; crop 384 tokens",
                kOpenFold3},
               {"tiny-openfold3", PresetKind::tiny,
                "2 Pairformer blocks, c_s 32, c_z 16, triangle heads 2 x 8, single heads 4 x 8; crop 32", kTinyOpenFold3}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "OpenFold3Golden.TinyMatchesPyTorchReference";
  r.factory = [](std::string_view json, std::string_view source) { return OpenFold3Model::from_config(json, source); };
  return r;
}

const ModelRegistrar kOpenFold3Registration(openfold3());

}  // namespace
}  // namespace fk::models::science
