// ConvNeXt V2's config (transformers' config.json as written, every refusal named), its
// weight table against the golden checkpoint (exactly transformers' names and shapes), the
// eval transform (crop below 384, squash from 384), a batch equal to its images run alone,
// wrong inputs refused, and the registration's presets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/registry.h"
#include "models/vision/convnextv2/convnextv2_config.h"
#include "models/vision/convnextv2/convnextv2_model.h"
#include "models/vision/image_classify.h"

namespace fk::models::vision {
namespace {

std::filesystem::path golden_dir() {
  return std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/vision/convnextv2";
}

std::string convnextv2_error(const std::string& json) {
  try {
    parse_convnextv2_config(json, "cfg");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConvNextV2Config, ReadsTransformersConfigAsWritten) {
  std::ifstream in(golden_dir() / "config.json");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const ConvNextV2Config c = parse_convnextv2_config(text.str(), "golden");
  EXPECT_EQ(c.depths, (std::vector<int64_t>{1, 1, 2, 1}));
  EXPECT_EQ(c.hidden_sizes, (std::vector<int64_t>{8, 16, 24, 32}));
  EXPECT_EQ(c.num_classes, 10);  // from id2label
  EXPECT_EQ(c.image_size, 64);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.stage_size(0), 16);
  EXPECT_EQ(c.stage_size(3), 2);
}

TEST(ConvNextV2Config, RefusesBadFieldsByName) {
  const std::string ok = R"("depths": [1, 1], "hidden_sizes": [8, 16], "image_size": 64)";
  EXPECT_NE(convnextv2_error(R"({"model_type": "convnext", )" + ok + "}").find("model_type must be 'convnextv2'"),
            std::string::npos);
  EXPECT_NE(convnextv2_error(R"({"model_type": "convnextv2", "hidden_sizes": [8]})").find("needs 'depths'"),
            std::string::npos);
  EXPECT_NE(convnextv2_error(R"({"model_type": "convnextv2", "depths": [1], "hidden_sizes": [8, 16]})")
                .find("one entry per stage"),
            std::string::npos);
  EXPECT_NE(convnextv2_error(R"({"model_type": "convnextv2", "hidden_act": "relu", )" + ok + "}").find("hidden_act"),
            std::string::npos);
  EXPECT_NE(convnextv2_error(R"({"model_type": "convnextv2", "depths": [1, 1], "hidden_sizes": [8, 16],
                                 "image_size": 60})")
                .find("must be a multiple of 8"),
            std::string::npos);
  EXPECT_NE(convnextv2_error(R"({"model_type": "convnextv2", "num_channels": 1, )" + ok + "}").find("RGB"),
            std::string::npos);
  EXPECT_NE(convnextv2_error("[1]").find("JSON object"), std::string::npos);
}

TEST(ConvNextV2Weights, GoldenCheckpointHoldsExactlyTheDeclaredTensors) {
  auto model = create_model(golden_dir().string());
  const safetensors::File f = safetensors::File::open(golden_dir() / "model.safetensors");
  const std::vector<TensorDecl> decls = model->weights();
  EXPECT_EQ(decls.size(), f.names().size());
  for (const TensorDecl& d : decls) {
    const TensorView v = f.view(d.name);
    EXPECT_EQ(std::vector<int64_t>(v.shape, v.shape + v.rank), d.shape) << d.name;
  }
}

TEST(ConvNextV2Model, TransformCropsBelow384AndSquashesFrom384) {
  const auto tiny = ConvNextV2Model::from_config(
      R"({"model_type": "convnextv2", "depths": [1, 1], "hidden_sizes": [8, 16], "image_size": 64})", "tiny");
  const ClassifierTransform t = dynamic_cast<ConvNextV2Model&>(*tiny).transform();
  EXPECT_EQ(t.size, 64);
  EXPECT_DOUBLE_EQ(t.crop_pct, 0.875);
  EXPECT_FALSE(t.squash);
  const ModelSource base = resolve_model("convnextv2-base");
  const auto b = create_model_from_config(base.config_json, base.source);
  EXPECT_TRUE(dynamic_cast<ConvNextV2Model&>(*b).transform().squash);
  EXPECT_EQ(dynamic_cast<ConvNextV2Model&>(*b).image_size(), 384);
}

TEST(ConvNextV2Model, ABatchEqualsItsImagesAlone) {
  auto model = create_model(golden_dir().string());
  auto& m = dynamic_cast<ConvNextV2Model&>(*model);
  LoadOptions o;
  o.dtype = DType::bf16;
  o.checkpoint = golden_dir() / "model.safetensors";
  o.max_seqs = 3;
  m.load(o);
  Tensor images = Tensor::empty({3, 64, 64, 3}, DType::f32);
  fill_normal(images, 5, 0, 0.f, 1.f);
  const Tensor all = classifier_logits(m, images);
  for (int64_t i = 0; i < 3; ++i) {
    Tensor one = Tensor::empty({1, 64, 64, 3}, DType::f32);
    std::copy_n(images.data_as<float>() + i * 64 * 64 * 3, 64 * 64 * 3, one.data_as<float>());
    const Tensor alone = classifier_logits(m, one);
    for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(alone.data_as<float>()[c], all.data_as<float>()[i * 10 + c]) << i;
  }
  Tensor wrong = Tensor::empty({1, 32, 32, 3}, DType::f32);
  EXPECT_THROW(classifier_logits(m, wrong), Error);
  Tensor too_many = Tensor::empty({4, 64, 64, 3}, DType::f32);
  fill_normal(too_many, 6, 0, 0.f, 1.f);
  try {
    classifier_logits(m, too_many);
    ADD_FAILURE() << "4 images on a model loaded for 3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seqs"), std::string::npos) << e.what();
  }
}

TEST(ConvNextV2Registration, PresetsAndCategory) {
  const ModelRegistration* r = nullptr;
  for (const ModelRegistration* x : model_registrations())
    if (x->architecture == "convnextv2") r = x;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->category, "edge-detection");
  EXPECT_EQ(r->pattern, RunPattern::batch);
  ASSERT_EQ(r->presets.size(), 2u);
  EXPECT_EQ(r->presets[0].name, "convnextv2-base");
  EXPECT_EQ(r->presets[1].name, "tiny-convnextv2");
  for (const Preset& p : r->presets)
    EXPECT_EQ(create_model_from_config(p.config_json, p.name)->architecture(), "convnextv2");
}

}  // namespace
}  // namespace fk::models::vision
