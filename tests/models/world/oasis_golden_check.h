// The Oasis golden check shared by the CPU and GPU tests: tiny-oasis's checkpoint and the
// PyTorch reference's prediction from tests/data/models/make_oasis_goldens.py
// (tests/data/models/oasis/): one DiT forward of 2 clips of 5 frames at per-frame noise
// levels, with actions; and a rollout of 10 frames from 2 past the 8-frame window, 3 DDIM
// steps each, on the reference's noise. The engine runs bf16 against the reference's float32
// on the same bf16-valued weights and inputs. Fails, naming the script, while the data has
// not been made.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"
#include "models/world/oasis/oasis_model.h"
#include "serving/denoise/oasis_rollout.h"

namespace fk::models::world::test {

inline std::string oasis_golden_dir() { return std::string(FK_SOURCE_DIR) + "/tests/data/models/oasis"; }

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A float32 tensor of the golden file in the model dtype on `device`.
inline Tensor golden_tensor(const safetensors::File& f, const char* name, DType dt, Device device) {
  const TensorView v = f.view(name);
  Tensor t = Tensor::empty(Shape(v.shape, v.shape + v.rank), dt);
  for (int64_t i = 0; i < v.numel(); ++i)
    store_element(static_cast<char*>(t.data()) + i * dtype_size(dt), dt, static_cast<const float*>(v.data)[i]);
  return device.is_cpu() ? t : t.to(device);
}

struct OasisAgreement {
  double rel_l2 = 0, cosine = 0;
};

// `got` (any device) against the golden file's float32 `want`, element for element.
inline OasisAgreement oasis_agreement(const TensorView& got_any, const TensorView& want) {
  EXPECT_EQ(got_any.numel(), want.numel());
  Tensor host = Tensor::empty(Shape(got_any.shape, got_any.shape + got_any.rank), got_any.dtype);
  rt::memcpy_sync(host.data(), Device::cpu(), got_any.data, got_any.device, host.nbytes());
  double num = 0, den = 0, dot = 0, gg = 0;
  for (int64_t i = 0; i < std::min(want.numel(), host.numel()); ++i) {
    const double x = load_element(static_cast<const char*>(host.data()) + i * dtype_size(host.dtype()), host.dtype());
    const double w = static_cast<const float*>(want.data)[i];
    num += (x - w) * (x - w), den += w * w, dot += x * w, gg += x * x;
  }
  return {std::sqrt(num / den), dot / std::sqrt(den * gg)};
}

// Relative L2 error allowed for bf16 against float32 through two blocks (four attention and
// four MLP sub-layers).
inline constexpr double kOasisGoldenRelTol = 0.03;

// Runs the golden forward on `device`; returns how often each op was called.
inline std::map<std::string, int> check_oasis_golden(Device device) {
  std::map<std::string, int> calls;
  const std::string dir = oasis_golden_dir();
  if (!std::filesystem::exists(dir + "/golden.json")) {
    ADD_FAILURE() << "no golden data in " << dir << ": run tests/data/models/make_oasis_goldens.py tests/data/models";
    return calls;
  }
  const nlohmann::json meta = nlohmann::json::parse(read_text(dir + "/golden.json"));
  const auto golden = safetensors::File::open(dir + "/golden.safetensors");
  const int64_t b = meta.at("batch"), t = meta.at("frames");
  const std::string config_json = read_text(dir + "/config.json");
  auto model = OasisModel::from_config(config_json, dir + "/config.json");
  const OasisConfig c = parse_oasis_config(config_json, dir + "/config.json");
  LoadOptions o;
  o.device = device;
  o.checkpoint = dir + "/model.safetensors";
  o.max_tokens = b * t * c.frame_tokens();
  o.max_seqs = b * t;
  model->load(o);
  const Tensor x = golden_tensor(golden, "x_patches", DType::bf16, device);
  const Tensor action = golden_tensor(golden, "external_cond", DType::bf16, device);
  StepInputs in;
  in.tensors = {{"x", x.view()}, {"timestep", golden.view("timestep")}, {"external_cond", action.view()}};
  model->plan(in, nullptr);
  OpRegistry::global().set_call_observer([&](const OpDef& def, DeviceType, const void*, double) { ++calls[def.name]; });
  const TensorView out = model->forward(in, nullptr);
  OpRegistry::global().set_call_observer(nullptr);
  if (device.is_cuda()) rt::device_synchronize();
  const OasisAgreement a = oasis_agreement(out, golden.view("sample"));
  std::printf("[ oasis  ] DiT forward vs the PyTorch reference: relative L2 %.4g, cosine %.6f\n", a.rel_l2, a.cosine);
  EXPECT_LT(a.rel_l2, kOasisGoldenRelTol);
  EXPECT_GT(a.cosine, 0.999);
  return calls;
}

// Relative L2 error allowed for the rollout: the engine keeps bf16 latents between steps
// (the reference float32), through 24 steps.
inline constexpr double kOasisRolloutRelTol = 0.02;

inline void check_oasis_rollout_golden(Device device) {
  const std::string dir = oasis_golden_dir();
  if (!std::filesystem::exists(dir + "/golden.json")) {
    ADD_FAILURE() << "no golden data in " << dir << ": run tests/data/models/make_oasis_goldens.py tests/data/models";
    return;
  }
  const nlohmann::json meta = nlohmann::json::parse(read_text(dir + "/golden.json")).at("rollout");
  const auto golden = safetensors::File::open(dir + "/golden.safetensors");
  const std::string config_json = read_text(dir + "/config.json");
  auto model = OasisModel::from_config(config_json, dir + "/config.json");
  const OasisConfig c = parse_oasis_config(config_json, dir + "/config.json");
  LoadOptions o;
  o.device = device;
  o.checkpoint = dir + "/model.safetensors";
  o.max_seqs = c.max_frames;
  o.max_tokens = c.max_frames * c.frame_tokens();
  model->load(o);
  serving::denoise::OasisRolloutRequest r;
  r.frames = meta.at("frames");
  r.prompt_frames = meta.at("prompt_frames");
  r.ddim_steps = meta.at("ddim_steps");
  r.stabilization_level = meta.at("stabilization_level");
  r.prompt = golden_tensor(golden, "rollout_prompt", DType::bf16, Device::cpu());
  r.actions = golden_tensor(golden, "rollout_actions", DType::bf16, Device::cpu());
  r.noise = golden_tensor(golden, "rollout_noise", DType::bf16, Device::cpu());
  serving::denoise::OasisRollout rollout(*model, o);
  const serving::denoise::OasisRolloutResult res = rollout.run(r);
  EXPECT_EQ(res.forward_passes, (r.frames - r.prompt_frames) * r.ddim_steps);
  const OasisAgreement a = oasis_agreement(res.latents.view(), golden.view("rollout_latents"));
  std::printf("[ oasis  ] %lld-frame rollout vs the PyTorch reference: relative L2 %.4g, cosine %.6f\n",
              static_cast<long long>(r.frames), a.rel_l2, a.cosine);
  EXPECT_LT(a.rel_l2, kOasisRolloutRelTol);
  EXPECT_GT(a.cosine, 0.998);
}

}  // namespace fk::models::world::test
