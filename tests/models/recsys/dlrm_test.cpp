// DLRM on the CPU: the config (both presets, and the named errors for what the model does not
// run), the checkpoint's names, the forward pass against a host computation in double
// written here (dlrm_reference.h: value for value with the engine's roundings, and within a
// bound of the exact result), a sample scoring the same alone and in a batch, dummy weights,
// and the runner's and the forward's named errors (an id past its table, a wrong number of
// tables, a batch past max_tokens, malformed inputs, a checkpoint missing a tensor).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fk/status.h"
#include "models/recsys/dlrm/dlrm_model.h"
#include "models/recsys/dlrm/dlrm_predict.h"
#include "models/recsys/dlrm_reference.h"
#include "models/registry.h"
#include "support/test_seed.h"

namespace fk::models::recsys {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string tiny_config_json() { return std::string(resolve_model("tiny-dlrmv2").config_json); }

DlrmConfig tiny_config() { return parse_dlrm_config(tiny_config_json(), "tiny-dlrmv2"); }

// A checkpoint folder of random float32 weights for the tiny config, removed afterwards.
struct TinyCheckpoint {
  explicit TinyCheckpoint(uint64_t seed)
      : dir(fs::temp_directory_path() / ("fk_dlrm_test_" + std::to_string(::getpid()) + "_" + std::to_string(seed))),
        config(tiny_config()),
        weights(test::dlrm::random_host_weights(config, seed)) {
    test::dlrm::write_checkpoint(dir, tiny_config_json(), config, weights);
  }
  ~TinyCheckpoint() { fs::remove_all(dir); }
  fs::path dir;
  DlrmConfig config;
  test::dlrm::HostWeights weights;
};

std::unique_ptr<DlrmModel> loaded(const std::string& model, DType dtype, const fs::path& checkpoint = {},
                                  int64_t max_samples = 64) {
  std::unique_ptr<Model> m = create_model(model);
  FK_CHECK(dynamic_cast<DlrmModel*>(m.get()) != nullptr, model, " is not a DLRM");
  std::unique_ptr<DlrmModel> out(static_cast<DlrmModel*>(m.release()));
  LoadOptions o;
  o.dtype = dtype;
  o.checkpoint = checkpoint;
  o.seed = 7;
  o.max_tokens = max_samples;
  out->load(o);
  return out;
}

TEST(DlrmConfig, PresetsParse) {
  const ModelSource prod = resolve_model("dlrmv2");
  EXPECT_EQ(prod.registration->architecture, "dlrm");
  EXPECT_EQ(prod.registration->category, "recommendation-specialised");
  EXPECT_EQ(prod.registration->pattern, RunPattern::batch);
  EXPECT_EQ(prod.registration->names, std::vector<std::string>{"DLRMv2"});
  const DlrmConfig c = parse_dlrm_config(prod.config_json, "dlrmv2");
  EXPECT_EQ(c.num_tables(), 26);
  EXPECT_EQ(c.dense_features, 13);
  EXPECT_EQ(c.embedding_dim, 128);
  EXPECT_EQ(c.total_rows(), 204184588);  // MLPerf's tables hashed below 4e7 rows
  EXPECT_EQ(c.max_ind_range, 40000000);
  EXPECT_EQ(c.interaction_features(), 479);
  EXPECT_EQ(c.bottom_mlp, (std::vector<int64_t>{512, 256, 128}));
  EXPECT_EQ(c.top_mlp, (std::vector<int64_t>{1024, 1024, 512, 256, 1}));
  const DlrmConfig t = tiny_config();
  EXPECT_EQ(t.num_tables(), 6);
  EXPECT_EQ(t.interaction_features(), 16 + 21);
  EXPECT_EQ(category_of("tiny-dlrmv2"), "recommendation-specialised");
}

TEST(DlrmConfig, NamedErrors) {
  auto error_with = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(tiny_config_json());
    edit(j);
    return error_of([&] { parse_dlrm_config(j.dump(), "x/config.json"); });
  };
  auto expect_error = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& needle) {
    const std::string e = error_with(edit);
    EXPECT_NE(e.find(needle), std::string::npos) << "error '" << e << "' lacks '" << needle << "'";
  };
  expect_error([](auto& j) { j["interaction"] = "dcn"; }, "interaction 'dcn' is not supported (only \"dot\"");
  expect_error([](auto& j) { j["interaction"] = "cat"; }, "interaction 'cat' is not supported");
  expect_error([](auto& j) { j["interaction_itself"] = true; }, "interaction_itself = true");
  expect_error([](auto& j) { j["sparse_features"] = 26; }, "sparse_features = 26 but table_sizes lists 6 tables");
  expect_error([](auto& j) { j["bottom_mlp"] = {32, 24}; }, "the bottom MLP must end at embedding_dim 16");
  expect_error([](auto& j) { j["top_mlp"] = {48, 2}; }, "the top MLP must end in 1 output");
  expect_error([](auto& j) { j["max_ind_range"] = 50; }, "table_sizes[3] = 100 rows, more than max_ind_range 50");
  expect_error([](auto& j) { j["table_sizes"][2] = 0; }, "'table_sizes'[2] must be a positive integer");
  expect_error([](auto& j) { j["table_sizes"] = nlohmann::json::array(); }, "needs 'table_sizes'");
  expect_error([](auto& j) { j.erase("embedding_dim"); }, "needs a positive integer 'embedding_dim'");
  expect_error([](auto& j) { j["dense_features"] = -1; }, "needs a positive integer 'dense_features'");
  expect_error([](auto& j) { j["model_type"] = "bert"; }, "model_type 'bert' is not a DLRM config");
  EXPECT_NE(error_of([] { parse_dlrm_config("[1]", "x"); }).find("a config must be a JSON object"), std::string::npos);
}

