#include "serving/denoise/flow_match_euler.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "fk/status.h"

namespace fk::serving::denoise {

FlowMatchEulerConfig parse_flow_match_euler_config(std::string_view text, std::string_view source) {
  using nlohmann::json;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a scheduler config must be a JSON object");
  const std::string cls = j.value("_class_name", std::string("FlowMatchEulerDiscreteScheduler"));
  FK_CHECK(cls == "FlowMatchEulerDiscreteScheduler", source, ": scheduler '", cls,
           "' is not supported (FlowMatchEulerDiscreteScheduler)");
  auto present = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  auto number = [&](const char* key, double fallback) {
    if (!present(key)) return fallback;
    FK_CHECK(j[key].is_number(), source, ": '", key, "' must be a number, got ", j[key].dump());
    return j[key].get<double>();
  };
  auto flag = [&](const char* key) {
    if (!present(key)) return false;
    FK_CHECK(j[key].is_boolean(), source, ": '", key, "' must be true or false, got ", j[key].dump());
    return j[key].get<bool>();
  };
  FlowMatchEulerConfig c;
  c.num_train_timesteps = static_cast<int64_t>(number("num_train_timesteps", 1000));
  c.shift = number("shift", 1.0);
  c.use_dynamic_shifting = flag("use_dynamic_shifting");
  c.base_shift = number("base_shift", 0.5);
  c.max_shift = number("max_shift", 1.15);
  c.base_image_seq_len = static_cast<int64_t>(number("base_image_seq_len", 256));
  c.max_image_seq_len = static_cast<int64_t>(number("max_image_seq_len", 4096));
  const std::string shift_type = j.value("time_shift_type", std::string("exponential"));
  FK_CHECK(shift_type == "exponential" || shift_type == "linear", source, ": time_shift_type '", shift_type,
           "' must be exponential or linear");
  c.exponential_time_shift = shift_type == "exponential";
  FK_CHECK(!present("shift_terminal"), source, ": shift_terminal is not supported (the stretched schedule of LTX-Video)");
  for (const char* key : {"invert_sigmas", "use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas",
                          "stochastic_sampling"})
    FK_CHECK(!flag(key), source, ": ", key, " = true is not supported (FLUX's plain Euler schedule only)");
  FK_CHECK(c.num_train_timesteps >= 1 && c.shift > 0, source, ": num_train_timesteps and shift must be positive");
  FK_CHECK(c.max_image_seq_len != c.base_image_seq_len, source,
           ": max_image_seq_len must differ from base_image_seq_len (mu is a line through the two)");
  return c;
}

double flux_mu(const FlowMatchEulerConfig& c, int64_t image_seq_len) {
  const double m = (c.max_shift - c.base_shift) / static_cast<double>(c.max_image_seq_len - c.base_image_seq_len);
  const double b = c.base_shift - m * static_cast<double>(c.base_image_seq_len);
  return static_cast<double>(image_seq_len) * m + b;
}

FlowMatchEulerSchedule flux_schedule(const FlowMatchEulerConfig& c, int64_t steps, int64_t image_seq_len) {
  FK_CHECK(steps >= 1, "flow-match Euler: the number of steps must be at least 1, got ", steps);
  FK_CHECK(image_seq_len >= 1, "flow-match Euler: the image sequence length must be positive, got ", image_seq_len);
  FlowMatchEulerSchedule s;
  const float e = static_cast<float>(std::exp(flux_mu(c, image_seq_len)));
  const float mu = static_cast<float>(flux_mu(c, image_seq_len));
  const float shift = static_cast<float>(c.shift);
  for (int64_t i = 0; i < steps; ++i) {
    // np.linspace(1.0, 1 / N, N) in double, then .astype(np.float32).
    const double end = 1.0 / static_cast<double>(steps);
    const double lin = steps == 1 ? 1.0 : 1.0 + static_cast<double>(i) * ((end - 1.0) / static_cast<double>(steps - 1));
    const float t = static_cast<float>(i == steps - 1 ? end : lin);
    float sigma;
    if (c.use_dynamic_shifting) {
      // time_shift(mu, 1.0, t): exp(mu) / (exp(mu) + (1/t - 1) ** 1), float32 throughout
      // (linear: mu / (mu + (1/t - 1))).
      const float d = 1.0f / t - 1.0f;
      sigma = c.exponential_time_shift ? e / (e + d) : mu / (mu + d);
    } else {
      sigma = shift * t / (1.0f + (shift - 1.0f) * t);
    }
    s.sigmas.push_back(sigma);
    s.timesteps.push_back(sigma * static_cast<float>(c.num_train_timesteps));
  }
  s.sigmas.push_back(0.0f);
  return s;
}

}  // namespace fk::serving::denoise
