// FLUX's flow-match Euler schedule against values computed with numpy the way diffusers
// computes them (FluxPipeline's linspace sigmas, calculate_shift's mu, the scheduler's
// float32 time shift), the static shift, dt, and the scheduler config's named refusals.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fk/status.h"
#include "serving/denoise/flow_match_euler.h"

namespace fk::serving::denoise {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// black-forest-labs/FLUX.1-dev scheduler/scheduler_config.json.
constexpr const char* kFluxDevScheduler = R"({
  "_class_name": "FlowMatchEulerDiscreteScheduler",
  "_diffusers_version": "0.30.0.dev0",
  "base_image_seq_len": 256,
  "base_shift": 0.5,
  "max_image_seq_len": 4096,
  "max_shift": 1.15,
  "num_train_timesteps": 1000,
  "shift": 3.0,
  "use_dynamic_shifting": true
})";

TEST(FlowMatchEuler, FluxMuIsLinearInTheImageTokens) {
  const FlowMatchEulerConfig c = parse_flow_match_euler_config(kFluxDevScheduler, "flux");
  EXPECT_DOUBLE_EQ(flux_mu(c, 256), 0.5);
  EXPECT_NEAR(flux_mu(c, 4096), 1.15, 1e-12);  // 1024x1024: 64 x 64 packed tokens
  EXPECT_NEAR(flux_mu(c, 1024), 0.63, 1e-12);  // 512x512
}

TEST(FlowMatchEuler, Flux1024x1024In28StepsMatchesDiffusers) {
  const FlowMatchEulerConfig c = parse_flow_match_euler_config(kFluxDevScheduler, "flux");
  const FlowMatchEulerSchedule s = flux_schedule(c, 28, 4096);
  ASSERT_EQ(s.sigmas.size(), 29u);
  ASSERT_EQ(s.timesteps.size(), 28u);
  // numpy: exp(mu) / (exp(mu) + (1 / linspace(1, 1/28, 28).astype(float32) - 1)), float32.
  EXPECT_EQ(s.sigmas[0], 1.0f);
  EXPECT_EQ(s.sigmas[1], 0.988408625125885f);
  EXPECT_EQ(s.sigmas[2], 0.9762224555015564f);
  EXPECT_EQ(s.sigmas[13], 0.7846716046333313f);
  EXPECT_EQ(s.sigmas[27], 0.10472089797258377f);
  EXPECT_EQ(s.sigmas[28], 0.0f);
  EXPECT_EQ(s.timesteps[1], 0.988408625125885f * 1000.0f);
  EXPECT_EQ(s.dt(27), -0.10472089797258377f);
  for (size_t i = 0; i < 28; ++i) EXPECT_LT(s.dt(i), 0) << "sigma must decrease at step " << i;
}

TEST(FlowMatchEuler, FourStepsAt512AndTheStaticShift) {
  FlowMatchEulerConfig c = parse_flow_match_euler_config(kFluxDevScheduler, "flux");
  const FlowMatchEulerSchedule s = flux_schedule(c, 4, 1024);
  EXPECT_EQ(s.sigmas[1], 0.8492348194122314f);
  EXPECT_EQ(s.sigmas[2], 0.652489423751831f);
  EXPECT_EQ(s.sigmas[3], 0.38494473695755005f);
  c.use_dynamic_shifting = false;  // shift * t / (1 + (shift - 1) t), shift 3
  const FlowMatchEulerSchedule st = flux_schedule(c, 4, 1024);
  EXPECT_EQ(st.sigmas[1], 0.8999999761581421f);
  EXPECT_EQ(st.sigmas[2], 0.75f);
  EXPECT_EQ(st.sigmas[3], 0.5f);
  const FlowMatchEulerSchedule one = flux_schedule(c, 1, 1024);
  ASSERT_EQ(one.sigmas.size(), 2u);
  EXPECT_EQ(one.sigmas[0], 1.0f);
}

TEST(FlowMatchEuler, NamedErrors) {
  const FlowMatchEulerConfig c = parse_flow_match_euler_config(kFluxDevScheduler, "flux");
  EXPECT_NE(error_of([&] { flux_schedule(c, 0, 4096); }).find("number of steps must be at least 1, got 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flow_match_euler_config(R"({"use_karras_sigmas": true})", "s"); })
                .find("use_karras_sigmas = true is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flow_match_euler_config(R"({"shift_terminal": 0.1})", "s"); })
                .find("shift_terminal is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_flow_match_euler_config(R"({"_class_name": "DDIMScheduler"})", "s"); })
                .find("scheduler 'DDIMScheduler' is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace fk::serving::denoise
