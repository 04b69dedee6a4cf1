// The encoder golden check shared by the CPU and GPU tests: the tiny XLM-RoBERTa checkpoint
// with BGE-M3's heads made by tests/data/models/encoders/make_goldens.py (transformers, in
// float32), loaded in bf16 on a device, run by the Batch runner over golden.json's
// sequences, and compared with golden.safetensors: last_hidden_state per token, dense per
// sequence and ColBERT per vector by cosine (>= 0.999, the bar for bf16) and
// relative L2 error; the sparse weights and lexical weights by absolute error scaled to the
// weights' size (bf16 rounds the logit's inputs by 2^-9 relative).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "models/encoder/embed_batch.h"
#include "models/registry.h"

namespace fk::test {

inline std::string encoder_golden_dir(const std::string& family) {
  return std::string(FK_SOURCE_DIR) + "/tests/data/models/encoders/" + family;
}

struct VectorAgreement {
  double cosine = 1, rel_err = 0;
};

inline VectorAgreement agreement(const float* got, const TensorView& want, int64_t row, int64_t width) {
  double dot = 0, gg = 0, ww = 0, diff = 0;
  for (int64_t j = 0; j < width; ++j) {
    const double g = got[j], w = get(want, row, j);
    dot += g * w, gg += g * g, ww += w * w, diff += (g - w) * (g - w);
  }
  VectorAgreement a;
  a.cosine = (gg == 0 && ww == 0) ? 1.0 : dot / std::sqrt(gg * ww);
  a.rel_err = std::sqrt(diff / std::max(ww, 1e-30));
  return a;
}

// The worst agreement seen, printed at the end (how much margin the bars leave).
inline VectorAgreement& worst_agreement() {
  static VectorAgreement w;
  return w;
}

inline void expect_rows_agree(const std::vector<float>& got, const TensorView& want, int64_t first_row, int64_t rows,
                              int64_t width, const std::string& what) {
  ASSERT_EQ(got.size(), static_cast<size_t>(rows * width)) << what;
  for (int64_t r = 0; r < rows; ++r) {
    const VectorAgreement a = agreement(got.data() + r * width, want, first_row + r, width);
    EXPECT_GE(a.cosine, 0.999) << what << " row " << r;
    EXPECT_LE(a.rel_err, 0.04) << what << " row " << r;
    worst_agreement().cosine = std::min(worst_agreement().cosine, a.cosine);
    worst_agreement().rel_err = std::max(worst_agreement().rel_err, a.rel_err);
  }
}

// Loads the golden model on `device` and checks every output of every sequence.
inline void check_encoder_golden(const std::string& family, Device device) {
  using namespace models;
  const std::string dir = encoder_golden_dir(family);
  nlohmann::json golden;
  {
    std::ifstream f(dir + "/golden.json");
    ASSERT_TRUE(f.good()) << dir;
    f >> golden;
  }
  const auto sequences = golden["sequences"].get<std::vector<std::vector<int32_t>>>();
  const safetensors::File want = safetensors::File::open(dir + "/golden.safetensors");

  std::unique_ptr<Model> m = create_model(dir);
  auto* model = dynamic_cast<encoder::XlmRobertaModel*>(m.get());
  ASSERT_NE(model, nullptr);
  LoadOptions o;
  o.device = device;
  o.dtype = DType::bf16;
  o.checkpoint = dir;
  o.max_tokens = 256;
  o.max_seqs = 16;
  model->load(o);
  ASSERT_TRUE(model->has_heads());
  const auto out = encoder::embed_batch(*model, sequences, {.hidden_states = true});
  ASSERT_EQ(out.size(), sequences.size());

  const int64_t h = model->config().hidden_size;
  int64_t token = 0, colbert_row = 0;
  const TensorView hidden = want.view("last_hidden_state"), dense = want.view("dense"), colbert = want.view("colbert");
  const TensorView sparse = want.view("sparse");
  for (size_t s = 0; s < sequences.size(); ++s) {
    const int64_t n = static_cast<int64_t>(sequences[s].size());
    const std::string what = family + " sequence " + std::to_string(s);
    ASSERT_EQ(out[s].tokens, n) << what;
    expect_rows_agree(out[s].last_hidden_state, hidden, token, n, h, what + " last_hidden_state");
    expect_rows_agree(out[s].dense, dense, static_cast<int64_t>(s), 1, h, what + " dense");
    expect_rows_agree(out[s].colbert, colbert, colbert_row, n - 1, h, what + " colbert");
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(get(sparse, token + i)));
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(out[s].sparse[static_cast<size_t>(i)], get(sparse, token + i), 0.02 * std::max(scale, 1.0))
          << what << " sparse token " << i;
    // Lexical weights: every clearly positive weight on both sides, with its value.
    const auto& lex = golden["lexical_weights"][s];
    for (const auto& [id, w] : lex.items()) {
      const double gw = w.get<double>();
      const auto it = out[s].lexical_weights.find(std::stoll(id));
      if (gw > 0.02 * std::max(scale, 1.0)) {
        ASSERT_NE(it, out[s].lexical_weights.end()) << what << " lexical weight of token " << id;
        EXPECT_NEAR(it->second, gw, 0.02 * std::max(scale, 1.0)) << what << " token " << id;
      }
    }
    for (const auto& [id, w] : out[s].lexical_weights)
      if (w > 0.02 * std::max(scale, 1.0)) {
        EXPECT_TRUE(lex.contains(std::to_string(id))) << what << " token " << id;
      }
    token += n;
    colbert_row += n - 1;
  }
  EXPECT_EQ(token, hidden.shape[0]);
  EXPECT_EQ(colbert_row, colbert.shape[0]);
  std::printf("[ golden ] %s: worst cosine %.6f, worst relative L2 error %.4f over every vector\n", family.c_str(),
              worst_agreement().cosine, worst_agreement().rel_err);
}

}  // namespace fk::test
