#include "harness/e2e/e2e_denoise_run.h"

#include <algorithm>

#include "core/safetensors/safetensors.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/capture/capture_denoise.h"
#include "harness/e2e/e2e_output_compare.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/time/stats.h"
#include "models/diffusion/flux/flux_model.h"
#include "models/registry.h"
#include "serving/denoise/denoise_runner.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

// The inputs' seed: both sides draw the same latents and prompt embeddings.
constexpr uint64_t kDenoiseInputSeed = 12345;
constexpr float kGuidance = 3.5f;  // FluxPipeline's default for FLUX.1-dev

// The transformer's flow for the initial latents at the first sigma, with FluxPipeline's
// position ids (text zeros; image (0, row, column) of the packed grid).
std::vector<float> first_velocity(models::diffusion::FluxModel& flux, const DenoiseWorkload& w, const Tensor& latents,
                                  const Tensor& prompt, const Tensor& pooled, float sigma) {
  const int64_t b = w.batch, cols = w.width / 16, li = w.image_tokens();
  std::vector<float> img(static_cast<size_t>(li * 3), 0.f);
  for (int64_t i = 0; i < li; ++i) {
    img[static_cast<size_t>(i * 3 + 1)] = static_cast<float>(i / cols);
    img[static_cast<size_t>(i * 3 + 2)] = static_cast<float>(i % cols);
  }
  const Tensor img_ids = host_f32(img, {li, 3});
  const Tensor txt_ids = host_f32(std::vector<float>(static_cast<size_t>(w.text_len * 3), 0.f), {w.text_len, 3});
  const Tensor timestep = host_f32(std::vector<float>(static_cast<size_t>(b), sigma), {b});
  const Tensor guidance = host_f32(std::vector<float>(static_cast<size_t>(b), kGuidance), {b});
  models::StepInputs in;
  in.tensors = {{"hidden_states", latents.view()}, {"encoder_hidden_states", prompt.view()},
                {"pooled_projections", pooled.view()}, {"timestep", timestep.view()},
                {"txt_ids", txt_ids.view()}, {"img_ids", img_ids.view()}};
  if (flux.config().guidance_embeds) in.tensors.emplace_back("guidance", guidance.view());
  flux.plan(in, nullptr);
  return host_floats(flux.forward(in, nullptr));
}

}  // namespace

json run_denoise_workload(const DenoiseRunOptions& o) {
  FK_CHECK(o.iters >= 1, "e2e: iters must be at least 1");
  const auto loaded = install_candidates(o.installs, o.backend);
  models::ModelSource src = models::resolve_model(o.model);
  if (o.dummy_weights) src.checkpoint.clear();
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  models::diffusion::FluxModel& flux = as_flux(*m, src, "e2e");
  const DenoiseWorkload w = denoise_workload(o.workload);
  const int64_t b = w.batch, li = w.image_tokens();
  models::LoadOptions lo;
  lo.device = o.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_seqs = b;
  lo.max_tokens = b * (w.text_len + li);
  flux.load(lo);
  const auto& c = flux.config();
  auto normal = [&](const Shape& shape, uint64_t offset) {
    Tensor t = Tensor::empty(shape, lo.dtype, lo.device);
    fill_normal(t.view(), kDenoiseInputSeed, offset, 0.f, 1.f);
    return t;
  };
  const Tensor latents = normal({b * li, c.in_channels}, 0);
  const Tensor prompt = normal({b * w.text_len, c.joint_attention_dim}, 1);
  const Tensor pooled = normal({b, c.pooled_projection_dim}, 2);

  const serving::denoise::FlowMatchEulerConfig sched;
  const auto schedule = serving::denoise::flux_schedule(sched, w.steps, li);
  const std::vector<float> velocity =
      first_velocity(flux, w, latents, prompt, pooled, schedule.timesteps.front() / 1000.0f);

  serving::denoise::DenoiseRunner runner(flux, lo, sched);
  serving::denoise::DenoiseRequest r;
  r.batch = b;
  r.height = w.height;
  r.width = w.width;
  r.text_len = w.text_len;
  r.steps = w.steps;
  r.guidance_scale = kGuidance;
  r.latents = latents;  // the runner updates its own copy
  r.prompt_embeds = prompt;
  r.pooled_prompt_embeds = pooled;
  serving::denoise::DenoiseResult res = runner.run(r);  // warm-up: lazy set-up is no model time
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    res = runner.run(r);
    times.push_back(res.seconds);
  }
  const std::vector<float> final_latents = host_floats(res.latents.view());
  const double elapsed = bench::median(times);
  json result = {{"pattern", "denoise"},
                 {"outputs", {safetensors::hash_hex(safetensors::content_hash64(res.latents.data(), res.latents.nbytes()))}},
                 {"elapsed_s", elapsed},
                 {"elapsed_s_iters", times},
                 {"images", b},
                 {"steps", w.steps},
                 {"images_per_s", static_cast<double>(b) / elapsed},
                 {"seconds_per_step", elapsed / static_cast<double>(w.steps)},
                 {"backend", o.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 {"installed", json::array()}};
  for (const auto& [op, lib] : o.installs) result["installed"].push_back({{"op", op}, {"library", lib.string()}});

  const Shape shape = {b * li, c.in_channels};
  if (!o.teacher_out.empty()) {
    const Tensor v = host_f32(velocity, shape), l = host_f32(final_latents, shape);
    safetensors::save(o.teacher_out, {{"velocity", v.view()}, {"latents", l.view()}});
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    const TensorView want_v = f.view("velocity"), want_l = f.view("latents");
    FK_CHECK(want_v.numel() == static_cast<int64_t>(velocity.size()) &&
                 want_l.numel() == static_cast<int64_t>(final_latents.size()),
             "e2e: the baseline's velocity and latents (", want_v.numel(), " and ", want_l.numel(),
             " values) do not match this run's ", velocity.size());
    const Agreement gv = agreement(host_floats(want_v), velocity);
    const Agreement gl = agreement(host_floats(want_l), final_latents);
    result["agreement"] = {{"values", static_cast<int64_t>(velocity.size())},
                           {"velocity_rel_err", gv.rel_l2},
                           {"velocity_cosine", gv.cosine},
                           {"velocity_max_abs_err", gv.max_abs},
                           {"latents_rel_err", gl.rel_l2},
                           {"latents_cosine", gl.cosine},
                           {"latents_max_abs_err", gl.max_abs}};
  }
  return result;
}

json compare_denoise_runs(const json& base, const json& cand) {
  return compare_output_runs(
      base, cand, {"images_per_s", "steps"},
      {at_most("velocity_rel_err", kMaxVelocityRelErr,
               "the transformer's velocity differs from the baseline's by a relative L2 error of "),
       at_most("latents_rel_err", kMaxLatentRelErr,
               concat("the latents after ", cand.value("steps", 0),
                      " steps differ from the baseline's by a relative L2 error of "))});
}

}  // namespace fk::e2e
