// MobileNetV4 on the CPU beyond the golden check: config parsing and its refusals, the
// block table and weight names of timm's mobilenetv4_conv_small, BatchNorm folding on the
// stem against Conv2d + BatchNorm computed here in double, a batch equal to its images run
// alone, the host runner's top-k, and the registration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/registry.h"
#include "models/vision/image_classify.h"
#include "models/vision/mobilenetv4/mobilenetv4_config.h"
#include "models/vision/mobilenetv4/mobilenetv4_model.h"
#include "models/vision/mobilenetv4/mobilenetv4_weights.h"

namespace fk::models::vision {
namespace {

constexpr const char* kConvSmall = R"({"model_type": "mobilenetv4", "variant": "conv_small"})";
constexpr const char* kConvMedium = R"({"model_type": "mobilenetv4", "variant": "conv_medium", "image_size": 256})";

std::string error_of(const std::string& json) {
  try {
    parse_mobilenetv4_config(json, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MobileNetV4Config, ReadsTimmsHubConfigAsItIs) {
  // timm's config.json for mobilenetv4_conv_small (the fields it writes; the rest ignored).
  const std::string timm = R"({"architecture": "mobilenetv4_conv_small", "num_classes": 1000, "num_features": 1280,
      "global_pool": "avg", "pretrained_cfg": {"tag": "e2400_r224_in1k", "input_size": [3, 256, 256],
      "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "num_classes": 1000}})";
  const MobileNetV4Config c = parse_mobilenetv4_config(timm, "config.json");
  EXPECT_EQ(c.variant, "conv_small");
  EXPECT_EQ(c.image_size, 256);
  EXPECT_EQ(c.num_features, 1280);
  EXPECT_EQ(c.blocks.size(), parse_mobilenetv4_config(kConvSmall, "own").blocks.size());
  EXPECT_EQ(registration_for_config(timm).architecture, "mobilenetv4");
  // The variants timm names that the engine does not build: refused by name, not unknown.
  const std::string medium = R"({"architecture": "mobilenetv4_hybrid_medium", "num_classes": 1000})";
  try {
    create_model_from_config(medium, "config.json");
    ADD_FAILURE() << "hybrid_medium built";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("variant 'hybrid_medium' is not supported"), std::string::npos) << e.what();
  }
}

TEST(MobileNetV4Config, RefusesOtherVariantsAndBadFields) {
  for (const char* v : {"conv_large", "hybrid_medium", "hybrid_large", "conv_aa_medium", "conv_blur_medium"}) {
    const std::string e = error_of(std::string(R"({"model_type": "mobilenetv4", "variant": ")") + v + "\"}");
    EXPECT_NE(e.find(std::string("variant '") + v + "' is not supported"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(R"({"model_type": "mobilenetv4", "variant": "conv_tiny"})").find("unknown MobileNetV4 variant"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "mobilenetv4"})").find("needs a 'variant'"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "yolov10", "variant": "conv_small"})").find("model_type must be"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "mobilenetv4", "variant": "conv_small", "num_classes": 0})").find("num_classes"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "mobilenetv4", "variant": "conv_small", "image_size": 16})").find("image_size"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "mobilenetv4", "variant": "conv_small", "channel_multiplier": 0})")
                .find("channel_multiplier"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
}

TEST(MobileNetV4Config, ConvSmallBlockTableMatchesTimm) {
  const MobileNetV4Config c = parse_mobilenetv4_config(kConvSmall, "conv_small");
  EXPECT_EQ(c.num_classes, 1000);
  EXPECT_EQ(c.image_size, 224);
  EXPECT_EQ(c.stem_channels, 32);
  EXPECT_EQ(c.stem_size(), 112);
  ASSERT_EQ(c.blocks.size(), 17u);  // stages of 2, 2, 6, 6 and 1 blocks (the repeats expanded)
  // {prefix, c_in, c_out, mid, dw_start, dw_mid, stride, residual, out_size}
  struct Want {
    const char* prefix;
    int64_t c_in, c_out, mid;
    int start, mid_k, stride;
    bool residual;
    int64_t size;
  };
  const Want want[] = {
      {"blocks.0.0.", 32, 32, 0, 0, 0, 2, false, 56},   {"blocks.0.1.", 32, 32, 0, 0, 0, 1, false, 56},
      {"blocks.1.0.", 32, 96, 0, 0, 0, 2, false, 28},   {"blocks.1.1.", 96, 64, 0, 0, 0, 1, false, 28},
      {"blocks.2.0.", 64, 96, 192, 5, 5, 2, false, 14}, {"blocks.2.1.", 96, 96, 192, 0, 3, 1, true, 14},
      {"blocks.2.4.", 96, 96, 192, 0, 3, 1, true, 14},  {"blocks.2.5.", 96, 96, 384, 3, 0, 1, true, 14},
      {"blocks.3.0.", 96, 128, 576, 3, 3, 2, false, 7}, {"blocks.3.1.", 128, 128, 512, 5, 5, 1, true, 7},
      {"blocks.3.3.", 128, 128, 384, 0, 5, 1, true, 7}, {"blocks.3.5.", 128, 128, 512, 0, 3, 1, true, 7},
      {"blocks.4.0.", 128, 960, 0, 0, 0, 1, false, 7},
  };
  for (const Want& w : want) {
    const MobileNetV4Block* b = nullptr;
    for (const MobileNetV4Block& x : c.blocks)
      if (x.prefix == w.prefix) b = &x;
    ASSERT_NE(b, nullptr) << w.prefix;
    EXPECT_EQ(b->c_in, w.c_in) << w.prefix;
    EXPECT_EQ(b->c_out, w.c_out) << w.prefix;
    EXPECT_EQ(b->mid, w.mid) << w.prefix;
    if (b->kind == MobileNetV4BlockKind::uir) {
      EXPECT_EQ(b->dw_start, w.start) << w.prefix;
      EXPECT_EQ(b->dw_mid, w.mid_k) << w.prefix;
    }
    EXPECT_EQ(b->stride, w.stride) << w.prefix;
    EXPECT_EQ(b->residual, w.residual) << w.prefix;
    EXPECT_EQ(b->out_size, w.size) << w.prefix;
  }
  EXPECT_EQ(c.last_channels(), 960);
}

// timm's mobilenetv4_conv_medium at 256 x 256: one EdgeResidual, then UIRs of every kind
// (with and without each depthwise conv), the 960-wide ConvBnAct.
TEST(MobileNetV4Config, ConvMediumBlockTableMatchesTimm) {
  const MobileNetV4Config c = parse_mobilenetv4_config(kConvMedium, "conv_medium");
  EXPECT_EQ(c.image_size, 256);
  EXPECT_EQ(c.stem_size(), 128);
  ASSERT_EQ(c.blocks.size(), 23u);  // stages of 1, 2, 8, 11 and 1 blocks
  struct Want {
    const char* prefix;
    MobileNetV4BlockKind kind;
    int64_t c_in, c_out, mid;
    int start, mid_k, stride;
    bool residual;
    int64_t size;
  };
  using K = MobileNetV4BlockKind;
  const Want want[] = {
      {"blocks.0.0.", K::edge_residual, 32, 48, 128, 0, 0, 2, false, 64},
      {"blocks.1.0.", K::uir, 48, 80, 192, 3, 5, 2, false, 32},
      {"blocks.1.1.", K::uir, 80, 80, 160, 3, 3, 1, true, 32},
      {"blocks.2.0.", K::uir, 80, 160, 480, 3, 5, 2, false, 16},
      {"blocks.2.2.", K::uir, 160, 160, 640, 3, 3, 1, true, 16},
      {"blocks.2.5.", K::uir, 160, 160, 640, 3, 0, 1, true, 16},
      {"blocks.2.6.", K::uir, 160, 160, 320, 0, 0, 1, true, 16},
      {"blocks.3.0.", K::uir, 160, 256, 960, 5, 5, 2, false, 8},
      {"blocks.3.3.", K::uir, 256, 256, 1024, 3, 5, 1, true, 8},
      {"blocks.3.4.", K::uir, 256, 256, 1024, 0, 0, 1, true, 8},
      {"blocks.3.6.", K::uir, 256, 256, 512, 3, 5, 1, true, 8},
      {"blocks.3.9.", K::uir, 256, 256, 1024, 0, 0, 1, true, 8},
      {"blocks.3.10.", K::uir, 256, 256, 512, 5, 0, 1, true, 8},
      {"blocks.4.0.", K::conv_bn_act, 256, 960, 0, 0, 0, 1, false, 8},
  };
  for (const Want& w : want) {
    const MobileNetV4Block* b = nullptr;
    for (const MobileNetV4Block& x : c.blocks)
      if (x.prefix == w.prefix) b = &x;
    ASSERT_NE(b, nullptr) << w.prefix;
    EXPECT_EQ(b->kind, w.kind) << w.prefix;
    EXPECT_EQ(b->c_in, w.c_in) << w.prefix;
    EXPECT_EQ(b->c_out, w.c_out) << w.prefix;
    EXPECT_EQ(b->mid, w.mid) << w.prefix;
    EXPECT_EQ(b->dw_start, w.start) << w.prefix;
    EXPECT_EQ(b->dw_mid, w.mid_k) << w.prefix;
    EXPECT_EQ(b->stride, w.stride) << w.prefix;
    EXPECT_EQ(b->residual, w.residual) << w.prefix;
    EXPECT_EQ(b->out_size, w.size) << w.prefix;
  }
  EXPECT_EQ(c.blocks[0].kernel, 3);
  // timm's state dict of mobilenetv4_conv_medium: 387 tensors besides num_batches_tracked;
  // the EdgeResidual's under its names.
  std::map<std::string, std::vector<int64_t>> decls;
  for (const TensorDecl& d : mobilenetv4_weight_decls(c)) EXPECT_TRUE(decls.emplace(d.name, d.shape).second) << d.name;
  EXPECT_EQ(decls.size(), 387u);
  EXPECT_EQ(decls["blocks.0.0.conv_exp.weight"], (std::vector<int64_t>{128, 32, 3, 3}));
  EXPECT_EQ(decls["blocks.0.0.bn1.running_var"], (std::vector<int64_t>{128}));
  EXPECT_EQ(decls["blocks.0.0.conv_pwl.weight"], (std::vector<int64_t>{48, 128, 1, 1}));
  EXPECT_EQ(decls["blocks.0.0.bn2.weight"], (std::vector<int64_t>{48}));
  EXPECT_EQ(decls["blocks.3.10.dw_start.conv.weight"], (std::vector<int64_t>{256, 1, 5, 5}));
  EXPECT_EQ(decls.count("blocks.3.9.dw_start.conv.weight"), 0u);
}

TEST(MobileNetV4Config, ChannelRoundingAsTimm) {
  EXPECT_EQ(mobilenetv4_round_channels(32, 0.25), 8);
  EXPECT_EQ(mobilenetv4_round_channels(96, 0.25), 24);
  EXPECT_EQ(mobilenetv4_round_channels(960, 0.25), 240);
  EXPECT_EQ(mobilenetv4_round_channels(64, 0.35), 24);  // 22.4 -> 24
  EXPECT_EQ(mobilenetv4_make_divisible(3.0), 8);
  EXPECT_EQ(mobilenetv4_make_divisible(24 * 6.0), 144);
  EXPECT_EQ(mobilenetv4_make_divisible(20.0), 24);  // 16 would be more than 10% below
  // Below 1 the stem keeps its 32 channels (timm's fix_stem).
  const MobileNetV4Config c = parse_mobilenetv4_config(
      R"({"model_type": "mobilenetv4", "variant": "conv_small", "channel_multiplier": 0.25})", "tiny");
  EXPECT_EQ(c.stem_channels, 32);
  EXPECT_EQ(c.blocks[0].c_out, 8);
  EXPECT_EQ(c.last_channels(), 240);
}

TEST(MobileNetV4Weights, NamesAndShapesAreTimms) {
  const MobileNetV4Config c = parse_mobilenetv4_config(kConvSmall, "conv_small");
  std::map<std::string, std::vector<int64_t>> decls;
  for (const TensorDecl& d : mobilenetv4_weight_decls(c)) EXPECT_TRUE(decls.emplace(d.name, d.shape).second) << d.name;
  // timm's state dict of mobilenetv4_conv_small holds 232 tensors besides the BatchNorms'
  // num_batches_tracked counters.
  EXPECT_EQ(decls.size(), 232u);
  const std::map<std::string, std::vector<int64_t>> some = {
      {"conv_stem.weight", {32, 3, 3, 3}},
      {"bn1.running_var", {32}},
      {"blocks.0.0.conv.weight", {32, 32, 3, 3}},
      {"blocks.0.0.bn1.weight", {32}},
      {"blocks.1.1.conv.weight", {64, 96, 1, 1}},
      {"blocks.2.0.dw_start.conv.weight", {64, 1, 5, 5}},
      {"blocks.2.0.dw_start.bn.running_mean", {64}},
      {"blocks.2.0.pw_exp.conv.weight", {192, 64, 1, 1}},
      {"blocks.2.0.dw_mid.conv.weight", {192, 1, 5, 5}},
      {"blocks.2.0.pw_proj.conv.weight", {96, 192, 1, 1}},
      {"blocks.2.5.dw_start.conv.weight", {96, 1, 3, 3}},
      {"blocks.2.5.pw_exp.conv.weight", {384, 96, 1, 1}},
      {"blocks.3.0.pw_exp.conv.weight", {576, 96, 1, 1}},
      {"blocks.3.3.dw_mid.conv.weight", {384, 1, 5, 5}},
      {"blocks.3.5.pw_proj.conv.weight", {128, 512, 1, 1}},
      {"blocks.4.0.conv.weight", {960, 128, 1, 1}},
      {"blocks.4.0.bn1.bias", {960}},
      {"conv_head.weight", {1280, 960, 1, 1}},
      {"norm_head.weight", {1280}},
      {"classifier.weight", {1000, 1280}},
      {"classifier.bias", {1000}},
  };
  for (const auto& [name, shape] : some) {
    const auto it = decls.find(name);
    ASSERT_NE(it, decls.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  // Blocks without a start or middle depthwise conv declare none.
  EXPECT_EQ(decls.count("blocks.2.1.dw_start.conv.weight"), 0u);
  EXPECT_EQ(decls.count("blocks.2.5.dw_mid.conv.weight"), 0u);
  EXPECT_EQ(decls.count("conv_head.bias"), 0u);
}

TEST(MobileNetV4Weights, GoldenCheckpointsHoldExactlyTheDeclaredTensors) {
  for (const char* folder : {"mobilenetv4", "mobilenetv4_medium"}) {
    SCOPED_TRACE(folder);
    const std::filesystem::path dir = std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/vision" / folder;
    if (!std::filesystem::exists(dir / "model.safetensors")) GTEST_SKIP() << "no golden data";
    auto model = create_model(dir.string());
    const safetensors::File f = safetensors::File::open(dir / "model.safetensors");
    const std::vector<TensorDecl> decls = model->weights();
    EXPECT_EQ(decls.size(), f.names().size());
    for (const TensorDecl& d : decls) {
      const TensorView v = f.view(d.name);
      EXPECT_EQ(std::vector<int64_t>(v.shape, v.shape + v.rank), d.shape) << d.name;
    }
  }
}

// conv(x) -> BatchNorm (eval) -> ReLU of the stem, computed here in double from the state
// dict, against the stem conv2d call with the folded weights.
TEST(MobileNetV4Weights, FoldedStemEqualsConvThenBatchNorm) {
  const MobileNetV4Config c = parse_mobilenetv4_config(
      R"({"model_type": "mobilenetv4", "variant": "conv_small", "channel_multiplier": 0.25, "num_features": 16,
          "num_classes": 3, "image_size": 32})",
      "tiny");
  const std::map<std::string, Tensor> sd = random_mobilenetv4_state_dict(c, 7);
  const MobileNetV4Weights w = random_mobilenetv4_weights(c, 7, DType::f32, Device::cpu());
  const int64_t S = 9, K = c.stem_channels;
  Tensor x = Tensor::empty({1, S, S, 3}, DType::f32);
  fill_uniform(x, 11, 0, -1.f, 1.f);
  const int64_t P = (S + 2 - 3) / 2 + 1;
  Tensor out = Tensor::empty({1, P, P, K}, DType::f32);
  ops::Conv2dArgs a{};
  a.out = out;
  a.input = x;
  a.weight = w.stem.weight;
  a.bias = w.stem.bias;
  a.stride_h = a.stride_w = 2;
  a.pad_h = a.pad_w = 1;
  a.activation = ops::ConvActivation::relu;
  call_op(a, DeviceType::cpu, nullptr);
  const Tensor& wt = sd.at("conv_stem.weight");  // OIHW
  const float* gamma = sd.at("bn1.weight").data_as<float>();
  const float* beta = sd.at("bn1.bias").data_as<float>();
  const float* mean = sd.at("bn1.running_mean").data_as<float>();
  const float* var = sd.at("bn1.running_var").data_as<float>();
  double worst = 0;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t q = 0; q < P; ++q)
      for (int64_t k = 0; k < K; ++k) {
        double acc = 0;
        for (int64_t ci = 0; ci < 3; ++ci)
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t s = 0; s < 3; ++s) {
              const int64_t h = 2 * p - 1 + r, ww = 2 * q - 1 + s;
              if (h < 0 || h >= S || ww < 0 || ww >= S) continue;
              acc += static_cast<double>(get(x.view(), 0, h, ww, ci)) * get(wt.view(), k, ci, r, s);
            }
        const double bn = (acc - mean[k]) / std::sqrt(static_cast<double>(var[k]) + c.bn_eps) * gamma[k] + beta[k];
        const double want = bn > 0 ? bn : 0;
        worst = std::max(worst, std::abs(get(out.view(), 0, p, q, k) - want));
      }
  EXPECT_LT(worst, 1e-5);  // f32 folded weights and output: float rounding only
}

std::unique_ptr<MobileNetV4Model> tiny_model(int64_t max_images) {
  auto m = std::make_unique<MobileNetV4Model>(parse_mobilenetv4_config(
      R"({"model_type": "mobilenetv4", "variant": "conv_small", "channel_multiplier": 0.25, "num_features": 32,
          "num_classes": 6, "image_size": 32})",
      "tiny"));
  LoadOptions o;
  o.dtype = DType::bf16;
  o.seed = 3;
  o.max_seqs = max_images;
  m->load(o);
  return m;
}

