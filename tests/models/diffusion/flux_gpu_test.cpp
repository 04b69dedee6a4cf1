// FLUX.1 on the CUDA backend: tiny-flux's forward of two samples against the double-
// precision reference written from diffusers (as the CPU test), the Denoise runner's
// latents on CUDA against the CPU backend's from the same seed, and the flux.1-dev preset
// (dummy weights, 24 GB in bf16) for two steps at 1024x1024 — finite latents, time per
// step printed.
#include <gtest/gtest.h>

#include <cmath>

#include "models/diffusion/flux_test_util.h"
#include "serving/denoise/denoise_runner.h"
#include "support/test_seed.h"

namespace fk::models::diffusion::test {
namespace {

namespace dn = serving::denoise;

class FluxGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fk_flux_gpu_test_" + std::to_string(seed_));
    weights_ = write_random_checkpoint(config_, dir_, seed_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<Model> loaded(Device device, LoadOptions& o) {
    auto m = FluxModel::from_config(tiny_flux_json(), "tiny-flux");
    o.device = device;
    o.checkpoint = dir_;
    o.max_tokens = 128;
    o.max_seqs = 2;
    m->load(o);
    return m;
  }
  FluxConfig config_ = tiny_flux_config();
  uint64_t seed_ = fk::test::seed_for("flux_gpu");
  fs::path dir_;
  WeightMap weights_;
};

TEST_F(FluxGpu, ForwardMatchesTheReference) {
  FK_REQUIRE_GPU();
  const FluxBatch b = make_flux_batch(config_, 2, 5, 3, 4, seed_ + 1, Device::cuda());
  LoadOptions o;
  auto model = loaded(Device::cuda(), o);
  const StepInputs in = b.step();
  model->plan(in, nullptr);
  const TensorView out = model->forward(in, nullptr);
  rt::device_synchronize();
  const Agreement a = agreement(out, FluxReference(config_, weights_, round_bf16).forward(b.ref));
  std::printf("[ flux   ] CUDA forward vs reference: relative L2 %.4g, cosine %.6f\n", a.rel_l2, a.cosine);
  EXPECT_LT(a.rel_l2, 0.03);
  EXPECT_GT(a.cosine, 0.999);
}

TEST_F(FluxGpu, DenoiseAgreesWithTheCpuBackend) {
  FK_REQUIRE_GPU();
  dn::DenoiseRequest r;
  r.batch = 2, r.height = 64, r.width = 96, r.steps = 4, r.text_len = 8, r.seed = seed_;
  LoadOptions oc, og;
  auto cpu = loaded(Device::cpu(), oc);
  auto gpu = loaded(Device::cuda(), og);
  const dn::DenoiseResult want = dn::DenoiseRunner(*cpu, oc, dn::FlowMatchEulerConfig{}).run(r);
  const dn::DenoiseResult got = dn::DenoiseRunner(*gpu, og, dn::FlowMatchEulerConfig{}).run(r);
  Mat w(want.latents.size(0), want.latents.size(1));
  for (int64_t i = 0; i < w.rows; ++i)
    for (int64_t j = 0; j < w.cols; ++j) w.at(i, j) = get(want.latents.view(), i, j);
  const Agreement a = agreement(got.latents.view(), w);
  std::printf("[ flux   ] 4-step denoise CUDA vs CPU: relative L2 %.4g, cosine %.6f\n", a.rel_l2, a.cosine);
  EXPECT_LT(a.rel_l2, 0.03);
  EXPECT_GT(a.cosine, 0.999);
}

TEST(FluxGpuProduction, Flux1DevTwoStepsAt1024) {
  FK_REQUIRE_GPU();
  auto model = create_model("flux.1-dev");
  LoadOptions o;
  o.device = Device::cuda();
  o.max_seqs = 1;
  o.max_tokens = 512 + 4096;
  model->load(o);
  dn::DenoiseRequest r;
  r.steps = 2;
  const dn::DenoiseResult res = dn::DenoiseRunner(*model, o, dn::FlowMatchEulerConfig{}).run(r);
  ASSERT_EQ(res.latents.size(0), 4096);
  ASSERT_EQ(res.latents.size(1), 64);
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < res.latents.numel(); ++i)
    nonfinite += !std::isfinite(get(res.latents.view(), i / 64, i % 64));
  EXPECT_EQ(nonfinite, 0);
  std::printf("[ flux   ] flux.1-dev 1024x1024 (4096 + 512 tokens), dummy weights: %.3f s per step\n",
              res.seconds / static_cast<double>(r.steps));
}

}  // namespace
}  // namespace fk::models::diffusion::test
