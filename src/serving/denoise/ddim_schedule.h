// Oasis's diffusion-forcing DDIM sampler schedule, on the host: the sigmoid beta schedule
// (Jabri et al., "Scalable Adaptive Computation for Iterative Generation", fig. 8: start -3,
// end 3, tau 1, 1000 steps) and the noise levels of an N-step DDIM pass over it
// (linspace(-1, 999, N + 1), truncated to integers). The update of a v-prediction between two
// levels is linear in the sample and the prediction (ops::DdimStepArgs says how); its two
// coefficients come from here. alphas_cumprod follows the reference's arithmetic: betas in
// float64, clipped to [0, 0.999], then alphas and their running product in float32.
#pragma once
#include <cstdint>
#include <vector>

namespace fk::serving::denoise {

struct DdimSchedule {
  std::vector<float> alphas_cumprod;  // [max_noise_level]
  std::vector<int64_t> levels;        // [steps + 1]: levels[0] = -1 (clean), levels[steps] = max - 1

  // The coefficients (c_sample, c_output) of x' = c_sample x + c_output v, the step from
  // noise level `from` to `to` (to < 0: to the clean frame, x0).
  std::pair<double, double> step(int64_t from, int64_t to) const;
};

// Throws a named error unless steps >= 1 and max_noise_level > steps.
DdimSchedule ddim_schedule(int64_t steps, int64_t max_noise_level = 1000);

}  // namespace fk::serving::denoise
