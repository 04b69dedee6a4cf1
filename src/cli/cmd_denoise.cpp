// `fk denoise --model M`: the Denoise pattern's step loop (serving/denoise) for a FLUX.1
// transformer: seeded latents, FluxPipeline's flow-match Euler schedule, embedded guidance.
// The text encoders and the VAE are not in the engine yet: the prompt embeddings are
// random draws of the seed and the result is the packed latents (written as safetensors
// with --out), with an XXH64 checksum of their bytes and the time per step.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/latents_report.h"
#include "cli/model_lookup.h"
#include "fk/status.h"
#include "serving/denoise/denoise_runner.h"

namespace fk::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct DenoiseCli {
  LatentsOptions common{.model = "tiny-flux"};
  std::string scheduler_config;
  serving::denoise::DenoiseRequest request;
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  FK_CHECK(f.good(), "denoise: cannot read ", p.string());
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void run(DenoiseCli& o) {
  const std::string device = o.common.resolve("denoise");
  const models::ModelSource src = lookup_model(o.common.model, models::RunPattern::denoise, device, "fk denoise");

  // The scheduler: --scheduler-config, else a diffusers pipeline folder's
  // scheduler/scheduler_config.json beside transformer/, else FLUX.1-dev's.
  serving::denoise::FlowMatchEulerConfig sched;
  fs::path sched_path = o.scheduler_config;
  if (sched_path.empty() && !src.checkpoint.empty() &&
      fs::exists(src.checkpoint / ".." / "scheduler" / "scheduler_config.json"))
    sched_path = src.checkpoint / ".." / "scheduler" / "scheduler_config.json";
  if (!sched_path.empty()) sched = serving::denoise::parse_flow_match_euler_config(read_file(sched_path), sched_path.string());

  const auto& r = o.request;
  std::unique_ptr<models::Model> model = models::create_model_from_config(src.config_json, src.source);
  models::LoadOptions lo = latents_load_options(src, device, o.common.dtype, o.common.weight_seed);
  lo.max_seqs = std::max<int64_t>(r.batch, 1);
  lo.max_tokens = lo.max_seqs * (std::max<int64_t>(r.text_len, 1) + std::max<int64_t>(r.height / 16, 1) *
                                                                       std::max<int64_t>(r.width / 16, 1));
  model->load(lo);
  serving::denoise::DenoiseRunner runner(*model, lo, sched);
  const serving::denoise::DenoiseResult res = runner.run(r);

  const std::string checksum = latents_checksum(res.latents);
  json j = latents_summary(o.common.model, src, device, o.common.dtype);
  j.update({{"batch", r.batch},
            {"height", r.height},
            {"width", r.width},
            {"steps", r.steps},
            {"guidance_scale", r.guidance_scale},
            {"seed", r.seed},
            {"text_len", r.text_len},
            {"prompt", "random embeddings of the seed (the text encoders are not in the engine yet)"},
            {"image_seq_len", res.image_seq_len},
            {"sigmas", res.schedule.sigmas},
            {"seconds", res.seconds},
            {"seconds_per_step", res.seconds / static_cast<double>(r.steps)},
            {"latents_shape", {res.latents.size(0), res.latents.size(1)}},
            {"checksum", checksum},
            {"checksum_of", "XXH64 of the packed latents' bytes after the last step"}});
  std::printf("%lld x %lldx%lld, %lld steps, guidance %.2f: %.3f s (%.3f s per step)\n",
              static_cast<long long>(r.batch), static_cast<long long>(r.width), static_cast<long long>(r.height),
              static_cast<long long>(r.steps), r.guidance_scale, res.seconds,
              res.seconds / static_cast<double>(r.steps));
  report_latents(res.latents, checksum, o.common.out, o.common.json_out, j, "denoise");
}

void setup(CLI::App& app) {
  static DenoiseCli o;
  auto* cmd = app.add_subcommand("denoise", "The Denoise step loop of a FLUX.1 transformer on seeded latents and "
                                            "random prompt embeddings; packed latents out, with a checksum");
  o.common.add_to(cmd, "Write the packed latents as safetensors (tensor 'latents')");
  cmd->add_option("--height", o.request.height, "Image height in pixels (multiple of 16)")->capture_default_str();
  cmd->add_option("--width", o.request.width, "Image width in pixels (multiple of 16)")->capture_default_str();
  cmd->add_option("--steps", o.request.steps, "Denoising steps")->capture_default_str();
  cmd->add_option("--guidance", o.request.guidance_scale, "Embedded guidance scale (FLUX.1-dev)")->capture_default_str();
  cmd->add_option("--batch", o.request.batch, "Images")->capture_default_str();
  cmd->add_option("--text-len", o.request.text_len, "Prompt tokens (T5 sequence length)")->capture_default_str();
  cmd->add_option("--seed", o.request.seed, "Seed of the latents and prompt embeddings")->capture_default_str();
  cmd->add_option("--scheduler-config", o.scheduler_config,
                  "diffusers scheduler_config.json (default: a pipeline folder's, else FLUX.1-dev's)");
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
