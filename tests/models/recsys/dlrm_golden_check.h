// The DLRM golden check shared by the CPU and GPU golden tests: the tiny checkpoint made by
// tests/data/models/recsys/make_dlrm_goldens.py (a PyTorch DLRM written from the model's
// description: nn.EmbeddingBag(mode="sum") per table, the MLPs, the dot interaction; float32
// weights under DLRM_Net's names), loaded in bf16 and in f16 on a device; golden.json's
// samples (their dense features from golden.safetensors) run through dlrm_predict and
// compared with PyTorch's float32 outputs: the interaction (the top MLP's input) row by row
// by cosine and relative L2 error, each logit within a bound of the dtype's roundings, each
// probability within 0.01.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/runtime.h"
#include "models/recsys/dlrm/dlrm_model.h"
#include "models/recsys/dlrm/dlrm_predict.h"
#include "models/registry.h"

namespace fk::test {

inline std::filesystem::path dlrm_golden_dir() {
  return std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/recsys/dlrm";
}

inline bool dlrm_golden_present() { return std::filesystem::exists(dlrm_golden_dir() / "golden.safetensors"); }

inline const char* dlrm_golden_missing() {
  return "no DLRM golden data in tests/data/models/recsys/dlrm/ yet (made on a host with PyTorch by: python3 "
         "tests/data/models/recsys/make_dlrm_goldens.py tests/data/models/recsys)";
}

inline void check_dlrm_golden(Device device) {
  using namespace models;
  using models::recsys::DlrmModel;
  using models::recsys::DlrmSample;
  const std::filesystem::path dir = dlrm_golden_dir();
  nlohmann::json golden;
  {
    std::ifstream f(dir / "golden.json");
    ASSERT_TRUE(f.good()) << dir;
    f >> golden;
  }
  const safetensors::File want = safetensors::File::open(dir / "golden.safetensors");
  const TensorView dense = want.view("dense"), inter = want.view("interaction");
  const TensorView logits = want.view("logits"), probs = want.view("probabilities");
  const auto& samples_json = golden["samples"];
  const auto count = static_cast<int64_t>(samples_json.size());
  ASSERT_EQ(dense.shape[0], count);
  std::vector<DlrmSample> samples(static_cast<size_t>(count));
  for (int64_t s = 0; s < count; ++s) {
    DlrmSample& x = samples[static_cast<size_t>(s)];
    for (int64_t k = 0; k < dense.shape[1]; ++k) x.dense.push_back(static_cast<float>(get(dense, s, k)));
    x.sparse = samples_json[static_cast<size_t>(s)]["sparse"].get<std::vector<std::vector<int64_t>>>();
  }

  for (DType dt : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dt));
    std::unique_ptr<Model> m = create_model(dir.string());
    auto* model = dynamic_cast<DlrmModel*>(m.get());
    ASSERT_NE(model, nullptr);
    LoadOptions o;
    o.device = device;
    o.dtype = dt;
    o.checkpoint = dir;
    o.max_tokens = count;
    model->load(o);
    const std::vector<models::recsys::DlrmPrediction> got = recsys::dlrm_predict(*model, samples);
    ASSERT_EQ(static_cast<int64_t>(got.size()), count);

    // The top MLP's input, row by row.
    const TensorView iv = model->interaction_output();
    Tensor ih = Tensor::empty({iv.shape[0], iv.strides[0]}, iv.dtype);
    rt::memcpy_sync(ih.data(), Device::cpu(), iv.data, iv.device, ih.nbytes());
    ASSERT_EQ(iv.shape[1], inter.shape[1]);
    double worst_cos = 1, worst_rel = 0;
    for (int64_t s = 0; s < count; ++s) {
      double dot = 0, gg = 0, ww = 0, diff = 0;
      for (int64_t k = 0; k < iv.shape[1]; ++k) {
        const double g = get(ih.view(), s, k), w = get(inter, s, k);
        dot += g * w, gg += g * g, ww += w * w, diff += (g - w) * (g - w);
      }
      const double cos = gg > 0 && ww > 0 ? dot / std::sqrt(gg * ww) : (gg == ww ? 1.0 : 0.0);
      const double rel = ww > 0 ? std::sqrt(diff / ww) : std::sqrt(diff);
      EXPECT_GE(cos, 0.999) << "interaction of sample " << s;
      EXPECT_LE(rel, dt == DType::bf16 ? 0.03 : 0.005) << "interaction of sample " << s;
      worst_cos = std::min(worst_cos, cos);
      worst_rel = std::max(worst_rel, rel);
    }
    // A logit passes about ten stored tensors, each rounded to the dtype: bf16 keeps 8 bits.
    const double ulp = dt == DType::bf16 ? 1.0 / 128 : 1.0 / 1024;
    double worst_logit = 0, worst_prob = 0;
    for (int64_t s = 0; s < count; ++s) {
      const double w = get(logits, s), p = get(probs, s);
      const double g = got[static_cast<size_t>(s)].logit, gp = got[static_cast<size_t>(s)].probability;
      EXPECT_NEAR(g, w, 8 * ulp * (1 + std::fabs(w))) << "logit of sample " << s;
      EXPECT_NEAR(gp, p, 0.01) << "probability of sample " << s;
      worst_logit = std::max(worst_logit, std::fabs(g - w) / (1 + std::fabs(w)));
      worst_prob = std::max(worst_prob, std::fabs(gp - p));
    }
    std::printf(
        "[ golden ] dlrm %s: worst interaction cosine %.6f, relative L2 %.4f; worst logit error %.4f "
        "(relative to 1 + |logit|), worst probability error %.4f\n",
        dtype_name(dt).data(), worst_cos, worst_rel, worst_logit, worst_prob);
  }
}

}  // namespace fk::test
