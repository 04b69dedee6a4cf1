// FLUX.1 beyond the golden check: config parsing and its refusals, the registration and
// presets, the upstream weight names and the production preset's size, checkpoint errors,
// and the forward pass on the CPU backend (bf16, every op through the registry) against
// the double-precision reference written from diffusers (flux_reference.h) on a random
// checkpoint, with two samples of different timesteps and guidance in one call; step-input
// errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "models/diffusion/flux_test_util.h"
#include "support/test_seed.h"

namespace fk::models::diffusion {
namespace {

using namespace test;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string with(const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(tiny_flux_json());
  j[key] = nlohmann::json::parse(value);
  return j.dump();
}

TEST(FluxConfig, ParsesThePresets) {
  const FluxConfig dev = parse_flux_config(resolve_model("flux.1-dev").config_json, "flux.1-dev");
  EXPECT_EQ(dev.hidden(), 3072);
  EXPECT_EQ(dev.mlp_hidden(), 12288);
  EXPECT_EQ(dev.num_layers, 19);
  EXPECT_EQ(dev.num_single_layers, 38);
  EXPECT_EQ(dev.in_channels, 64);
  EXPECT_EQ(dev.out_channels, 64);
  EXPECT_TRUE(dev.guidance_embeds);
  EXPECT_EQ(dev.axes_dims_rope[1], 56);
  EXPECT_FALSE(parse_flux_config(resolve_model("flux.1-schnell").config_json, "schnell").guidance_embeds);
  const FluxConfig tiny = tiny_flux_config();
  EXPECT_EQ(tiny.hidden(), 128);
  EXPECT_EQ(tiny.out_features(), 16);
}

TEST(FluxConfig, NamedRefusals) {
  EXPECT_NE(error_of([] { parse_flux_config(with("_class_name", "\"SD3Transformer2DModel\""), "c"); })
                .find("is not a FLUX transformer config"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flux_config(with("axes_dims_rope", "[16, 24, 16]"), "c"); })
                .find("axes_dims_rope sums to 56 but attention_head_dim is 64"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flux_config(with("axes_dims_rope", "[16, 48]"), "c"); }).find("must list 3 axis"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flux_config(with("attention_head_dim", "60"), "c"); })
                .find("attention_head_dim 60 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flux_config(with("guidance_embeds", "1"), "c"); }).find("'guidance_embeds' must be"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flux_config("{", "c"); }).find("not valid JSON"), std::string::npos);
}

TEST(FluxModel, RegisteredAsDenoise) {
  const ModelRegistration& r = registration("flux");
  EXPECT_EQ(r.pattern, RunPattern::denoise);
  EXPECT_EQ(r.category, "vision-video-audio");
  const auto model = create_model("tiny-flux");
  EXPECT_EQ(model->architecture(), "flux");
  EXPECT_EQ(model->pattern(), RunPattern::denoise);
  EXPECT_EQ(category_of("flux.1-dev"), "vision-video-audio");
}

TEST(FluxModel, UpstreamWeightNamesAndSize) {
  const FluxConfig dev = parse_flux_config(resolve_model("flux.1-dev").config_json, "flux.1-dev");
  int64_t params = 0;
  std::map<std::string, Shape> shapes;
  for (const TensorDecl& d : flux_weight_decls(dev, DType::bf16)) {
    int64_t n = 1;
    for (int64_t s : d.shape) n *= s;
    params += n;
    EXPECT_TRUE(shapes.emplace(d.name, d.shape).second) << "duplicate " << d.name;
  }
  // FLUX.1-dev's transformer has 11.9B parameters (diffusers reports 11,901,408,320).
  EXPECT_EQ(params, 11901408320);
  EXPECT_EQ(shapes.at("transformer_blocks.18.attn.add_k_proj.weight"), (Shape{3072, 3072}));
  EXPECT_EQ(shapes.at("transformer_blocks.0.norm1_context.linear.weight"), (Shape{18432, 3072}));
  EXPECT_EQ(shapes.at("transformer_blocks.0.ff_context.net.0.proj.weight"), (Shape{12288, 3072}));
  EXPECT_EQ(shapes.at("single_transformer_blocks.37.proj_out.weight"), (Shape{3072, 15360}));
  EXPECT_EQ(shapes.at("single_transformer_blocks.0.attn.norm_k.weight"), (Shape{128}));
  EXPECT_EQ(shapes.at("time_text_embed.guidance_embedder.linear_1.weight"), (Shape{3072, 256}));
  EXPECT_EQ(shapes.at("time_text_embed.text_embedder.linear_1.weight"), (Shape{3072, 768}));
  EXPECT_EQ(shapes.at("norm_out.linear.weight"), (Shape{6144, 3072}));
  EXPECT_EQ(shapes.at("proj_out.weight"), (Shape{64, 3072}));
  EXPECT_EQ(shapes.count("single_transformer_blocks.0.attn.to_out.0.weight"), 0u);  // pre_only
}

class FluxCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fk_flux_test_" + std::to_string(seed_));
    weights_ = write_random_checkpoint(config_, dir_, seed_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<Model> loaded(int64_t max_tokens, int64_t max_seqs) {
    auto m = FluxModel::from_config(tiny_flux_json(), "tiny-flux");
    LoadOptions o;
    o.checkpoint = dir_;
    o.max_tokens = max_tokens;
    o.max_seqs = max_seqs;
    m->load(o);
    return m;
  }
  FluxConfig config_ = tiny_flux_config();
  uint64_t seed_ = fk::test::seed_for("flux_cpu");
  fs::path dir_;
  WeightMap weights_;
};

TEST_F(FluxCpu, ForwardMatchesTheReference) {
  // Two samples of 5 text + 3x4 image tokens, different timesteps and guidance.
  const FluxBatch b = make_flux_batch(config_, 2, 5, 3, 4, seed_ + 1, Device::cpu());
  auto model = loaded(64, 4);
  const StepInputs in = b.step();
  model->plan(in, nullptr);
  const TensorView out = model->forward(in, nullptr);
  const Mat want = FluxReference(config_, weights_, round_bf16).forward(b.ref);
  const Agreement a = agreement(out, want);
  std::printf("[ flux   ] CPU forward vs reference: relative L2 %.4g, cosine %.6f, max abs %.4g\n", a.rel_l2, a.cosine,
              a.max_abs);
  // bf16 activations through 4 blocks: about 1% relative error; a wrong chunk order,
  // rotation or stream swap gives O(1).
  EXPECT_LT(a.rel_l2, 0.03) << "max abs error " << a.max_abs;
  EXPECT_GT(a.cosine, 0.999);
}

TEST_F(FluxCpu, SamplesAreIndependent) {
  const FluxBatch two = make_flux_batch(config_, 2, 4, 2, 3, seed_ + 2, Device::cpu());
  auto model = loaded(64, 4);
  StepInputs in = two.step();
  model->plan(in, nullptr);
  Tensor both = Tensor::empty({12, config_.out_features()}, DType::bf16);
  const TensorView o2 = model->forward(in, nullptr);
  std::memcpy(both.data(), o2.data, both.nbytes());
  // Sample 1 alone: its rows of every input.
  FluxBatch one = two;
  auto tail = [](const Tensor& t, int64_t first, int64_t n) {
    Tensor r = Tensor::empty({n, t.size(1)}, t.dtype());
    std::memcpy(r.data(), static_cast<const char*>(t.data()) + first * t.size(1) * dtype_size(t.dtype()), r.nbytes());
    return r;
  };
  one.hidden_states = tail(two.hidden_states, 6, 6);
  one.encoder_hidden_states = tail(two.encoder_hidden_states, 4, 4);
  one.pooled = tail(two.pooled, 1, 1);
  one.timestep = Tensor::empty({1}, DType::f32);
  one.timestep.data_as<float>()[0] = two.timestep.data_as<float>()[1];
  one.guidance = Tensor::empty({1}, DType::f32);
  one.guidance.data_as<float>()[0] = two.guidance.data_as<float>()[1];
  in = one.step();
  model->plan(in, nullptr);
  const TensorView o1 = model->forward(in, nullptr);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < config_.out_features(); ++j)
      ASSERT_EQ(get(o1, r, j), get(both.view(), 6 + r, j)) << "row " << r << " col " << j;
}

TEST_F(FluxCpu, StepInputErrors) {
  auto model = loaded(40, 2);
  FluxBatch b = make_flux_batch(config_, 2, 4, 2, 3, seed_ + 3, Device::cpu());
  StepInputs in = b.step();
  // No guidance for a guidance-embedded model.
  StepInputs no_guidance = in;
  no_guidance.tensors.pop_back();
  EXPECT_NE(error_of([&] { model->plan(no_guidance, nullptr); }).find("step input 'guidance' is missing"),
            std::string::npos);
  b.guidance.data_as<float>()[1] = -1.f;
  EXPECT_NE(error_of([&] { model->plan(b.step(), nullptr); }).find("guidance scale -1 of sample 1 is negative"),
            std::string::npos);
  b.guidance.data_as<float>()[1] = 3.f;
  // More joint tokens than loaded for: 2 x (4 + 25) > 40.
  const FluxBatch big = make_flux_batch(config_, 2, 4, 5, 5, seed_ + 4, Device::cpu());
  EXPECT_NE(error_of([&] { model->plan(big.step(), nullptr); }).find("more than the 40 the model was loaded for"),
            std::string::npos);
  // hidden_states of the wrong length for the plan.
  model->plan(in, nullptr);
  StepInputs bad = in;
  TensorView hs = b.hidden_states.view();
  hs.shape[0] = 5;
  bad.tensors[0].second = hs;
  EXPECT_NE(error_of([&] { model->forward(bad, nullptr); }).find("hidden_states must be [12, 16]"), std::string::npos);
}

TEST(FluxModel, CheckpointErrorsNameTheTensor) {
  const FluxConfig c = tiny_flux_config();
  const fs::path dir = fs::temp_directory_path() / ("fk_flux_bad_" + std::to_string(fk::test::seed_for("flux_bad")));
  fs::create_directories(dir);
  Tensor t = Tensor::empty({128, 16}, DType::f32);
  safetensors::save(dir / "diffusion_pytorch_model.safetensors", {{"x_embedder.weight", t.view()}});
  auto m = FluxModel::from_config(tiny_flux_json(), "tiny-flux");
  LoadOptions o;
  o.checkpoint = dir;
  EXPECT_NE(error_of([&] { m->load(o); }).find("has no tensor 'x_embedder.bias'"), std::string::npos);
  Tensor wrong = Tensor::empty({128, 17}, DType::f32);
  safetensors::save(dir / "diffusion_pytorch_model.safetensors", {{"x_embedder.weight", wrong.view()}});
  EXPECT_NE(error_of([&] { m->load(o); }).find("'x_embedder.weight' has shape [128, 17] but the config implies [128, 16]"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fk::models::diffusion
