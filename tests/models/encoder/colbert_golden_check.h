// The ColBERT golden check shared by the CPU and GPU tests: the tiny HF_ColBERT checkpoint
// made by tests/data/models/encoders/make_colbert_goldens.py (transformers, float32), loaded
// in bf16 on a device; golden.json's query and document texts encoded by colbert_encode
// (ColBERT's formatting: [MASK]-padded queries whose padding is no key, documents without
// their punctuation vectors) and scored by the maxsim op, compared with golden.safetensors:
// the formatted ids exactly, every vector by cosine (>= 0.999) and relative L2 error, each
// MaxSim score within 0.005 per query vector (a score sums query_maxlen cosines).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "models/encoder/colbert_encode.h"
#include "models/encoder/golden_check.h"
#include "models/registry.h"

namespace fk::test {

inline void check_colbert_golden(Device device) {
  using namespace models;
  using models::encoder::ColbertSide;
  const std::string dir = encoder_golden_dir("colbert");
  nlohmann::json golden;
  {
    std::ifstream f(dir + "/golden.json");
    ASSERT_TRUE(f.good()) << dir;
    f >> golden;
  }
  const auto queries = golden["queries"].get<std::vector<std::vector<int32_t>>>();
  const auto docs = golden["documents"].get<std::vector<std::vector<int32_t>>>();
  const safetensors::File want = safetensors::File::open(dir + "/golden.safetensors");

  std::unique_ptr<Model> m = create_model(dir);
  auto* model = dynamic_cast<encoder::XlmRobertaModel*>(m.get());
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->architecture(), "bert");
  LoadOptions o;
  o.device = device;
  o.dtype = DType::bf16;
  o.checkpoint = dir;
  o.max_tokens = 256;
  o.max_seqs = 16;
  model->load(o);
  ASSERT_TRUE(model->has_colbert_projection());
  const int64_t dim = model->config().colbert->dim;

  const auto q = encoder::colbert_encode(*model, queries, ColbertSide::query);
  const auto d = encoder::colbert_encode(*model, docs, ColbertSide::document);
  ASSERT_EQ(q.size(), queries.size());
  ASSERT_EQ(d.size(), docs.size());
  const TensorView qv = want.view("query_vectors"), dv = want.view("doc_vectors"), scores = want.view("scores");
  int64_t row = 0;
  for (size_t a = 0; a < q.size(); ++a) {
    EXPECT_EQ(q[a].ids, golden["query_ids"][a].get<std::vector<int32_t>>()) << "query " << a;
    const auto n = static_cast<int64_t>(q[a].rows.size());
    EXPECT_EQ(n, model->config().colbert->query_maxlen) << "query " << a;
    expect_rows_agree(q[a].vectors, qv, row, n, dim, "query " + std::to_string(a));
    row += n;
  }
  EXPECT_EQ(row, qv.shape[0]);
  row = 0;
  for (size_t b = 0; b < d.size(); ++b) {
    EXPECT_EQ(d[b].ids, golden["doc_ids"][b].get<std::vector<int32_t>>()) << "document " << b;
    const auto n = static_cast<int64_t>(d[b].rows.size());
    ASSERT_EQ(n, golden["doc_vector_counts"][b].get<int64_t>()) << "document " << b;
    expect_rows_agree(d[b].vectors, dv, row, n, dim, "document " + std::to_string(b));
    row += n;
  }
  EXPECT_EQ(row, dv.shape[0]);

  const std::vector<float> got = encoder::colbert_scores(*model, q, d);
  ASSERT_EQ(got.size(), q.size() * d.size());
  const double bar = 0.005 * static_cast<double>(model->config().colbert->query_maxlen);
  double worst = 0;
  for (size_t a = 0; a < q.size(); ++a)
    for (size_t b = 0; b < d.size(); ++b) {
      const double g = got[a * d.size() + b], w = get(scores, static_cast<int64_t>(a), static_cast<int64_t>(b));
      EXPECT_NEAR(g, w, bar) << "score of query " << a << " and document " << b;
      worst = std::max(worst, std::fabs(g - w));
    }
  std::printf("[ golden ] colbert: worst cosine %.6f, worst relative L2 error %.4f, worst score error %.4f\n",
              worst_agreement().cosine, worst_agreement().rel_err, worst);
}

}  // namespace fk::test
