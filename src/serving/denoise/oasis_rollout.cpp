#include "serving/denoise/oasis_rollout.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/dit.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/world/oasis/oasis_model.h"

namespace fk::serving::denoise {
namespace {

// Rows [first, first + n) of a 2-D tensor.
TensorView rows(const Tensor& t, int64_t first, int64_t n) {
  TensorView v = t.view();
  v.data = v.element_ptr(first * v.strides[0]);
  v.shape[0] = n;
  return v;
}

// The Philox streams of the draws: prompt frame b at 2b, new frame i of clip b at
// 2 (b frames + i) + 1, the actions on one of their own.
constexpr uint64_t kActionStream = ~uint64_t{0};

void copy_rows(const TensorView& dst, const TensorView& src, void* stream) {
  rt::memcpy_async(dst.data, dst.device, src.data, src.device, static_cast<size_t>(src.nbytes()), stream);
}

}  // namespace

double OasisRolloutResult::frames_per_second() const {
  return seconds > 0 ? static_cast<double>(generated_frames) / seconds : 0;
}

OasisRollout::OasisRollout(models::Model& model, const models::LoadOptions& loaded_with)
    : model_(model), options_(loaded_with) {
  const auto* oasis = dynamic_cast<const models::world::OasisModel*>(&model);
  FK_CHECK(oasis != nullptr, "rollout: model '", model.architecture(),
           "' is not an Oasis DiT (the rollout drives Oasis's diffusion-forcing sampler)");
  FK_CHECK(model.loaded(), "rollout: the model must be loaded first");
  const models::world::OasisConfig& c = oasis->config();
  features_ = c.patch_features();
  frame_tokens_ = c.frame_tokens();
  action_dim_ = c.external_cond_dim;
  max_frames_ = c.max_frames;
}

OasisRolloutResult OasisRollout::run(const OasisRolloutRequest& r, void* stream) {
  FK_CHECK(r.clips >= 1, "rollout: clips must be at least 1, got ", r.clips);
  FK_CHECK(r.prompt_frames >= 1, "rollout: the prompt needs at least one frame, got ", r.prompt_frames);
  FK_CHECK(r.frames > r.prompt_frames, "rollout: ", r.frames, " frames in all leave none to generate after the ",
           r.prompt_frames, " prompt frames");
  FK_CHECK(r.stabilization_level >= 1 && r.stabilization_level <= 1000, "rollout: stabilization_level must be in ",
           "[1, 1000], got ", r.stabilization_level);
  const DdimSchedule sched = ddim_schedule(r.ddim_steps);
  const int64_t b_count = r.clips, s = frame_tokens_, f = features_, window = std::min(r.frames, max_frames_);
  FK_CHECK(b_count * window <= options_.max_seqs && b_count * window * s <= options_.max_tokens, "rollout: ", b_count,
           " clips of a ", window, "-frame window need max_seqs ", b_count * window, " and max_tokens ",
           b_count * window * s, "; the model was loaded with ", options_.max_seqs, " and ", options_.max_tokens);
  const DType dt = options_.dtype;
  const Device dev = options_.device;

  Tensor latents = Tensor::empty({b_count * r.frames * s, f}, dt, dev, stream);
  auto clip_frames = [&](int64_t b, int64_t first, int64_t n) {
    return rows(latents, (b * r.frames + first) * s, n * s);
  };
  if (r.prompt.defined()) {
    FK_CHECK(r.prompt.dtype() == dt && r.prompt.rank() == 2 && r.prompt.size(0) == b_count * r.prompt_frames * s &&
                 r.prompt.size(1) == f,
             "rollout: prompt must be ", dtype_name(dt), "[", b_count * r.prompt_frames * s, ", ", f, "] (", b_count,
             " clips x ", r.prompt_frames, " frames x ", s, " patches), got ", describe(r.prompt.view()));
    for (int64_t b = 0; b < b_count; ++b)
      copy_rows(clip_frames(b, 0, r.prompt_frames), rows(r.prompt, b * r.prompt_frames * s, r.prompt_frames * s),
                stream);
  } else {
    for (int64_t b = 0; b < b_count; ++b)
      fill_normal(clip_frames(b, 0, r.prompt_frames), r.seed, 2 * b, 0.f, 1.f, stream);
  }
  const int64_t generated = r.frames - r.prompt_frames;
  Tensor noise;
  if (r.noise.defined()) {
    FK_CHECK(r.noise.dtype() == dt && r.noise.rank() == 2 && r.noise.size(0) == b_count * generated * s &&
                 r.noise.size(1) == f,
             "rollout: noise must be ", dtype_name(dt), "[", b_count * generated * s, ", ", f, "] (", b_count,
             " clips x ", generated, " generated frames x ", s, " patches), got ", describe(r.noise.view()));
    noise = r.noise.to(dev);
  }
  Tensor actions;
  if (action_dim_ > 0) {
    if (r.actions.defined()) {
      FK_CHECK(r.actions.dtype() == dt && r.actions.rank() == 2 && r.actions.size(0) == b_count * r.frames &&
                   r.actions.size(1) == action_dim_,
               "rollout: actions must be ", dtype_name(dt), "[", b_count * r.frames, ", ", action_dim_,
               "] (one per frame of each clip), got ", describe(r.actions.view()));
      actions = r.actions.to(dev);
    } else {
      actions = Tensor::empty({b_count * r.frames, action_dim_}, dt, dev, stream);
      fill_int(actions.view(), r.seed, kActionStream, 0, 2, stream);
    }
  }
  // With several clips the model reads one batch of their windows (copies); with one, the
  // window in place.
  Tensor batch_x, batch_actions;
  if (b_count > 1) {
    batch_x = Tensor::empty({b_count * window * s, f}, dt, dev, stream);
    if (action_dim_ > 0) batch_actions = Tensor::empty({b_count * window, action_dim_}, dt, dev, stream);
  }

  OasisRolloutResult res;
  rt::stream_synchronize(stream);
  const auto start_time = std::chrono::steady_clock::now();
  for (int64_t i = r.prompt_frames; i < r.frames; ++i) {
    for (int64_t b = 0; b < b_count; ++b) {
      if (noise.defined())
        copy_rows(clip_frames(b, i, 1), rows(noise, (b * generated + i - r.prompt_frames) * s, s), stream);
      else
        fill_normal(clip_frames(b, i, 1), r.seed, 2 * (b * r.frames + i) + 1, 0.f, 1.f, stream);
    }
    const int64_t first = std::max<int64_t>(0, i + 1 - max_frames_), w = i + 1 - first;
    TensorView x, a;
    if (b_count == 1) {
      x = clip_frames(0, first, w);
      if (action_dim_ > 0) a = rows(actions, first, w);
    } else {
      for (int64_t b = 0; b < b_count; ++b) {
        copy_rows(rows(batch_x, b * w * s, w * s), clip_frames(b, first, w), stream);
        if (action_dim_ > 0) copy_rows(rows(batch_actions, b * w, w), rows(actions, b * r.frames + first, w), stream);
      }
      x = rows(batch_x, 0, b_count * w * s);
      if (action_dim_ > 0) a = rows(batch_actions, 0, b_count * w);
    }
    Tensor timestep = Tensor::empty({b_count, w}, DType::f32);
    models::StepInputs in;
    in.tensors = {{"x", x}, {"timestep", timestep.view()}};
    if (action_dim_ > 0) in.tensors.emplace_back("external_cond", a);
    for (int64_t idx = r.ddim_steps; idx >= 1; --idx) {
      const int64_t level = sched.levels[static_cast<size_t>(idx)];
      for (int64_t b = 0; b < b_count; ++b)
        for (int64_t j = 0; j < w; ++j)
          timestep.data_as<float>()[b * w + j] = static_cast<float>(j + 1 < w ? r.stabilization_level - 1 : level);
      model_.plan(in, stream);
      const TensorView v = model_.forward(in, stream);
      ++res.forward_passes;
      // The last step lands on the clean frame.
      const auto [c_sample, c_output] = sched.step(level, idx == 1 ? -1 : sched.levels[static_cast<size_t>(idx - 1)]);
      for (int64_t b = 0; b < b_count; ++b) {
        TensorView last = x, out = v;
        last.data = x.element_ptr(((b * w) + w - 1) * s * x.strides[0]);
        last.shape[0] = s;
        out.data = v.element_ptr(((b * w) + w - 1) * s * v.strides[0]);
        out.shape[0] = s;
        call_op(ops::DdimStepArgs{last, out, static_cast<float>(c_sample), static_cast<float>(c_output)}, dev.type,
                stream);
      }
    }
    if (b_count > 1)
      for (int64_t b = 0; b < b_count; ++b)
        copy_rows(clip_frames(b, i, 1), rows(batch_x, (b * w + w - 1) * s, s), stream);
  }
  rt::stream_synchronize(stream);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  res.generated_frames = b_count * generated;
  res.latents = latents.to(Device::cpu());
  return res;
}

}  // namespace fk::serving::denoise
