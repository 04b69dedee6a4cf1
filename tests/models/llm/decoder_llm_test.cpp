// The decoder LLMs through the Model interface: the weights they declare are the golden HF
// checkpoints' tensors exactly, their state groups follow the attention windows, and a
// step run through Model::plan/forward matches transformers' logits.
#include "models/llm/decoder_llm.h"

#include <map>

#include "models/llm/golden_check.h"  // tests/models/llm/
#include "models/registry.h"

namespace fk::engine::test {
namespace {

const char* kFamilies[] = {"llama", "mistral", "qwen2",     "qwen3", "gemma",    "gemma2",
                           "gemma3", "mixtral", "qwen3_moe", "olmoe", "qwen2_moe"};

TEST(DecoderLlm, DeclaresTheCheckpointsTensors) {
  for (const char* family : kFamilies) {
    SCOPED_TRACE(family);
    const auto model = models::create_model(model_dir(family));
    std::map<std::string, Shape> declared;
    for (const models::TensorDecl& w : model->weights())
      EXPECT_TRUE(declared.emplace(w.name, w.shape).second) << "declared twice: " << w.name;
    const auto ckpt = safetensors::Checkpoint::open(model_dir(family));
    std::map<std::string, Shape> stored;
    for (const std::string& name : ckpt.names()) stored[name] = ckpt.info(name).shape;
    EXPECT_EQ(declared, stored);
  }
}

// A block-fp8 checkpoint (Qwen3-*-FP8) stores its projections in fp8, each with a scale
// per 128 x 128 block; the router, norms and embeddings stay in the model dtype.
TEST(DecoderLlm, DeclaresFp8BlockScales) {
  nlohmann::json config = nlohmann::json::parse(model_config_json_by_name("tiny-qwen3-moe"));
  config["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}},
                                   {"activation_scheme", "dynamic"}};
  std::map<std::string, models::TensorDecl> declared;
  for (const models::TensorDecl& w : models::create_model_from_config(config.dump())->weights()) declared[w.name] = w;
  const std::string expert = "model.layers.0.mlp.experts.3.down_proj.weight";
  ASSERT_TRUE(declared.count(expert));
  EXPECT_EQ(declared[expert].dtype, DType::f8e4m3fn);
  EXPECT_EQ(declared[expert].shape, (Shape{64, 32}));
  ASSERT_TRUE(declared.count(expert + "_scale_inv"));
  EXPECT_EQ(declared[expert + "_scale_inv"].dtype, DType::f32);
  EXPECT_EQ(declared[expert + "_scale_inv"].shape, (Shape{1, 1}));
  EXPECT_EQ(declared["model.layers.1.self_attn.q_proj.weight"].dtype, DType::f8e4m3fn);
  EXPECT_EQ(declared["model.layers.0.mlp.gate.weight"].dtype, DType::bf16);
  EXPECT_FALSE(declared.count("model.layers.0.mlp.gate.weight_scale_inv"));
  EXPECT_EQ(declared["model.embed_tokens.weight"].dtype, DType::bf16);
}

TEST(DecoderLlm, OneKvGroupPerAttentionWindow) {
  const auto llama = models::create_model("tiny-llama")->state();
  ASSERT_EQ(llama.size(), 1u);
  EXPECT_EQ(llama[0].kind, runtime::StateKind::paged_kv);
  EXPECT_EQ(llama[0].layers, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(llama[0].kv_heads, 2);
  EXPECT_EQ(llama[0].head_dim, 16);
  EXPECT_EQ(llama[0].sliding_window, 0);

  // Gemma 2 alternates sliding (even) and full (odd) layers.
  const auto gemma2 = models::create_model("tiny-gemma2")->state();
  ASSERT_EQ(gemma2.size(), 2u);
  EXPECT_EQ(gemma2[0].group, "attention");
  EXPECT_EQ(gemma2[0].layers, (std::vector<int64_t>{1}));
  EXPECT_EQ(gemma2[1].layers, (std::vector<int64_t>{0}));
  EXPECT_EQ(gemma2[1].sliding_window, 32);
}

TEST(DecoderLlm, StepsNeedALoadedModelAndABatch) {
  auto model = models::create_model("tiny-llama");
  models::StepInputs in;
  try {
    model->plan(in, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("load() it"), std::string::npos) << e.what();
  }
}

// One prefill over a golden prompt + its generated tokens through the Model interface.
void check_prefill(const std::string& family) {
  SCOPED_TRACE(family);
  const Golden g = load_golden(family);
  auto model = models::create_model(model_dir(family));
  models::LoadOptions o;
  o.checkpoint = model_dir(family);
  o.max_tokens = 128;
  o.max_seqs = 4;
  o.max_position = 512;
  model->load(o);
  ASSERT_TRUE(model->loaded());
  const auto state = model->state();
  KvCache kv(static_cast<DecoderLlm&>(*model).spec().num_layers(), 16, 16, state[0].kv_heads, state[0].head_dim,
             DType::bf16, Device::cpu());

  std::vector<int64_t> tokens = g.prompts[0];
  tokens.insert(tokens.end(), g.generated[0].begin(), g.generated[0].end());
  const int64_t T = static_cast<int64_t>(tokens.size()), pages = (T + 15) / 16;
  std::vector<int32_t> ids, rows, kv_indices;
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < T; ++i) {
    ids.push_back(static_cast<int32_t>(tokens[static_cast<size_t>(i)]));
    pos.push_back(i);
    rows.push_back(static_cast<int32_t>(i));
  }
  for (int64_t p = 0; p < pages; ++p) kv_indices.push_back(static_cast<int32_t>(p));
  std::vector<int32_t> qo = {0, static_cast<int32_t>(T)}, kvp = {0, static_cast<int32_t>(pages)},
                       last = {static_cast<int32_t>(T - (pages - 1) * 16)};
  auto view = [](auto& v, DType t) {
    return make_view(v.data(), {static_cast<int64_t>(v.size())}, t, Device::cpu());
  };
  ForwardBatch b;
  b.num_tokens = T;
  b.num_seqs = 1;
  b.num_logits = T;
  b.input_ids = view(ids, DType::i32);
  b.positions = view(pos, DType::i64);
  b.slot_mapping = view(pos, DType::i64);  // one sequence from page 0: slot = position
  b.logits_indices = view(rows, DType::i32);
  b.qo_indptr = b.qo_indptr_host = view(qo, DType::i32);
  b.kv_indptr = b.kv_indptr_host = view(kvp, DType::i32);
  b.kv_indices = view(kv_indices, DType::i32);
  b.kv_last_page_len = b.kv_last_page_len_host = view(last, DType::i32);
  models::StepInputs in;
  in.batch = &b;
  in.kv = &kv;
  model->plan(in, nullptr);
  const TensorView logits = model->forward(in, nullptr);
  ASSERT_EQ(logits.size(0), T);
  ASSERT_EQ(logits.size(1), g.vocab);
  double worst = 0;
  for (int64_t r = 0; r < T; ++r) {
    const float* want = g.logits[0].data() + r * g.vocab;
    double err = 0;
    for (int64_t v = 0; v < g.vocab; ++v) {
      const auto* p = static_cast<const uint8_t*>(logits.data) + (r * g.vocab + v) * dtype_size(logits.dtype);
      err = std::max(err, std::fabs(load_element(p, logits.dtype) - want[v]));
    }
    worst = std::max(worst, err / row_scale(want, g.vocab));
  }
  EXPECT_LE(worst, kLogitTol);
}

TEST(DecoderLlm, ForwardMatchesTransformers) {
  check_prefill("llama");
  check_prefill("mixtral");
  check_prefill("gemma2");
}

}  // namespace
}  // namespace fk::engine::test
