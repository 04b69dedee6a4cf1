// `fk rollout --model M`: Oasis's world-model rollout (serving/denoise/oasis_rollout.h): from
// prompt latent frames and an action per frame, each new frame denoised by DDIM steps of the
// DiT over the sliding window of frames. The ViT VAE is not in the engine yet: the prompt is
// a random latent frame of the seed (actions random 0/1 vectors of it) and the result the
// latent frames (written as safetensors with --out), with an XXH64 checksum of their bytes,
// the time and the frames per second.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/latents_report.h"
#include "cli/model_lookup.h"
#include "cli/variant_option.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/world/oasis/oasis_model.h"
#include "serving/denoise/oasis_rollout.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct RolloutCli {
  std::string model = "tiny-oasis";
  std::string device = "auto";
  std::string dtype = "bf16";
  std::string out;
  std::string json_out;
  serving::denoise::OasisRolloutRequest request;
  uint64_t weight_seed = 0;
  std::vector<std::string> variants;
};

void run(RolloutCli& o) {
  select_variants(o.variants);
  std::string device = o.device;
  if (device == "auto") device = rt::cuda_available() ? "cuda" : "cpu";
  FK_CHECK(device == "cpu" || device == "cuda", "rollout: --device must be cpu, cuda or auto, got ", o.device);
  FK_CHECK(o.dtype == "f16" || o.dtype == "bf16", "rollout: --dtype must be f16 or bf16, got ", o.dtype);
  const models::ModelSource src = lookup_model(o.model, models::RunPattern::denoise, device, "fk rollout");
  std::unique_ptr<models::Model> model = models::create_model_from_config(src.config_json, src.source);
  const auto* oasis = dynamic_cast<const models::world::OasisModel*>(model.get());
  FK_CHECK(oasis != nullptr, "rollout: model '", o.model, "' (", src.registration->architecture,
           ") is not a world model with a rollout; `fk denoise` runs the other Denoise models");
  const auto& r = o.request;
  FK_CHECK(r.clips >= 1, "rollout: --clips must be at least 1, got ", r.clips);
  const int64_t window = std::clamp<int64_t>(r.frames, 1, oasis->config().max_frames);
  models::LoadOptions lo = latents_load_options(src, device, o.dtype, o.weight_seed);
  lo.max_seqs = r.clips * window;
  lo.max_tokens = lo.max_seqs * oasis->config().frame_tokens();
  model->load(lo);
  serving::denoise::OasisRollout rollout(*model, lo);
  const serving::denoise::OasisRolloutResult res = rollout.run(r);

  const std::string checksum = latents_checksum(res.latents);
  json j = latents_summary(o.model, src, device, o.dtype);
  j.update({{"clips", r.clips},
            {"frames", r.frames},
            {"prompt_frames", r.prompt_frames},
            {"ddim_steps", r.ddim_steps},
            {"seed", r.seed},
            {"prompt", "a random latent frame of the seed and random 0/1 actions (the VAE is not in the engine yet)"},
            {"generated_frames", res.generated_frames},
            {"forward_passes", res.forward_passes},
            {"seconds", res.seconds},
            {"frames_per_second", res.frames_per_second()},
            {"latents_shape", {res.latents.size(0), res.latents.size(1)}},
            {"checksum", checksum},
            {"checksum_of", "XXH64 of the latent patches' bytes after the rollout"}});
  std::printf(
      "%lld clip(s) of %lld frames from %lld prompt frame(s), %lld DDIM steps: %.3f s, %.2f frames/s "
      "(%lld forward passes)\n",
      static_cast<long long>(r.clips), static_cast<long long>(r.frames), static_cast<long long>(r.prompt_frames),
      static_cast<long long>(r.ddim_steps), res.seconds, res.frames_per_second(),
      static_cast<long long>(res.forward_passes));
  report_latents(res.latents, checksum, o.out, o.json_out, j, "rollout");
}

void setup(CLI::App& app) {
  static RolloutCli o;
  auto* cmd = app.add_subcommand("rollout",
                                 "A world model's rollout (Oasis): latent frames from a prompt frame and "
                                 "an action per frame, DDIM steps per frame; frames per second");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Model dtype: f16 or bf16")->capture_default_str();
  cmd->add_option("--frames", o.request.frames, "Frames of each clip, prompt included")->capture_default_str();
  cmd->add_option("--prompt-frames", o.request.prompt_frames, "Prompt frames")->capture_default_str();
  cmd->add_option("--steps", o.request.ddim_steps, "DDIM steps per frame")->capture_default_str();
  cmd->add_option("--clips", o.request.clips, "Clips rolled out together")->capture_default_str();
  cmd->add_option("--seed", o.request.seed, "Seed of the prompt, the actions and the frames' noise")
      ->capture_default_str();
  cmd->add_option("--weight-seed", o.weight_seed, "Seed of dummy weights (presets)")->capture_default_str();
  cmd->add_option("--out", o.out, "Write the latent frames as safetensors (tensor 'latents', patch layout)");
  cmd->add_option("--json-out", o.json_out, "Also write the summary as JSON to this file");
  add_variant_option(cmd, o.variants);
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