TEST(MobileNetV4Model, ABatchEqualsItsImagesAlone) {
  auto m = tiny_model(3);
  Tensor images = Tensor::empty({3, 32, 32, 3}, DType::f32);
  fill_normal(images, 5, 0, 0.f, 1.f);
  const Tensor batch = classifier_logits(*m, images);
  ASSERT_EQ(batch.size(0), 3);
  ASSERT_EQ(batch.size(1), 6);
  bool differ = false;
  for (int64_t i = 0; i < 3; ++i) {
    Tensor one = Tensor::empty({1, 32, 32, 3}, DType::f32);
    std::copy_n(images.data_as<float>() + i * 32 * 32 * 3, 32 * 32 * 3, one.data_as<float>());
    const Tensor alone = classifier_logits(*m, one);
    for (int64_t j = 0; j < 6; ++j) {
      // The CPU implementations compute each image independently: bit-equal.
      EXPECT_EQ(alone.data_as<float>()[j], batch.data_as<float>()[i * 6 + j]) << "image " << i << " class " << j;
      differ |= i > 0 && batch.data_as<float>()[i * 6 + j] != batch.data_as<float>()[j];
    }
  }
  EXPECT_TRUE(differ) << "the logits do not depend on the image";
}

TEST(MobileNetV4Model, RefusesWrongInputs) {
  auto m = tiny_model(2);
  Tensor wrong = Tensor::empty({1, 16, 16, 3}, DType::bf16);
  StepInputs in;
  in.tensors = {{"images", wrong.view()}};
  try {
    m->plan(in, nullptr);
    ADD_FAILURE() << "a 16 x 16 image was accepted by a 32 x 32 model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("32 x 32 images"), std::string::npos) << e.what();
  }
  Tensor three = Tensor::empty({3, 32, 32, 3}, DType::bf16);
  in.tensors = {{"images", three.view()}};
  try {
    m->plan(in, nullptr);
    ADD_FAILURE() << "3 images were accepted by a model loaded for 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seqs"), std::string::npos) << e.what();
  }
  MobileNetV4Model f32(parse_mobilenetv4_config(kConvSmall, "conv_small"));
  LoadOptions o;
  o.dtype = DType::f32;
  try {
    f32.load(o);
    ADD_FAILURE() << "an f32 model dtype was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16 or f16"), std::string::npos) << e.what();
  }
}

