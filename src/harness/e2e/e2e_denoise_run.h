// One run of an end-to-end evaluation of a FLUX.1 transformer (the Denoise pattern), in
// its own worker process as e2e_run.h is for Generate models: optionally with candidate
// kernels installed, on the workload's images (capture_denoise.h: "tiny", "Npx", "BxNpx")
// and inputs of a fixed seed (latents, prompt embeddings; the same on both sides):
//   velocity   one forward of the transformer at the schedule's first sigma: the flow it
//              predicts for the initial latents ([B * image tokens, channels])
//   timing     the Denoise runner's loop of `steps` steps, once unrecorded, then `iters`
//              times; elapsed_s is their median
//   latents    the packed latents after the loop
// The schedule is FLUX.1-dev's (FlowMatchEulerConfig's defaults) with guidance 3.5, for a
// checkpoint folder too: both sides run the same one.
// The baseline run writes its velocity and latents (teacher_out); the candidate run
// compares its own with them (teacher_in), by relative L2 error, cosine and largest
// difference. The result's fields match the other runs' where they mean the same
// ("pattern", "outputs": the latents' checksum, which the repeat runs compare for
// reproducibility, "elapsed_s", "backend", "installed").
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor_view.h"

namespace fk::e2e {

// Bounds of a candidate's outputs against the baseline run's, relative L2 error. The
// velocity is the transformer's output on identical inputs, so it isolates what the
// candidate computes; the latents add the loop (each step's velocity scaled by its dt, so
// they move less). Measured on tiny-flux (bf16, e2e_denoise_run_test): a gelu whose every
// output is truncated to bf16 instead of rounded (an honest kernel's worst rounding) moves
// the velocity by 0.005-0.006 and the latents by 0.004; gelu computed as SiLU by 0.055-0.09,
// gelu without its 1/2 by 0.3. The bf16 CUDA forward is within 0.03 of the CPU one
// (flux_gpu_test). The dummy weights amplify a change of every weight and input by their
// rounding (the f16 model against the bf16 one) to 0.2-0.4: the bounds are for candidates
// on one model, not across dtypes.
inline constexpr double kMaxVelocityRelErr = 0.03;
inline constexpr double kMaxLatentRelErr = 0.03;

struct DenoiseRunOptions {
  std::string model;  // a preset or checkpoint folder of a FLUX.1 transformer
  bool dummy_weights = false;  // a checkpoint folder's config with random weights
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::bf16;
  uint64_t seed = 0;  // dummy weights
  std::string workload = "tiny";
  int iters = 3;
  std::vector<std::pair<std::string, std::filesystem::path>> installs;  // op -> candidate library
  std::filesystem::path teacher_out, teacher_in;
};

nlohmann::json run_denoise_workload(const DenoiseRunOptions& options);

// The two sides' folded runs: speedup (ratio of the median loop times) and the verdict
// (INCORRECT when the candidate's velocity or latents are beyond the bounds, or were not
// compared).
nlohmann::json compare_denoise_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

}  // namespace fk::e2e