TEST(DlrmModel, DeclaresDlrmNetNames) {
  const std::unique_ptr<Model> m = create_model("dlrmv2");
  const std::vector<TensorDecl> w = m->weights();
  ASSERT_EQ(w.size(), 26u + 2 * 3 + 2 * 5);
  EXPECT_EQ(w[0].name, "emb_l.0.weight");
  EXPECT_EQ(w[0].shape, (std::vector<int64_t>{40000000, 128}));
  EXPECT_EQ(w[25].name, "emb_l.25.weight");
  EXPECT_EQ(w[26].name, "bot_l.0.weight");
  EXPECT_EQ(w[26].shape, (std::vector<int64_t>{512, 13}));
  EXPECT_EQ(w[30].name, "bot_l.4.weight");
  EXPECT_EQ(w[32].name, "top_l.0.weight");
  EXPECT_EQ(w[32].shape, (std::vector<int64_t>{1024, 479}));
  EXPECT_EQ(w[40].name, "top_l.8.weight");
  EXPECT_EQ(w[40].shape, (std::vector<int64_t>{1, 256}));
  EXPECT_EQ(w[41].name, "top_l.8.bias");
  EXPECT_EQ(m->inputs().size(), 3u);
  EXPECT_EQ(m->outputs()[0].name, "logits");
}

TEST(DlrmModel, CpuForwardMatchesHostReference) {
  const TinyCheckpoint ckpt(test::seed_for("dlrm_cpu_forward"));
  const std::vector<DlrmSample> samples = test::dlrm::random_samples(ckpt.config, 9, test::seed_for("dlrm_samples"));
  for (DType dt : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dt));
    const auto model = loaded(ckpt.dir.string(), dt, ckpt.dir);
    const std::vector<DlrmPrediction> got = dlrm_predict(*model, samples);
    ASSERT_EQ(got.size(), samples.size());
    const auto same_rounding = test::dlrm::reference_logits(ckpt.config, ckpt.weights, samples, dt, dt);
    const auto exact = test::dlrm::reference_logits(ckpt.config, ckpt.weights, samples, dt, std::nullopt);
    // Same roundings in the same order: equal up to a rare tie flipping one rounding.
    const double ulp = dt == DType::bf16 ? 1.0 / 128 : 1.0 / 1024;
    double worst = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
      EXPECT_NEAR(got[s].logit, same_rounding[s], 2 * ulp * (1 + std::fabs(same_rounding[s]))) << "sample " << s;
      EXPECT_NEAR(got[s].probability, 1 / (1 + std::exp(-static_cast<double>(got[s].logit))), 1e-6);
      // Against the exact result: the dtype's roundings of every stored tensor, about 10 deep.
      EXPECT_NEAR(got[s].logit, exact[s], 8 * ulp * (1 + std::fabs(exact[s]))) << "sample " << s;
      worst = std::max(worst, std::fabs(got[s].logit - exact[s]) / (1 + std::fabs(exact[s])));
    }
    std::printf("[ dlrm ] %s: worst logit error against the exact forward %.2e (relative to 1 + |logit|)\n",
                dtype_name(dt).data(), worst);
  }
}

TEST(DlrmModel, SampleScoresTheSameAloneAndInABatch) {
  const TinyCheckpoint ckpt(test::seed_for("dlrm_alone"));
  const auto model = loaded(ckpt.dir.string(), DType::bf16, ckpt.dir);
  const std::vector<DlrmSample> batch = test::dlrm::random_samples(ckpt.config, 12, test::seed_for("dlrm_alone_s"), 5);
  const std::vector<DlrmPrediction> all = dlrm_predict(*model, batch);
  for (size_t s : {size_t{0}, size_t{4}, size_t{11}}) {
    const std::vector<DlrmPrediction> alone = dlrm_predict(*model, {batch[s]});
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_EQ(alone[0].logit, all[s].logit) << "sample " << s;
    EXPECT_EQ(alone[0].probability, all[s].probability) << "sample " << s;
  }
  EXPECT_TRUE(dlrm_predict(*model, {}).empty());
}