TEST(MobileNetV4Classify, TopKOrdersByLogitThenClass) {
  Tensor logits = Tensor::empty({2, 4}, DType::f32);
  const float v[8] = {0.5f, 2.f, -1.f, 2.f, /**/ 3.f, 1.f, 2.f, 0.f};
  std::copy_n(v, 8, logits.data_as<float>());
  const auto top = top_k_classes(logits, 3);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].classes, (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(top[1].classes, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(top[1].logits, (std::vector<float>{3.f, 2.f, 1.f}));
  EXPECT_EQ(top_k_classes(logits, 10)[0].classes.size(), 4u);  // k clamped to the classes
}

TEST(MobileNetV4Registration, PresetsAndCategory) {
  const ModelRegistration* r = nullptr;
  for (const ModelRegistration* x : model_registrations())
    if (x->architecture == "mobilenetv4") r = x;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->category, "edge-detection");
  EXPECT_EQ(r->pattern, RunPattern::batch);
  int production = 0, tiny = 0;
  for (const Preset& p : r->presets) {
    auto m = create_model_from_config(p.config_json, p.name);
    EXPECT_EQ(m->architecture(), "mobilenetv4");
    production +=
        (p.name == "mobilenetv4-conv-medium" || p.name == "mobilenetv4-conv-small") && p.kind == PresetKind::production;
    tiny += (p.name == "tiny-mobilenetv4" || p.name == "tiny-mobilenetv4-medium") && p.kind == PresetKind::tiny;
  }
  EXPECT_EQ(production, 2);
  EXPECT_EQ(tiny, 2);
  // The architecture's first preset, the benchmark's: the issue's conv_medium at 256 x 256.
  EXPECT_EQ(r->presets.front().name, "mobilenetv4-conv-medium");
}

}  // namespace
}  // namespace fk::models::vision
