// XLM-RoBERTa / BGE-M3 beyond the golden check: config parsing and its refusals, the
// registration and presets, the upstream weight names, RoBERTa's position ids, checkpoint
// and head-file errors, the Batch runner's packing (a sequence embeds the same alone and in
// a batch) and its errors, and the production preset's shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <algorithm>
#include <iterator>
#include <string>

#include "core/safetensors/safetensors.h"
#include "models/encoder/embed_batch.h"
#include "models/encoder/golden_check.h"
#include "models/encoder/torch_state_dict.h"
#include "models/registry.h"
#include "support/test_seed.h"

namespace fk::models::encoder {
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

std::string tiny_config() {
  return std::string(resolve_model("tiny-bge-m3").config_json);
}

std::string with(const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(tiny_config());
  j[key] = nlohmann::json::parse(value);
  return j.dump();
}

TEST(XlmRobertaConfig, ParsesThePresets) {
  const XlmRobertaConfig tiny = parse_xlm_roberta_config(tiny_config(), "tiny");
  EXPECT_EQ(tiny.hidden_size, 128);
  EXPECT_EQ(tiny.head_dim(), 64);
  EXPECT_EQ(tiny.max_tokens_per_sequence(), 38);
  const XlmRobertaConfig big = parse_xlm_roberta_config(resolve_model("bge-m3").config_json, "bge-m3");
  EXPECT_EQ(big.num_hidden_layers, 24);
  EXPECT_EQ(big.hidden_size, 1024);
  EXPECT_EQ(big.num_attention_heads, 16);
  EXPECT_EQ(big.intermediate_size, 4096);
  EXPECT_EQ(big.vocab_size, 250002);
  EXPECT_EQ(big.max_tokens_per_sequence(), 8192);
  EXPECT_DOUBLE_EQ(big.layer_norm_eps, 1e-5);
  EXPECT_EQ(big.gelu, ops::GeluApprox::none);
}

TEST(XlmRobertaConfig, RefusesWhatItDoesNotRun) {
  auto err = [](const std::string& json) { return error_of([&] { parse_xlm_roberta_config(json, "c.json"); }); };
  EXPECT_NE(err(with("position_embedding_type", "\"relative_key\"")).find("position_embedding_type 'relative_key' is not supported"),
            std::string::npos);
  EXPECT_NE(err(with("is_decoder", "true")).find("is_decoder = true"), std::string::npos);
  EXPECT_NE(err(with("add_cross_attention", "true")).find("add_cross_attention"), std::string::npos);
  EXPECT_NE(err(with("hidden_act", "\"relu\"")).find("hidden_act 'relu' is not supported"), std::string::npos);
  EXPECT_NE(err(with("num_attention_heads", "3")).find("not a multiple of num_attention_heads 3"), std::string::npos);
  EXPECT_NE(err(with("num_attention_heads", "32")).find("head dim 4"), std::string::npos);
  EXPECT_NE(err(with("model_type", "\"roberta\"")).find("model_type 'roberta' is not a BERT-family encoder config"),
            std::string::npos);
  EXPECT_NE(err(with("max_position_embeddings", "2")).find("leaves no position"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(tiny_config());
  j.erase("hidden_size");
  EXPECT_NE(err(j.dump()).find("c.json: XLM-RoBERTa config needs an integer 'hidden_size'"), std::string::npos);
  EXPECT_EQ(parse_xlm_roberta_config(with("hidden_act", "\"gelu_new\""), "c").gelu, ops::GeluApprox::tanh);
}

TEST(XlmRobertaRegistration, ListedAsABatchModelWithItsPresets) {
  const ModelRegistration& r = registration("xlm_roberta");
  EXPECT_EQ(r.pattern, RunPattern::batch);
  EXPECT_EQ(r.category, "recommendation-specialised");
  EXPECT_EQ(r.names, std::vector<std::string>{"BGE-M3"});
  ASSERT_EQ(r.presets.size(), 2u);
  EXPECT_EQ(resolve_model("bge-m3").preset->kind, PresetKind::production);
  EXPECT_EQ(resolve_model("tiny-bge-m3").preset->kind, PresetKind::tiny);
  EXPECT_EQ(resolve_model(test::encoder_golden_dir("xlm_roberta")).registration, &r);
  EXPECT_EQ(category_of("tiny-bge-m3"), "encoders");
  EXPECT_TRUE(registration_problems().empty());
  const ModelSource s = resolve_model("tiny-bge-m3");
  check_runnable(s, RunPattern::batch, "cpu", "fk embed");
  EXPECT_NE(error_of([&] { check_runnable(s, RunPattern::generate, "cpu", "fk run"); }).find("runs by the batch pattern"),
            std::string::npos);
}

TEST(XlmRobertaModel, DeclaresTheUpstreamWeightNames) {
  const auto m = create_model("bge-m3");
  EXPECT_EQ(m->pattern(), RunPattern::batch);
  EXPECT_TRUE(m->state().empty());
  const auto w = m->weights();
  auto find = [&](const std::string& name) -> const TensorDecl* {
    for (const TensorDecl& d : w)
      if (d.name == name) return &d;
    return nullptr;
  };
  ASSERT_NE(find("embeddings.word_embeddings.weight"), nullptr);
  EXPECT_EQ(find("embeddings.word_embeddings.weight")->shape, (std::vector<int64_t>{250002, 1024}));
  EXPECT_EQ(find("embeddings.position_embeddings.weight")->shape, (std::vector<int64_t>{8194, 1024}));
  ASSERT_NE(find("encoder.layer.23.attention.self.query.weight"), nullptr);
  EXPECT_EQ(find("encoder.layer.23.intermediate.dense.weight")->shape, (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(find("encoder.layer.0.output.LayerNorm.bias")->shape, (std::vector<int64_t>{1024}));
  EXPECT_EQ(find("colbert_linear.weight")->shape, (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(find("sparse_linear.weight")->shape, (std::vector<int64_t>{1, 1024}));
  EXPECT_EQ(find("encoder.layer.24.attention.self.query.weight"), nullptr);
  // Every backbone tensor of the golden checkpoint (saved by transformers) is declared.
  const auto ckpt = safetensors::Checkpoint::open(test::encoder_golden_dir("xlm_roberta"));
  const auto tiny = create_model(test::encoder_golden_dir("xlm_roberta"))->weights();
  for (const TensorDecl& d : tiny)
    if (d.name.find("_linear.") == std::string::npos) {
      EXPECT_TRUE(ckpt.contains(d.name)) << d.name;
    }
}

TEST(XlmRobertaModel, RobertaPositionIdsSkipPadTokens) {
  EXPECT_EQ(roberta_position_ids({0, 5, 6, 2}, 1), (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_EQ(roberta_position_ids({0, 5, 1, 6, 2}, 1), (std::vector<int32_t>{2, 3, 1, 4, 5}));
  EXPECT_EQ(roberta_position_ids({7}, 0), (std::vector<int32_t>{1}));
}

std::unique_ptr<XlmRobertaModel> tiny_model(int64_t max_tokens = 64, int64_t max_seqs = 8) {
  std::unique_ptr<Model> m = create_model("tiny-bge-m3");
  std::unique_ptr<XlmRobertaModel> x(dynamic_cast<XlmRobertaModel*>(m.release()));
  LoadOptions o;
  o.max_tokens = max_tokens;
  o.max_seqs = max_seqs;
  o.seed = test::seed_for("xlm_roberta_tiny");
  x->load(o);
  return x;
}

TEST(XlmRobertaModel, ASequenceEmbedsTheSameAloneAndInABatch) {
  auto m = tiny_model();
  const std::vector<std::vector<int32_t>> seqs = {{0, 17, 99, 2}, {0, 2}, {0, 250, 1, 33, 44, 2}, {0}};
  const auto batch = embed_batch(*m, seqs, {.hidden_states = true});
  ASSERT_EQ(batch.size(), seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto alone = embed_batch(*m, {seqs[s]}, {.hidden_states = true});
    EXPECT_EQ(alone[0].last_hidden_state, batch[s].last_hidden_state) << s;
    EXPECT_EQ(alone[0].dense, batch[s].dense) << s;
    EXPECT_EQ(alone[0].colbert, batch[s].colbert) << s;
    EXPECT_EQ(alone[0].sparse, batch[s].sparse) << s;
    EXPECT_EQ(batch[s].colbert.size(), (seqs[s].size() - 1) * 128) << s;
    EXPECT_EQ(batch[s].sparse.size(), seqs[s].size()) << s;
    double norm = 0;
    for (float x : batch[s].dense) norm += static_cast<double>(x) * x;
    EXPECT_NEAR(norm, 1.0, 1e-5) << s;
    for (const auto& [id, w] : batch[s].lexical_weights) {
      EXPECT_GT(w, 0.f);
      EXPECT_TRUE(id != 0 && id != 1 && id != 2 && id != 3) << id;
    }
  }
  // Another sequence's tokens change nothing here, but another token of this one does.
  const auto changed = embed_batch(*m, {{0, 17, 98, 2}});
  EXPECT_NE(changed[0].dense, batch[0].dense);
}

TEST(XlmRobertaModel, BatchErrorsAreNamed) {
  auto m = tiny_model(40, 2);
  EXPECT_NE(error_of([&] { embed_batch(*m, {{0, 2}, {}}); }).find("sequence 1 has no tokens"), std::string::npos);
  EXPECT_NE(error_of([&] { embed_batch(*m, {{0, 256}}); }).find("sequence 0 token 1 has id 256, outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] { embed_batch(*m, {std::vector<int32_t>(39, 5)}); }).find("more than the 38 its position table holds"),
            std::string::npos);
  EXPECT_NE(error_of([&] { embed_batch(*m, {{0}, {0}, {0}}); }).find("3 sequences, more than the 2"), std::string::npos);
  EXPECT_NE(error_of([&] { embed_batch(*m, {std::vector<int32_t>(30, 5), std::vector<int32_t>(30, 5)}); })
                .find("60 tokens, more than the 40"),
            std::string::npos);
}

// A copy of the golden checkpoint folder with some of its files, for the loading errors.
fs::path partial_copy(const std::string& name, const std::vector<std::string>& files) {
  const fs::path dir = fs::temp_directory_path() / ("fk_xlmr_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string& f : files) fs::copy_file(fs::path(test::encoder_golden_dir("xlm_roberta")) / f, dir / f);
  return dir;
}

TEST(XlmRobertaModel, CheckpointErrorsAreNamed) {
  const std::string config = "config.json";
  LoadOptions o;
  // The heads as BGE-M3 ships them (torch.save files) give what their safetensors form gives.
  {
    const fs::path dir = partial_copy("pt", {config, "model.safetensors", "sparse_linear.pt", "colbert_linear.pt"});
    o.checkpoint = dir;
    auto from_pt = create_model(dir.string());
    from_pt->load(o);
    o.checkpoint = test::encoder_golden_dir("xlm_roberta");
    auto from_st = create_model(test::encoder_golden_dir("xlm_roberta"));
    from_st->load(o);
    const std::vector<std::vector<int32_t>> seqs = {{0, 17, 99, 31, 2}};
    const auto a = embed_batch(dynamic_cast<XlmRobertaModel&>(*from_pt), seqs);
    const auto b = embed_batch(dynamic_cast<XlmRobertaModel&>(*from_st), seqs);
    EXPECT_FALSE(a[0].colbert.empty());
    EXPECT_EQ(a[0].colbert, b[0].colbert);
    EXPECT_EQ(a[0].sparse, b[0].sparse);
    fs::remove_all(dir);
  }
  // One head without the other.
  {
    const fs::path dir = partial_copy("one_head", {config, "model.safetensors", "sparse_linear.pt"});
    o.checkpoint = dir;
    const std::string e = error_of([&] { create_model(dir.string())->load(o); });
    EXPECT_NE(e.find("colbert_linear is missing"), std::string::npos) << e;
    fs::remove_all(dir);
  }
  // No heads: a plain XLM-RoBERTa, dense only.
  {
    const fs::path dir = partial_copy("no_heads", {config, "model.safetensors"});
    o.checkpoint = dir;
    auto m = create_model(dir.string());
    m->load(o);
    EXPECT_FALSE(dynamic_cast<XlmRobertaModel&>(*m).has_heads());
    const auto out = embed_batch(dynamic_cast<XlmRobertaModel&>(*m), {{0, 5, 2}});
    EXPECT_EQ(out[0].dense.size(), 128u);
    EXPECT_TRUE(out[0].colbert.empty());
    fs::remove_all(dir);
  }
  // A backbone tensor missing from the checkpoint.
  {
    const fs::path dir = partial_copy("missing", {config});
    const auto full = safetensors::File::open(fs::path(test::encoder_golden_dir("xlm_roberta")) / "model.safetensors");
    safetensors::NamedViews views;
    for (const std::string& n : full.names())
      if (n != "encoder.layer.1.attention.self.key.bias") views.emplace_back(n, full.view(n));
    safetensors::save(dir / "model.safetensors", views);
    o.checkpoint = dir;
    const std::string e = error_of([&] { create_model(dir.string())->load(o); });
    EXPECT_NE(e.find("has no tensor 'encoder.layer.1.attention.self.key.bias'"), std::string::npos) << e;
    fs::remove_all(dir);
  }
}

// The heads' torch.save files read as PyTorch wrote them: names, shapes and values (the
// golden script saved the same bf16-rounded values in both forms).
TEST(TorchStateDict, ReadsTheHeadsAsTorchSavedThem) {
  const fs::path dir = test::encoder_golden_dir("xlm_roberta");
  for (const char* stem : {"sparse_linear", "colbert_linear"}) {
    const TorchStateDict d = TorchStateDict::open(dir / (std::string(stem) + ".pt"));
    EXPECT_EQ(d.names(), (std::vector<std::string>{"bias", "weight"}));
    const auto st = safetensors::File::open(dir / (std::string(stem) + ".safetensors"));
    for (const char* n : {"weight", "bias"}) {
      const Tensor t = d.load(n);
      EXPECT_EQ(t.dtype(), DType::f32);
      ASSERT_EQ(t.shape(), st.info(n).shape) << stem << " " << n;
      const TensorView want = st.view(n);
      for (int64_t i = 0; i < t.numel(); ++i)
        ASSERT_EQ(t.data_as<float>()[i], load_element(static_cast<const char*>(want.data) + 2 * i, DType::bf16))
            << stem << " " << n << " " << i;
    }
  }
}

TEST(TorchStateDict, MalformedFilesAreNamedErrors) {
  EXPECT_NE(error_of([] { TorchStateDict::from_bytes({'n', 'o', 't', ' ', 'z', 'i', 'p'}, "x.pt"); })
                .find("x.pt: not a zip archive"),
            std::string::npos);
  std::ifstream f(fs::path(test::encoder_golden_dir("xlm_roberta")) / "sparse_linear.pt", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  EXPECT_NE(error_of([&] { TorchStateDict::from_bytes(cut, "cut.pt"); }).find("cut.pt"), std::string::npos);
  // A pickle that calls anything but the tensor rebuild is refused, not run: turn the
  // OrderedDict global into another name of the same length.
  std::vector<uint8_t> evil = bytes;
  const std::string from = "collections\nOrderedDict", to = "collections\nOrderedDicX";
  auto it = std::search(evil.begin(), evil.end(), from.begin(), from.end());
  ASSERT_NE(it, evil.end());
  std::copy(to.begin(), to.end(), it);
  EXPECT_NE(error_of([&] { TorchStateDict::from_bytes(evil, "evil.pt"); }).find("calls collections.OrderedDicX"),
            std::string::npos);
}

}  // namespace
}  // namespace fk::models::encoder
