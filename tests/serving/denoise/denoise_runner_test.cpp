// The Denoise runner with tiny-flux on the CPU: a two-step run from given latents and prompt
// embeddings against the double-precision FLUX reference (flux_reference.h) stepped with
// the same schedule; seeded runs reproduce their latents and different seeds differ; the
// request's named errors; a model of another pattern is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "models/diffusion/flux_test_util.h"
#include "serving/denoise/denoise_runner.h"
#include "support/test_seed.h"

namespace fk::serving::denoise {
namespace {

using namespace models::diffusion;
using namespace models::diffusion::test;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class DenoiseCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fk_denoise_test_" + std::to_string(seed_));
    weights_ = write_random_checkpoint(config_, dir_, seed_);
    model_ = FluxModel::from_config(tiny_flux_json(), "tiny-flux");
    options_.checkpoint = dir_;
    options_.max_tokens = 64;
    options_.max_seqs = 2;
    model_->load(options_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  FluxConfig config_ = tiny_flux_config();
  uint64_t seed_ = fk::test::seed_for("denoise_cpu");
  fs::path dir_;
  WeightMap weights_;
  std::unique_ptr<models::Model> model_;
  models::LoadOptions options_;
};

TEST_F(DenoiseCpu, TwoStepsMatchTheReferenceLoop) {
  // Two images of 32x48 pixels (2x3 packed tokens), 4 prompt tokens, guidance 3.5.
  const FluxBatch b = make_flux_batch(config_, 2, 4, 2, 3, seed_ + 1, Device::cpu());
  DenoiseRequest r;
  r.batch = 2, r.height = 32, r.width = 48, r.steps = 2, r.text_len = 4, r.guidance_scale = 3.5f;
  r.latents = b.hidden_states;
  r.prompt_embeds = b.encoder_hidden_states;
  r.pooled_prompt_embeds = b.pooled;
  DenoiseRunner runner(*model_, options_, FlowMatchEulerConfig{});
  const DenoiseResult got = runner.run(r);
  ASSERT_EQ(got.image_seq_len, 6);
  ASSERT_EQ(got.schedule.sigmas.size(), 3u);

  FluxReferenceInputs in = b.ref;
  in.guidance = {3.5, 3.5};
  const FluxReference ref(config_, weights_, round_bf16);
  Mat x = in.hidden_states;
  for (size_t step = 0; step < 2; ++step) {
    in.hidden_states = x;
    const double t = got.schedule.timesteps[step] / 1000.0f;
    in.timestep = {t, t};
    const Mat flow = ref.forward(in);
    for (size_t i = 0; i < x.v.size(); ++i) x.v[i] = round_bf16(x.v[i] + got.schedule.dt(step) * flow.v[i]);
  }
  const Agreement a = agreement(got.latents.view(), x);
  std::printf("[ flux   ] 2-step denoise vs reference: relative L2 %.4g, cosine %.6f\n", a.rel_l2, a.cosine);
  EXPECT_LT(a.rel_l2, 0.02);
  EXPECT_GT(a.cosine, 0.9998);
  // The latents moved: a skipped update would leave them as given.
  const Agreement unchanged = agreement(got.latents.view(), b.ref.hidden_states);
  EXPECT_GT(unchanged.rel_l2, 0.1);
}

TEST_F(DenoiseCpu, SeedsReproduce) {
  DenoiseRunner runner(*model_, options_, FlowMatchEulerConfig{});
  DenoiseRequest r;
  r.height = 64, r.width = 64, r.steps = 2, r.text_len = 8, r.seed = seed_;
  const DenoiseResult a = runner.run(r), again = runner.run(r);
  ASSERT_EQ(a.latents.nbytes(), again.latents.nbytes());
  EXPECT_EQ(std::memcmp(a.latents.data(), again.latents.data(), a.latents.nbytes()), 0);
  r.seed = seed_ + 1;
  const DenoiseResult other = runner.run(r);
  EXPECT_NE(std::memcmp(a.latents.data(), other.latents.data(), a.latents.nbytes()), 0);
}

TEST_F(DenoiseCpu, NamedErrors) {
  DenoiseRunner runner(*model_, options_, FlowMatchEulerConfig{});
  DenoiseRequest r;
  r.height = 40, r.width = 64, r.steps = 2, r.text_len = 8;
  EXPECT_NE(error_of([&] { runner.run(r); }).find("resolution 64x40 is not supported"), std::string::npos);
  r.height = 64, r.steps = 0;
  EXPECT_NE(error_of([&] { runner.run(r); }).find("steps must be at least 1, got 0"), std::string::npos);
  r.steps = 2, r.guidance_scale = -1.f;
  EXPECT_NE(error_of([&] { runner.run(r); }).find("guidance scale must not be negative"), std::string::npos);
  r.guidance_scale = 3.5f;
  r.prompt_embeds = Tensor::empty({7, config_.joint_attention_dim}, DType::bf16);
  EXPECT_NE(error_of([&] { runner.run(r); }).find("prompt_embeds must be bf16[8, 32]"), std::string::npos);
  r.prompt_embeds = Tensor{};
  r.height = r.width = 256;  // 256 image + 8 text tokens: past the 64 the model was loaded for
  EXPECT_NE(error_of([&] { runner.run(r); }).find("max_tokens"), std::string::npos);
}

TEST(DenoiseRunner, RefusesOtherPatterns) {
  auto encoder = models::create_model("tiny-bge-m3");
  models::LoadOptions o;
  o.max_tokens = 16, o.max_seqs = 2;
  encoder->load(o);
  EXPECT_NE(error_of([&] { DenoiseRunner(*encoder, o, FlowMatchEulerConfig{}); }).find("not denoise"),
            std::string::npos);
}

}  // namespace
}  // namespace fk::serving::denoise
