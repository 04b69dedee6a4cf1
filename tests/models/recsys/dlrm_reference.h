// A straightforward host DLRM for the model tests: random float32 weights written as a
// checkpoint folder (config.json + model.safetensors under DLRM_Net's names), random samples
// with ragged bags, and the forward pass in double, written from the model's definition
// (dlrm_model.h) without the engine's ops. With `round_to` set it rounds where the engine
// stores a tensor (the dense input, every linear's and pooled output, every dot product: the
// CPU ops compute each in double and round once), so it follows the engine's CPU backend
// value for value; without, it is the exact result of the same weights.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/tensor.h"
#include "models/recsys/dlrm/dlrm_config.h"
#include "models/recsys/dlrm/dlrm_predict.h"

namespace fk::test::dlrm {

using models::recsys::DlrmConfig;
using models::recsys::DlrmSample;

struct HostLinear {
  int64_t in = 0, out = 0;
  std::vector<float> weight;  // [out, in]
  std::vector<float> bias;    // [out]
};

struct HostWeights {
  std::vector<std::vector<float>> tables;  // [rows_t * D]
  std::vector<HostLinear> bottom, top;
};

inline HostWeights random_host_weights(const DlrmConfig& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](size_t n, double bound) {
    std::uniform_real_distribution<double> u(-bound, bound);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(u(rng));
    return v;
  };
  HostWeights w;
  for (int64_t rows : c.table_sizes) w.tables.push_back(uniform(static_cast<size_t>(rows * c.embedding_dim), 0.5));
  auto mlp = [&](int64_t in, const std::vector<int64_t>& widths) {
    std::vector<HostLinear> layers;
    for (int64_t out : widths) {
      HostLinear l{in, out, uniform(static_cast<size_t>(out * in), std::sqrt(3.0 / static_cast<double>(in))),
                   uniform(static_cast<size_t>(out), 0.1)};
      layers.push_back(std::move(l));
      in = out;
    }
    return layers;
  };
  w.bottom = mlp(c.dense_features, c.bottom_mlp);
  w.top = mlp(c.interaction_features(), c.top_mlp);
  return w;
}

// config.json (the text given) and model.safetensors (float32, DLRM_Net's names) in `dir`.
inline void write_checkpoint(const std::filesystem::path& dir, const std::string& config_json, const DlrmConfig& c,
                             const HostWeights& w) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config_json;
  std::vector<Tensor> keep;
  safetensors::NamedViews views;
  auto add = [&](const std::string& name, const Shape& shape, const std::vector<float>& values) {
    Tensor t = Tensor::empty(shape, DType::f32);
    std::copy(values.begin(), values.end(), t.data_as<float>());
    views.emplace_back(name, t.view());
    keep.push_back(std::move(t));
  };
  for (size_t t = 0; t < w.tables.size(); ++t)
    add("emb_l." + std::to_string(t) + ".weight", {c.table_sizes[t], c.embedding_dim}, w.tables[t]);
  auto add_mlp = [&](const char* name, const std::vector<HostLinear>& layers) {
    for (size_t l = 0; l < layers.size(); ++l) {
      const std::string prefix = std::string(name) + "." + std::to_string(2 * l) + ".";
      add(prefix + "weight", {layers[l].out, layers[l].in}, layers[l].weight);
      add(prefix + "bias", {layers[l].out}, layers[l].bias);
    }
  };
  add_mlp("bot_l", w.bottom);
  add_mlp("top_l", w.top);
  safetensors::save(dir / "model.safetensors", views);
}

// Samples with bags of 0 to 4 ids (every `long_every`-th bag much longer), dense features in
// [0, 4) (log(1 + count) of small counts).
inline std::vector<DlrmSample> random_samples(const DlrmConfig& c, int count, uint64_t seed, int long_every = 7) {
  std::mt19937_64 rng(seed);
  std::vector<DlrmSample> out(static_cast<size_t>(count));
  int bag = 0;
  for (DlrmSample& s : out) {
    for (int64_t k = 0; k < c.dense_features; ++k)
      s.dense.push_back(static_cast<float>(std::uniform_real_distribution<double>(0, 4)(rng)));
    for (int64_t rows : c.table_sizes) {
      const int64_t n = ++bag % long_every == 0 ? 40 : static_cast<int64_t>(rng() % 5);
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(rows)));
      s.sparse.push_back(std::move(ids));
    }
  }
  return out;
}

// x as the dtype stores it (or x itself).
inline double stored(double x, std::optional<DType> dt) {
  if (!dt) return x;
  unsigned char buf[8];
  store_element(buf, *dt, x);
  return load_element(buf, *dt);
}

// The logit of each sample. Weights are taken as `weight_dtype` holds them (the engine loads
// them into its dtype); `round_to` adds the engine's rounding of every stored tensor.
inline std::vector<double> reference_logits(const DlrmConfig& c, const HostWeights& w,
                                            const std::vector<DlrmSample>& samples, DType weight_dtype,
                                            std::optional<DType> round_to) {
  const int64_t d = c.embedding_dim;
  auto linear = [&](const HostLinear& l, const std::vector<double>& x, bool relu) {
    std::vector<double> y(static_cast<size_t>(l.out));
    for (int64_t o = 0; o < l.out; ++o) {
      double s = 0;
      for (int64_t k = 0; k < l.in; ++k)
        s += x[static_cast<size_t>(k)] * stored(l.weight[static_cast<size_t>(o * l.in + k)], weight_dtype);
      s = stored(s + stored(l.bias[static_cast<size_t>(o)], weight_dtype), round_to);
      y[static_cast<size_t>(o)] = relu ? std::max(s, 0.0) : s;
    }
    return y;
  };
  std::vector<double> logits;
  for (const DlrmSample& s : samples) {
    std::vector<double> x;
    for (float v : s.dense) x.push_back(stored(v, round_to));
    for (const HostLinear& l : w.bottom) x = linear(l, x, true);
    std::vector<std::vector<double>> vecs = {x};
    for (size_t t = 0; t < w.tables.size(); ++t) {
      std::vector<double> pooled(static_cast<size_t>(d), 0.0);
      for (int64_t id : s.sparse[t])
        for (int64_t k = 0; k < d; ++k)
          pooled[static_cast<size_t>(k)] += stored(w.tables[t][static_cast<size_t>(id * d + k)], weight_dtype);
      for (double& v : pooled) v = stored(v, round_to);
      vecs.push_back(std::move(pooled));
    }
    std::vector<double> z = x;
    for (size_t i = 1; i < vecs.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        double dot = 0;
        for (int64_t k = 0; k < d; ++k) dot += vecs[i][static_cast<size_t>(k)] * vecs[j][static_cast<size_t>(k)];
        z.push_back(stored(dot, round_to));
      }
    for (size_t l = 0; l < w.top.size(); ++l) z = linear(w.top[l], z, l + 1 < w.top.size());
    logits.push_back(z[0]);
  }
  return logits;
}

}  // namespace fk::test::dlrm
