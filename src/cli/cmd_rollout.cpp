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
#include "fk/status.h"
#include "models/world/oasis/oasis_model.h"
#include "serving/denoise/oasis_rollout.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct RolloutCli {
  LatentsOptions common{.model = "tiny-oasis"};
  serving::denoise::OasisRolloutRequest request;
};

void run(RolloutCli& o) {
  const std::string device = o.common.resolve("rollout");
  const models::ModelSource src = lookup_model(o.common.model, models::RunPattern::denoise, device, "fk rollout");
  std::unique_ptr<models::Model> model = models::create_model_from_config(src.config_json, src.source);
  const auto* oasis = dynamic_cast<const models::world::OasisModel*>(model.get());
  FK_CHECK(oasis != nullptr, "rollout: model '", o.common.model, "' (", src.registration->architecture,
           ") is not a world model with a rollout; `fk denoise` runs the other Denoise models");
  const auto& r = o.request;
  FK_CHECK(r.clips >= 1, "rollout: --clips must be at least 1, got ", r.clips);
  const int64_t window = std::clamp<int64_t>(r.frames, 1, oasis->config().max_frames);
  models::LoadOptions lo = latents_load_options(src, device, o.common.dtype, o.common.weight_seed);
  lo.max_seqs = r.clips * window;
  lo.max_tokens = lo.max_seqs * oasis->config().frame_tokens();
  model->load(lo);
  serving::denoise::OasisRollout rollout(*model, lo);
  const serving::denoise::OasisRolloutResult res = rollout.run(r);

  const std::string checksum = latents_checksum(res.latents);
  json j = latents_summary(o.common.model, src, device, o.common.dtype);
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
  report_latents(res.latents, checksum, o.common.out, o.common.json_out, j, "rollout");
}

void setup(CLI::App& app) {
  static RolloutCli o;
  auto* cmd = app.add_subcommand("rollout",
                                 "A world model's rollout (Oasis): latent frames from a prompt frame and "
                                 "an action per frame, DDIM steps per frame; frames per second");
  o.common.add_to(cmd, "Write the latent frames as safetensors (tensor 'latents', patch layout)");
  cmd->add_option("--frames", o.request.frames, "Frames of each clip, prompt included")->capture_default_str();
  cmd->add_option("--prompt-frames", o.request.prompt_frames, "Prompt frames")->capture_default_str();
  cmd->add_option("--steps", o.request.ddim_steps, "DDIM steps per frame")->capture_default_str();
  cmd->add_option("--clips", o.request.clips, "Clips rolled out together")->capture_default_str();
  cmd->add_option("--seed", o.request.seed, "Seed of the prompt, the actions and the frames' noise")
      ->capture_default_str();
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
