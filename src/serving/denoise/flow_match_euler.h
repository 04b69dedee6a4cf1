// diffusers' FlowMatchEulerDiscreteScheduler as FLUX.1 runs it, on the host: the sigma
// schedule (FluxPipeline's linspace(1, 1/N, N), shifted by the resolution-dependent mu of
// calculate_shift, or by the static shift without dynamic shifting), the timesteps
// (sigma * num_train_timesteps) and the Euler update's dt between consecutive sigmas. The
// update itself runs on the device as the op flow_match_euler_step. Arithmetic follows
// diffusers' float32 numpy/torch order, so the schedule matches its values to the last bit
// in all but rare rounding ties.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fk::serving::denoise {

// scheduler/scheduler_config.json; the defaults are FLUX.1-dev's.
struct FlowMatchEulerConfig {
  int64_t num_train_timesteps = 1000;
  double shift = 3.0;
  bool use_dynamic_shifting = true;
  double base_shift = 0.5, max_shift = 1.15;
  int64_t base_image_seq_len = 256, max_image_seq_len = 4096;
  bool exponential_time_shift = true;  // time_shift_type "exponential" (else "linear")
};

// Parses scheduler_config.json; refuses, by name, the options the engine does not run
// (shift_terminal, invert_sigmas, karras / exponential / beta sigmas, stochastic sampling).
FlowMatchEulerConfig parse_flow_match_euler_config(std::string_view json, std::string_view source);

// FluxPipeline's calculate_shift: mu linear in the image sequence length (packed tokens),
// base_shift at base_image_seq_len, max_shift at max_image_seq_len.
double flux_mu(const FlowMatchEulerConfig& c, int64_t image_seq_len);

struct FlowMatchEulerSchedule {
  std::vector<float> sigmas;     // N + 1: the shifted sigmas, then 0
  std::vector<float> timesteps;  // N: sigma * num_train_timesteps (what the pipeline passes, / 1000, as timestep)
  float dt(size_t step) const { return sigmas[step + 1] - sigmas[step]; }
};

// The schedule of FluxPipeline for `steps` steps at `image_seq_len` packed tokens. Throws a
// named error for steps < 1.
FlowMatchEulerSchedule flux_schedule(const FlowMatchEulerConfig& c, int64_t steps, int64_t image_seq_len);

}  // namespace fk::serving::denoise
