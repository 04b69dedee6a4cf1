// Capture for the Denoise pattern (FLUX.1): one step of the denoising loop — the
// transformer's forward and the Euler update, every op call recorded as capture.h records
// an engine run. The L3 block ops (flux_double_block, flux_single_block) are recorded with
// their parts nested in them. Every step of the loop makes the same calls (only sigma
// changes), so one step stands for all of them; the call counts are one step's.
// The workloads are image shapes:
//   "tiny"     1 image of 64 x 64 pixels (16 latent tokens), 8 text tokens (CPU tests)
//   "Npx"      1 image of N x N pixels with 512 text tokens (FluxPipeline's
//              max_sequence_length): "1024px" (4096 latent tokens), "512px" (1024)
//   "BxNpx"    B images of N x N pixels, 512 text tokens each
// N is a multiple of 16 (the VAE's 8x and FLUX's 2 x 2 packing). Timed end-to-end runs
// (e2e_denoise_run.h) run `steps` steps of the loop: 2 for tiny, 28 (FLUX.1-dev's
// default) otherwise.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/capture/capture.h"
#include "models/registry.h"

namespace fk::models::diffusion {
class FluxModel;
}

namespace fk::e2e {

struct DenoiseWorkload {
  std::string name;
  int64_t batch = 1;
  int64_t height = 1024, width = 1024;  // pixels
  int64_t text_len = 512;               // prompt tokens per image
  int64_t steps = 28;                   // steps of a timed run
  int64_t image_tokens() const { return (height / 16) * (width / 16); }
  nlohmann::json to_json() const;
};

// Throws naming the workload when it is none of the forms above.
DenoiseWorkload denoise_workload(const std::string& name);

// The FLUX transformer of `model`, or a named error when it is no FLUX.1-style model of
// the Denoise pattern (`what`: the caller, for the message).
models::diffusion::FluxModel& as_flux(models::Model& model, const models::ModelSource& src, const char* what);

struct DenoiseCaptureOptions {
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::bf16;
  uint64_t seed = 0;  // dummy weights, latents and prompt embeddings
};

// Loads the transformer of `model` (a preset with dummy weights or a checkpoint folder)
// for the workload's batch and records one step of the Denoise runner's loop, after one
// unrecorded step (lazy set-up is no op time). Throws naming the model when it is not a
// FLUX.1-style transformer, or the workload when the runner refuses it.
CaptureResult capture_denoise(const models::ModelSource& model, const DenoiseWorkload& workload,
                              const DenoiseCaptureOptions& options);

}  // namespace fk::e2e
