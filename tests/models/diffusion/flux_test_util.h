// Shared by the FLUX model tests (CPU and GPU): a random checkpoint under diffusers' names
// written as a safetensors folder, random inputs of a batch, the engine's forward on a
// backend, and the double-precision reference of flux_reference.h on the same values.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/tensor.h"
#include "models/diffusion/flux/flux_model.h"
#include "models/diffusion/flux_reference.h"
#include "models/registry.h"

namespace fk::models::diffusion::test {

namespace fs = std::filesystem;

inline double round_bf16(double x) {
  alignas(8) char b[8];
  store_element(b, DType::bf16, x);
  return load_element(b, DType::bf16);
}

inline FluxConfig tiny_flux_config() { return parse_flux_config(resolve_model("tiny-flux").config_json, "tiny-flux"); }
inline std::string tiny_flux_json() { return std::string(resolve_model("tiny-flux").config_json); }

// Random weights of every declared tensor, bf16-exact, written as f32 into
// dir/diffusion_pytorch_model.safetensors; also returned as the reference's matrices.
inline WeightMap write_random_checkpoint(const FluxConfig& c, const fs::path& dir, uint64_t seed) {
  std::mt19937_64 rng(seed);
  WeightMap map;
  std::vector<Tensor> keep;
  safetensors::NamedViews views;
  for (const TensorDecl& d : flux_weight_decls(c, DType::f32)) {
    const bool matrix = d.shape.size() == 2;
    const bool norm = d.name.find(".norm_") != std::string::npos;
    double lo = -0.1, hi = 0.1;
    if (matrix) hi = std::sqrt(3.0 / static_cast<double>(d.shape[1])), lo = -hi;
    if (norm) lo = 0.8, hi = 1.2;
    std::uniform_real_distribution<double> u(lo, hi);
    Mat m(matrix ? d.shape[0] : 1, matrix ? d.shape[1] : d.shape[0]);
    Tensor t = Tensor::empty(d.shape, DType::f32);
    for (size_t i = 0; i < m.v.size(); ++i) t.data_as<float>()[i] = static_cast<float>(m.v[i] = round_bf16(u(rng)));
    map.emplace(d.name, std::move(m));
    keep.push_back(t);
    views.emplace_back(d.name, keep.back().view());
  }
  fs::create_directories(dir);
  safetensors::save(dir / "diffusion_pytorch_model.safetensors", views);
  return map;
}

// One batch of inputs: both as the model's StepInputs tensors (bf16 on `device`, ids and
// timesteps f32 on the host) and as the reference's doubles (the same bf16 values).
struct FluxBatch {
  FluxReferenceInputs ref;
  Tensor hidden_states, encoder_hidden_states, pooled, timestep, guidance, txt_ids, img_ids;
  StepInputs step() const {
    StepInputs in;
    in.tensors = {{"hidden_states", hidden_states.view()}, {"encoder_hidden_states", encoder_hidden_states.view()},
                  {"pooled_projections", pooled.view()},   {"timestep", timestep.view()},
                  {"txt_ids", txt_ids.view()},             {"img_ids", img_ids.view()}};
    if (guidance.defined()) in.tensors.emplace_back("guidance", guidance.view());
    return in;
  }
};

inline Tensor to_tensor(const Mat& m, DType dt, Device device) {
  Tensor t = Tensor::empty({m.rows, m.cols}, dt);
  for (int64_t i = 0; i < m.rows * m.cols; ++i)
    store_element(static_cast<char*>(t.data()) + i * dtype_size(dt), dt, m.v[static_cast<size_t>(i)]);
  return device.is_cpu() ? t : t.to(device);
}

// B samples; an image of rows x cols latent patches (ids (0, row, col), as FluxPipeline's
// _prepare_latent_image_ids) and `text` prompt tokens (ids zero).
inline FluxBatch make_flux_batch(const FluxConfig& c, int64_t batch, int64_t text, int64_t img_rows, int64_t img_cols,
                                 uint64_t seed, Device device) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  FluxBatch b;
  FluxReferenceInputs& r = b.ref;
  r.batch = batch, r.text_len = text, r.image_len = img_rows * img_cols;
  auto random_mat = [&](int64_t rows, int64_t cols) {
    Mat m(rows, cols);
    for (double& x : m.v) x = round_bf16(u(rng));
    return m;
  };
  r.hidden_states = random_mat(batch * r.image_len, c.in_channels);
  r.encoder_hidden_states = random_mat(batch * text, c.joint_attention_dim);
  r.pooled = random_mat(batch, c.pooled_projection_dim);
  r.txt_ids = Mat(text, 3);
  r.img_ids = Mat(r.image_len, 3);
  for (int64_t i = 0; i < img_rows; ++i)
    for (int64_t j = 0; j < img_cols; ++j) r.img_ids.at(i * img_cols + j, 1) = i, r.img_ids.at(i * img_cols + j, 2) = j;
  std::uniform_real_distribution<double> t01(0.05, 1.0), g(1.0, 5.0);
  for (int64_t i = 0; i < batch; ++i) {
    r.timestep.push_back(static_cast<float>(t01(rng)));
    r.guidance.push_back(static_cast<float>(g(rng)));
  }
  b.hidden_states = to_tensor(r.hidden_states, DType::bf16, device);
  b.encoder_hidden_states = to_tensor(r.encoder_hidden_states, DType::bf16, device);
  b.pooled = to_tensor(r.pooled, DType::bf16, device);
  b.txt_ids = to_tensor(r.txt_ids, DType::f32, Device::cpu());
  b.img_ids = to_tensor(r.img_ids, DType::f32, Device::cpu());
  b.timestep = Tensor::empty({batch}, DType::f32);
  for (int64_t i = 0; i < batch; ++i) b.timestep.data_as<float>()[i] = static_cast<float>(r.timestep[static_cast<size_t>(i)]);
  if (c.guidance_embeds) {
    b.guidance = Tensor::empty({batch}, DType::f32);
    for (int64_t i = 0; i < batch; ++i) b.guidance.data_as<float>()[i] = static_cast<float>(r.guidance[static_cast<size_t>(i)]);
  }
  return b;
}

// Relative L2 error and cosine of `got` (any device, [rows, cols]) against `want`.
struct Agreement {
  double rel_l2 = 0, cosine = 0, max_abs = 0;
};
inline Agreement agreement(const TensorView& got_any, const Mat& want) {
  EXPECT_EQ(got_any.shape[0], want.rows);
  EXPECT_EQ(got_any.shape[1], want.cols);
  EXPECT_TRUE(got_any.is_contiguous());
  Tensor host = Tensor::empty({got_any.shape[0], got_any.shape[1]}, got_any.dtype);
  rt::memcpy_sync(host.data(), Device::cpu(), got_any.data, got_any.device, host.nbytes());
  const TensorView got = host.view();
  Agreement a;
  double num = 0, den = 0, dot = 0, gg = 0;
  for (int64_t r = 0; r < want.rows; ++r)
    for (int64_t j = 0; j < want.cols; ++j) {
      const double x = get(got, r, j), w = want.at(r, j);
      num += (x - w) * (x - w), den += w * w, dot += x * w, gg += x * x;
      a.max_abs = std::max(a.max_abs, std::fabs(x - w));
    }
  a.rel_l2 = std::sqrt(num / den);
  a.cosine = dot / std::sqrt(den * gg);
  return a;
}

}  // namespace fk::models::diffusion::test
