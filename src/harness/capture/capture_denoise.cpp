#include "harness/capture/capture_denoise.h"

#include <string_view>

#include "fk/status.h"
#include "models/diffusion/flux/flux_model.h"
#include "serving/denoise/denoise_runner.h"

namespace fk::e2e {

namespace {

constexpr const char* kDenoiseForms = "tiny, Npx or BxNpx (N pixels a side, a multiple of 16; e.g. 1024px, 2x512px)";

}  // namespace

nlohmann::json DenoiseWorkload::to_json() const {
  return {{"name", name},          {"batch", batch},   {"height", height},
          {"width", width},        {"text_len", text_len}, {"image_tokens", image_tokens()},
          {"steps", steps}};
}

DenoiseWorkload denoise_workload(const std::string& name) {
  DenoiseWorkload w;
  w.name = name;
  if (name == "tiny") {
    w.height = w.width = 64;
    w.text_len = 8;
    w.steps = 2;
    return w;
  }
  const std::string refusal = concat("capture: denoise workload '", name, "' is not ", kDenoiseForms);
  std::string_view s = name;
  FK_CHECK(s.size() > 2 && s.substr(s.size() - 2) == "px", refusal);
  s.remove_suffix(2);
  if (const size_t x = s.find('x'); x != std::string_view::npos) {
    w.batch = workload_count(s.substr(0, x), refusal);
    s.remove_prefix(x + 1);
  }
  const int64_t side = workload_count(s, refusal);
  FK_CHECK(side % 16 == 0, "capture: denoise workload '", name, "': ", side,
           " pixels is not a multiple of 16 (the VAE's 8x and FLUX's 2 x 2 packing)");
  w.height = w.width = side;
  return w;
}

models::diffusion::FluxModel& as_flux(models::Model& model, const models::ModelSource& src, const char* what) {
  auto* flux = dynamic_cast<models::diffusion::FluxModel*>(&model);
  FK_CHECK(flux != nullptr, what, ": model '", src.source, "' (architecture '",
           src.registration ? src.registration->architecture : std::string("?"),
           "') is not a FLUX.1-style transformer of the Denoise pattern");
  return *flux;
}

CaptureResult capture_denoise(const models::ModelSource& model, const DenoiseWorkload& w,
                              const DenoiseCaptureOptions& options) {
  std::unique_ptr<models::Model> m = models::create_model_from_config(model.config_json, model.source);
  models::diffusion::FluxModel& flux = as_flux(*m, model, "capture");
  models::LoadOptions lo;
  lo.device = options.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = options.dtype;
  lo.checkpoint = model.checkpoint;
  lo.seed = options.seed;
  lo.max_seqs = w.batch;
  lo.max_tokens = w.batch * (w.text_len + w.image_tokens());
  flux.load(lo);
  serving::denoise::DenoiseRunner runner(flux, lo, serving::denoise::FlowMatchEulerConfig{});
  serving::denoise::DenoiseRequest r;
  r.batch = w.batch;
  r.height = w.height;
  r.width = w.width;
  r.text_len = w.text_len;
  r.steps = 1;  // every step makes the same calls
  r.seed = options.seed + 1;
  runner.run(r);  // unrecorded: lazy set-up (GEMM algorithm choice, workspaces) is no op time
  return capture_calls([&] { runner.run(r); }, options.backend == DeviceType::cuda, flux.task_category());
}

}  // namespace fk::e2e
