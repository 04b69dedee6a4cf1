#include "serving/denoise/denoise_runner.h"

#include <chrono>
#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/dit.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::serving::denoise {
namespace {

// The VAE downsamples 8x and FLUX packs 2x2 latent patches into one token.
constexpr int64_t kPixelsPerToken = 16;

const models::TensorDecl* find_decl(const std::vector<models::TensorDecl>& decls, const char* name) {
  for (const auto& d : decls)
    if (d.name == name) return &d;
  return nullptr;
}

Tensor host_f32(const std::vector<float>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32);
  if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

}  // namespace

DenoiseRunner::DenoiseRunner(models::Model& model, const models::LoadOptions& loaded_with,
                             FlowMatchEulerConfig scheduler)
    : model_(model), options_(loaded_with), scheduler_(scheduler) {
  FK_CHECK(model.pattern() == models::RunPattern::denoise, "denoise: model '", model.architecture(),
           "' is of the ", models::run_pattern_name(model.pattern()), " pattern, not denoise");
  FK_CHECK(model.loaded(), "denoise: the model must be loaded first");
  const auto inputs = model.inputs();
  const auto* hs = find_decl(inputs, "hidden_states");
  const auto* ehs = find_decl(inputs, "encoder_hidden_states");
  const auto* pooled = find_decl(inputs, "pooled_projections");
  FK_CHECK(hs && ehs && pooled && find_decl(inputs, "timestep") && find_decl(inputs, "img_ids") &&
               find_decl(inputs, "txt_ids"),
           "denoise: model '", model.architecture(), "' does not take FLUX's inputs (hidden_states, ",
           "encoder_hidden_states, pooled_projections, timestep, txt_ids, img_ids); world models (Oasis) run with ",
           "`fk rollout`");
  channels_ = hs->shape[1];
  joint_dim_ = ehs->shape[1];
  pooled_dim_ = pooled->shape[1];
  takes_guidance_ = find_decl(inputs, "guidance") != nullptr;
}

Tensor DenoiseRunner::device_tensor(const Tensor& given, const Shape& shape, const char* what, uint64_t offset,
                                    uint64_t seed, void* stream) const {
  if (!given.defined()) {
    Tensor t = Tensor::empty(shape, options_.dtype, options_.device, stream);
    fill_normal(t.view(), seed, offset, 0.f, 1.f, stream);
    return t;
  }
  FK_CHECK(given.shape() == shape && given.dtype() == options_.dtype, "denoise: ", what, " must be ",
           dtype_name(options_.dtype), shape_to_string(shape.data(), static_cast<int>(shape.size())), ", got ",
           describe(given.view()));
  return given.to(options_.device);  // a copy: the loop updates latents in place
}

DenoiseResult DenoiseRunner::run(const DenoiseRequest& r, void* stream) {
  FK_CHECK(r.batch >= 1, "denoise: batch must be at least 1, got ", r.batch);
  FK_CHECK(r.height >= kPixelsPerToken && r.width >= kPixelsPerToken && r.height % kPixelsPerToken == 0 &&
               r.width % kPixelsPerToken == 0,
           "denoise: resolution ", r.width, "x", r.height, " is not supported: width and height must be positive ",
           "multiples of ", kPixelsPerToken, " (the VAE's 8x and FLUX's 2x2 packing)");
  FK_CHECK(r.steps >= 1, "denoise: steps must be at least 1, got ", r.steps);
  FK_CHECK(r.guidance_scale >= 0, "denoise: guidance scale must not be negative, got ", r.guidance_scale);
  FK_CHECK(r.text_len >= 1, "denoise: the prompt needs at least one token, got text_len ", r.text_len);
  const int64_t rows = r.height / kPixelsPerToken, cols = r.width / kPixelsPerToken, li = rows * cols;
  const int64_t b = r.batch;

  DenoiseResult res;
  res.image_seq_len = li;
  res.schedule = flux_schedule(scheduler_, r.steps, li);
  Tensor latents = device_tensor(r.latents, {b * li, channels_}, "latents", 0, r.seed, stream);
  const Tensor prompt = device_tensor(r.prompt_embeds, {b * r.text_len, joint_dim_}, "prompt_embeds", 1, r.seed, stream);
  const Tensor pooled = device_tensor(r.pooled_prompt_embeds, {b, pooled_dim_}, "pooled_prompt_embeds", 2, r.seed, stream);

  // FluxPipeline's ids: text zeros; image (0, row, column) of the packed grid.
  std::vector<float> img(static_cast<size_t>(li * 3), 0.f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      img[static_cast<size_t>((i * cols + j) * 3 + 1)] = static_cast<float>(i);
      img[static_cast<size_t>((i * cols + j) * 3 + 2)] = static_cast<float>(j);
    }
  const Tensor img_ids = host_f32(img, {li, 3});
  const Tensor txt_ids = host_f32(std::vector<float>(static_cast<size_t>(r.text_len * 3), 0.f), {r.text_len, 3});
  const Tensor guidance = host_f32(std::vector<float>(static_cast<size_t>(b), r.guidance_scale), {b});
  Tensor timestep = Tensor::empty({b}, DType::f32);

  models::StepInputs in;
  in.tensors = {{"hidden_states", latents.view()}, {"encoder_hidden_states", prompt.view()},
                {"pooled_projections", pooled.view()}, {"timestep", timestep.view()},
                {"txt_ids", txt_ids.view()}, {"img_ids", img_ids.view()}};
  if (takes_guidance_) in.tensors.emplace_back("guidance", guidance.view());

  rt::stream_synchronize(stream);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < r.steps; ++step) {
    // The pipeline passes timestep / 1000 = sigma (the model scales it back by 1000).
    for (int64_t i = 0; i < b; ++i)
      timestep.data_as<float>()[i] = res.schedule.timesteps[static_cast<size_t>(step)] / 1000.0f;
    model_.plan(in, stream);
    const TensorView flow = model_.forward(in, stream);
    call_op(ops::FlowMatchEulerStepArgs{latents.view(), flow, res.schedule.dt(static_cast<size_t>(step))},
            options_.device.type, stream);
  }
  rt::stream_synchronize(stream);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  res.latents = latents.to(Device::cpu());
  return res;
}

}  // namespace fk::serving::denoise
