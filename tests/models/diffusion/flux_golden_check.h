// The FLUX.1 golden check shared by the CPU and GPU tests: tiny-flux's checkpoint and
// diffusers' outputs from tests/data/models/make_flux_goldens.py (tests/data/models/flux/,
// a pipeline's layout: transformer/, scheduler/, and the golden files):
// one transformer forward of two samples, FluxPipeline's two-step Euler loop through the
// Denoise runner, and FLUX.1-dev's shifted sigmas. The engine runs bf16 against diffusers'
// float32 on the same bf16-valued weights and inputs. Skips, naming the script, while the
// data has not been made (it needs torch and diffusers).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/safetensors/safetensors.h"
#include "models/diffusion/flux_test_util.h"
#include "serving/denoise/denoise_runner.h"

namespace fk::models::diffusion::test {

inline std::string flux_golden_dir() { return std::string(FK_SOURCE_DIR) + "/tests/data/models/flux"; }

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A float32 tensor of the golden file as a [rows, cols] matrix (its elements in order).
inline Mat golden_mat(const safetensors::File& f, const char* name, int64_t rows, int64_t cols) {
  const TensorView v = f.view(name);
  EXPECT_EQ(v.numel(), rows * cols) << name;
  Mat m(rows, cols);
  for (int64_t i = 0; i < rows * cols && i < v.numel(); ++i) m.v[static_cast<size_t>(i)] = static_cast<const float*>(v.data)[i];
  return m;
}

// Relative L2 error allowed for bf16 against float32 through four blocks (the CPU path
// against its own double reference is at about 0.006).
inline constexpr double kFluxGoldenRelTol = 0.03;

inline void check_flux_golden(Device device) {
  namespace dn = serving::denoise;
  const std::string dir = flux_golden_dir();
  if (!fs::exists(dir + "/golden.json"))
    GTEST_SKIP() << "no golden data in " << dir
                 << ": run tests/data/models/make_flux_goldens.py tests/data/models (torch, diffusers)";
  const nlohmann::json meta = nlohmann::json::parse(read_text(dir + "/golden.json"));
  const auto golden = safetensors::File::open(dir + "/golden.safetensors");
  const int64_t b = meta.at("batch"), lt = meta.at("text_len"), li = meta.at("image_seq_len");
  const std::string config_json = read_text(dir + "/transformer/config.json");
  const FluxConfig c = parse_flux_config(config_json, dir + "/transformer/config.json");
  auto model = FluxModel::from_config(config_json, dir + "/transformer/config.json");
  LoadOptions o;
  o.device = device;
  o.checkpoint = dir + "/transformer";
  o.max_tokens = b * (lt + li);
  o.max_seqs = b;
  model->load(o);

  // 1. One forward of B samples.
  {
    const Tensor hs = to_tensor(golden_mat(golden, "hidden_states", b * li, c.in_channels), DType::bf16, device);
    const Tensor ehs =
        to_tensor(golden_mat(golden, "encoder_hidden_states", b * lt, c.joint_attention_dim), DType::bf16, device);
    const Tensor pooled =
        to_tensor(golden_mat(golden, "pooled_projections", b, c.pooled_projection_dim), DType::bf16, device);
    StepInputs in;
    in.tensors = {{"hidden_states", hs.view()},      {"encoder_hidden_states", ehs.view()},
                  {"pooled_projections", pooled.view()}, {"timestep", golden.view("timestep")},
                  {"guidance", golden.view("guidance")}, {"txt_ids", golden.view("txt_ids")},
                  {"img_ids", golden.view("img_ids")}};
    model->plan(in, nullptr);
    const TensorView out = model->forward(in, nullptr);
    if (device.is_cuda()) rt::device_synchronize();  // a CUDA build's CPU run may have no driver
    const Agreement a = agreement(out, golden_mat(golden, "sample", b * li, c.out_features()));
    std::printf("[ flux   ] forward vs diffusers: relative L2 %.4g, cosine %.6f, max abs %.4g\n", a.rel_l2, a.cosine,
                a.max_abs);
    EXPECT_LT(a.rel_l2, kFluxGoldenRelTol);
    EXPECT_GT(a.cosine, 0.999);
  }

  // 2. FluxPipeline's loop through the Denoise runner, with the loop's scheduler config.
  {
    const nlohmann::json& loop = meta.at("loop");
    const dn::FlowMatchEulerConfig sched =
        dn::parse_flow_match_euler_config(read_text(dir + "/scheduler/scheduler_config.json"), "scheduler_config.json");
    dn::DenoiseRunner runner(*model, o, sched);
    dn::DenoiseRequest r;
    r.batch = 1;
    r.height = loop.at("height");
    r.width = loop.at("width");
    r.steps = loop.at("steps");
    r.guidance_scale = loop.at("guidance");
    r.text_len = lt;
    r.latents = to_tensor(golden_mat(golden, "loop_latents_in", li, c.in_channels), DType::bf16, Device::cpu());
    r.prompt_embeds = to_tensor(golden_mat(golden, "loop_prompt", lt, c.joint_attention_dim), DType::bf16, Device::cpu());
    r.pooled_prompt_embeds = to_tensor(golden_mat(golden, "loop_pooled", 1, c.pooled_projection_dim), DType::bf16, Device::cpu());
    const dn::DenoiseResult res = runner.run(r);
    const Mat sigmas = golden_mat(golden, "loop_sigmas", 1, r.steps + 1);
    for (int64_t i = 0; i <= r.steps; ++i)
      EXPECT_EQ(res.schedule.sigmas[static_cast<size_t>(i)], static_cast<float>(sigmas.v[static_cast<size_t>(i)])) << i;
    const Agreement a = agreement(res.latents.view(), golden_mat(golden, "loop_latents", li, c.in_channels));
    std::printf("[ flux   ] %lld-step loop vs diffusers: relative L2 %.4g, cosine %.6f\n",
                static_cast<long long>(r.steps), a.rel_l2, a.cosine);
    EXPECT_LT(a.rel_l2, kFluxGoldenRelTol);
    EXPECT_GT(a.cosine, 0.999);
  }

  // 3. FLUX.1-dev's dynamically shifted sigmas, value for value.
  {
    const dn::FlowMatchEulerConfig dev = dn::parse_flow_match_euler_config(meta.at("dev_scheduler").dump(), "dev");
    for (const auto& [name, steps, seq] : {std::tuple{"dev_sigmas_28_4096", int64_t{28}, int64_t{4096}},
                                           std::tuple{"dev_sigmas_4", int64_t{4}, li}}) {
      const Mat want = golden_mat(golden, name, 1, steps + 1);
      const dn::FlowMatchEulerSchedule s = dn::flux_schedule(dev, steps, seq);
      for (int64_t i = 0; i <= steps; ++i)
        EXPECT_EQ(s.sigmas[static_cast<size_t>(i)], static_cast<float>(want.v[static_cast<size_t>(i)])) << name << " " << i;
    }
  }
}

}  // namespace fk::models::diffusion::test