TEST(DlrmModel, DummyWeightsRunAndRepeat) {
  const auto a = loaded("tiny-dlrmv2", DType::bf16);
  const auto b = loaded("tiny-dlrmv2", DType::bf16);
  const std::vector<DlrmSample> samples = test::dlrm::random_samples(tiny_config(), 6, 11);
  const auto pa = dlrm_predict(*a, samples), pb = dlrm_predict(*b, samples);
  for (size_t s = 0; s < samples.size(); ++s) {
    EXPECT_TRUE(std::isfinite(pa[s].logit));
    EXPECT_GT(pa[s].probability, 0.f);
    EXPECT_LT(pa[s].probability, 1.f);
    EXPECT_EQ(pa[s].logit, pb[s].logit) << "the same seed gives the same weights";
  }
}

TEST(DlrmModel, RunnerNamesBadSamples) {
  const auto model = loaded("tiny-dlrmv2", DType::bf16, {}, 4);
  const DlrmConfig c = tiny_config();
  const std::vector<DlrmSample> good = test::dlrm::random_samples(c, 3, 5);
  auto with = [&](const std::function<void(std::vector<DlrmSample>&)>& edit) {
    std::vector<DlrmSample> s = good;
    edit(s);
    return error_of([&] { dlrm_predict(*model, s); });
  };
  auto expect_error = [&](const std::function<void(std::vector<DlrmSample>&)>& edit, const std::string& needle) {
    const std::string e = with(edit);
    EXPECT_NE(e.find(needle), std::string::npos) << "error '" << e << "' lacks '" << needle << "'";
  };
  expect_error(
      [](auto& s) {
        s[1].sparse[3] = {5, 100};
      },
      "sample 1, table 3, id 1 is 100, outside the table's 100 rows");
  expect_error([](auto& s) { s[2].sparse[2] = {0, -1}; }, "sample 2, table 2, id 1 is -1, outside the table's 1 rows");
  expect_error([](auto& s) { s[0].sparse.pop_back(); }, "sample 0 has ids for 5 tables; the model has 6");
  expect_error([](auto& s) { s[1].sparse.push_back({}); }, "sample 1 has ids for 7 tables; the model has 6");
  expect_error([](auto& s) { s[2].dense.push_back(1.f); }, "sample 2 has 6 dense features; the model takes 5");
  expect_error(
      [](auto& s) {
        const std::vector<DlrmSample> copy = s;
        s.insert(s.end(), copy.begin(), copy.end() - 1);
      },
      "5 samples, more than the 4 the model was loaded for");
  const std::unique_ptr<Model> unloaded = create_model("tiny-dlrmv2");
  EXPECT_NE(error_of([&] { dlrm_predict(*dynamic_cast<DlrmModel*>(unloaded.get()), good); }).find("not loaded"),
            std::string::npos);
}

TEST(DlrmModel, ForwardNamesBadInputs) {
  const auto model = loaded("tiny-dlrmv2", DType::bf16, {}, 8);
  Tensor dense = Tensor::zeros({2, 5}, DType::bf16), dense32 = Tensor::zeros({2, 5}, DType::f32);
  Tensor idx = Tensor::zeros({4}, DType::i32), off = Tensor::zeros({12}, DType::i32);  // needs 6 x 2 + 1
  StepInputs in;
  in.tensors = {{"dense_features", dense}, {"indices", idx}, {"offsets", off}};
  model->plan(in, nullptr);
  EXPECT_NE(error_of([&] {
              model->forward(in, nullptr);
            }).find("offsets must be [13] (a bag for each of the 6 tables and 2 samples"),
            std::string::npos);
  in.tensors[0].second = dense32;
  EXPECT_NE(error_of([&] { model->forward(in, nullptr); }).find("dense_features must be bf16 (the model dtype)"),
            std::string::npos);
  in.tensors.pop_back();
  EXPECT_NE(error_of([&] { model->forward(in, nullptr); }).find("step input 'offsets' is missing"), std::string::npos);
  StepInputs big;
  Tensor many = Tensor::zeros({9, 5}, DType::bf16), wrong = Tensor::zeros({2, 4}, DType::bf16);
  big.tensors = {{"dense_features", many}};
  EXPECT_NE(error_of([&] { model->plan(big, nullptr); }).find("9 samples, more than the 8"), std::string::npos);
  big.tensors = {{"dense_features", wrong}};
  EXPECT_NE(error_of([&] { model->plan(big, nullptr); }).find("dense_features must be [B, 5]"), std::string::npos);
  LoadOptions o;
  o.dtype = DType::f32;
  const std::unique_ptr<Model> m = create_model("tiny-dlrmv2");
  EXPECT_NE(error_of([&] { m->load(o); }).find("the model dtype must be bf16 or f16"), std::string::npos);
}

TEST(DlrmModel, CheckpointMissingATensorIsNamed) {
  TinyCheckpoint ckpt(test::seed_for("dlrm_missing"));
  ckpt.weights.top.pop_back();  // no top_l.8.*
  test::dlrm::write_checkpoint(ckpt.dir, tiny_config_json(), ckpt.config, ckpt.weights);
  const std::string e = error_of([&] { loaded(ckpt.dir.string(), DType::bf16, ckpt.dir); });
  EXPECT_NE(e.find("has no tensor 'top_l.8.weight', which a DLRM of this config needs"), std::string::npos) << e;
}

}  // namespace
}  // namespace fk::models::recsys
