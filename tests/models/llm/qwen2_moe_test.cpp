// Qwen2-MoE in the engine (CPU backend): the spec its config resolves to (Qwen2's biased
// q/k/v attention, sparse layers with a shared expert, dense layers where the config keeps
// them), its checkpoint names (HF's per-expert and transformers 5's fused experts, the shared
// expert and its gate), what the shared expert computes inside a forward pass, and the
// built-in models running through the engine.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "serving/generate/engine.h"
#include "models/llm/golden_check.h"  // prefill_logits (tests/models/llm/)
#include "models/llm/model_spec.h"
#include "models/llm/weights.h"
#include "fk/element.h"
#include "models/llm/model_config.h"
#include "core/safetensors/safetensors.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

namespace fs = std::filesystem;

TEST(Qwen2Moe, SpecOfTheTinyAndTheReleasedModel) {
  const ModelSpec s = model_spec_for(model_config_by_name("tiny-qwen2-moe"));
  EXPECT_EQ(s.family, "qwen2_moe");
  EXPECT_TRUE(s.qkv_bias);
  EXPECT_FALSE(s.o_bias);
  EXPECT_FALSE(s.qk_norm);
  EXPECT_FALSE(s.qk_norm_across_heads);
  EXPECT_EQ(s.norm, NormKind::rms);
  ASSERT_TRUE(s.moe.enabled);
  EXPECT_EQ(s.moe.num_experts, 4);
  EXPECT_EQ(s.moe.top_k, 2);
  EXPECT_EQ(s.moe.intermediate, 32);
  EXPECT_EQ(s.moe.shared_intermediate, 48);
  EXPECT_FALSE(s.moe.renormalize);
  EXPECT_TRUE(s.is_moe_layer(0));
  EXPECT_FALSE(s.is_moe_layer(1));  // mlp_only_layers: [1]

  const ModelSpec big = model_spec_for(model_config_by_name("qwen1.5-moe-a2.7b"));
  EXPECT_EQ(big.moe.num_experts, 60);
  EXPECT_EQ(big.moe.top_k, 4);
  EXPECT_EQ(big.moe.intermediate, 1408);
  EXPECT_EQ(big.moe.shared_intermediate, 5632);
  EXPECT_FALSE(big.moe.renormalize);
  EXPECT_TRUE(big.qkv_bias);
  for (int64_t l = 0; l < big.num_layers(); ++l) EXPECT_TRUE(big.is_moe_layer(l)) << l;
  EXPECT_EQ(big.config.head_dim, 128);
  EXPECT_EQ(big.layers[0].window_left, -1);

  ModelConfig unbiased = model_config_by_name("tiny-qwen2-moe");
  unbiased.attention_bias = false;  // what "qkv_bias": false parses to
  EXPECT_FALSE(model_spec_for(unbiased).qkv_bias);
  // Without a shared expert (width 0) the block is the routed experts alone.
  ModelConfig plain = model_config_by_name("tiny-qwen2-moe");
  plain.moe.shared_expert_intermediate_size = 0;
  EXPECT_EQ(model_spec_for(plain).moe.shared_intermediate, 0);
}

TEST(Qwen2Moe, DummyWeightsHoldTheSharedExpert) {
  const ModelSpec spec = model_spec_for(model_config_by_name("tiny-qwen2-moe"));
  const ModelWeights w = dummy_weights(spec, DType::bf16, Device::cpu(), 3);
  const LayerWeights& moe = w.layers[0];
  EXPECT_EQ(moe.shared_gate_up.shape(), (Shape{96, 64}));
  EXPECT_EQ(moe.shared_down.shape(), (Shape{64, 48}));
  EXPECT_EQ(moe.shared_gate.shape(), (Shape{1, 64}));
  EXPECT_EQ(moe.w13.shape(), (Shape{4, 64, 64}));
  EXPECT_EQ(moe.qkv_bias.shape(), (Shape{128}));
  EXPECT_FALSE(moe.gate_up.defined());
  const LayerWeights& dense = w.layers[1];
  EXPECT_EQ(dense.gate_up.shape(), (Shape{256, 64}));
  EXPECT_FALSE(dense.router.defined());
  EXPECT_FALSE(dense.shared_gate.defined());
}

// ---- checkpoints ------------------------------------------------------------------------

TensorView part(const Tensor& t, int64_t first_element, const Shape& shape) {
  return make_view(t.view().element_ptr(first_element), shape.data(), static_cast<int>(shape.size()), t.dtype(),
                   t.device());
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() ||
         (a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

enum class Experts { per_expert, fused };

// `w` as an HF checkpoint folder under the names a Qwen2-MoE checkpoint uses; `skip` names
// one tensor to leave out.
fs::path write_checkpoint(const ModelSpec& spec, const ModelWeights& w, Experts layout, const std::string& skip = "") {
  const ModelConfig& c = spec.config;
  const int64_t H = c.hidden_size, q = c.q_size(), kv = c.kv_size(), I = c.intermediate_size, E = spec.moe.num_experts,
                Ie = spec.moe.intermediate, Is = spec.moe.shared_intermediate;
  const fs::path dir = fs::temp_directory_path() /
                       ("fk_qwen2_moe_" + std::to_string(static_cast<int>(layout)) + skip.substr(0, 40) + "_" +
                        std::to_string(fk::test::seed_for("Qwen2MoeCheckpoint" + skip) % 100000));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << model_config_to_json(c);
  safetensors::NamedViews t;
  auto add = [&](const std::string& name, const TensorView& v) {
    if (name != skip) t.emplace_back(name, v);
  };
  add("model.embed_tokens.weight", w.embed.view());
  add("model.norm.weight", w.final_norm.view());
  add("lm_head.weight", w.lm_head.view());
  for (int64_t l = 0; l < spec.num_layers(); ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", lw.input_norm.view());
    add(p + "post_attention_layernorm.weight", lw.pre_mlp_norm.view());
    add(p + "self_attn.q_proj.weight", part(lw.qkv, 0, {q, H}));
    add(p + "self_attn.k_proj.weight", part(lw.qkv, q * H, {kv, H}));
    add(p + "self_attn.v_proj.weight", part(lw.qkv, (q + kv) * H, {kv, H}));
    add(p + "self_attn.q_proj.bias", part(lw.qkv_bias, 0, {q}));
    add(p + "self_attn.k_proj.bias", part(lw.qkv_bias, q, {kv}));
    add(p + "self_attn.v_proj.bias", part(lw.qkv_bias, q + kv, {kv}));
    add(p + "self_attn.o_proj.weight", lw.o_proj.view());
    if (!spec.is_moe_layer(l)) {
      add(p + "mlp.gate_proj.weight", part(lw.gate_up, 0, {I, H}));
      add(p + "mlp.up_proj.weight", part(lw.gate_up, I * H, {I, H}));
      add(p + "mlp.down_proj.weight", lw.down.view());
      continue;
    }
    add(p + "mlp.gate.weight", lw.router.view());
    add(p + "mlp.shared_expert.gate_proj.weight", part(lw.shared_gate_up, 0, {Is, H}));
    add(p + "mlp.shared_expert.up_proj.weight", part(lw.shared_gate_up, Is * H, {Is, H}));
    add(p + "mlp.shared_expert.down_proj.weight", lw.shared_down.view());
    add(p + "mlp.shared_expert_gate.weight", lw.shared_gate.view());
    if (layout == Experts::fused) {
      add(p + "mlp.experts.gate_up_proj", lw.w13.view());
      add(p + "mlp.experts.down_proj", lw.w2.view());
      continue;
    }
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      add(x + "gate_proj.weight", part(lw.w13, e * 2 * Ie * H, {Ie, H}));
      add(x + "up_proj.weight", part(lw.w13, (e * 2 + 1) * Ie * H, {Ie, H}));
      add(x + "down_proj.weight", part(lw.w2, e * H * Ie, {H, Ie}));
    }
  }
  safetensors::save(dir / "model.safetensors", t);
  return dir;
}

TEST(Qwen2Moe, CheckpointNamesLoadEveryWeight) {
  const ModelSpec spec = model_spec_for(model_config_by_name("tiny-qwen2-moe"));
  const ModelWeights want = dummy_weights(spec, DType::bf16, Device::cpu(), 11);
  for (Experts layout : {Experts::per_expert, Experts::fused}) {
    SCOPED_TRACE(layout == Experts::fused ? "fused experts" : "per-expert tensors");
    const fs::path dir = write_checkpoint(spec, want, layout);
    const auto ckpt = safetensors::Checkpoint::open(dir);
    const ModelWeights got = load_checkpoint_weights(spec, ckpt, DType::bf16, Device::cpu());
    ASSERT_EQ(got.layers.size(), want.layers.size());
    for (size_t l = 0; l < want.layers.size(); ++l) {
      const LayerWeights &g = got.layers[l], &x = want.layers[l];
      EXPECT_TRUE(same(g.qkv, x.qkv) && same(g.qkv_bias, x.qkv_bias) && same(g.o_proj, x.o_proj)) << "layer " << l;
      EXPECT_TRUE(same(g.router, x.router) && same(g.w13, x.w13) && same(g.w2, x.w2)) << "layer " << l;
      EXPECT_TRUE(same(g.shared_gate_up, x.shared_gate_up)) << "layer " << l;
      EXPECT_TRUE(same(g.shared_down, x.shared_down)) << "layer " << l;
      EXPECT_TRUE(same(g.shared_gate, x.shared_gate)) << "layer " << l;
      EXPECT_TRUE(same(g.gate_up, x.gate_up) && same(g.down, x.down)) << "layer " << l;
      EXPECT_FALSE(g.o_bias.defined()) << "Qwen2-MoE has no o_proj bias";
    }
    EXPECT_EQ(got.bytes, want.bytes);
    fs::remove_all(dir);
  }
}

TEST(Qwen2Moe, MissingOrMisshapenSharedExpertIsAClearError) {
  const ModelSpec spec = model_spec_for(model_config_by_name("tiny-qwen2-moe"));
  const ModelWeights w = dummy_weights(spec, DType::bf16, Device::cpu(), 5);
  for (const std::string missing : {"model.layers.0.mlp.shared_expert_gate.weight",
                                    "model.layers.0.mlp.shared_expert.up_proj.weight"}) {
    const fs::path dir = write_checkpoint(spec, w, Experts::per_expert, missing);
    const auto ckpt = safetensors::Checkpoint::open(dir);
    try {
      load_checkpoint_weights(spec, ckpt, DType::bf16, Device::cpu());
      ADD_FAILURE() << "expected an error for the missing " << missing;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("has no tensor '" + missing + "'"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
  }
  // A checkpoint of a wider shared expert than the config says.
  ModelConfig wider = spec.config;
  wider.moe.shared_expert_intermediate_size = 56;
  const ModelSpec wide_spec = model_spec_for(wider);
  const fs::path dir = write_checkpoint(wide_spec, dummy_weights(wide_spec, DType::bf16, Device::cpu(), 5),
                                        Experts::per_expert);
  const auto ckpt = safetensors::Checkpoint::open(dir);
  try {
    load_checkpoint_weights(spec, ckpt, DType::bf16, Device::cpu());
    ADD_FAILURE() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared_expert.gate_proj.weight' has shape [56, 64] but the config implies "
                                         "[48, 64]"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// ---- the forward pass ---------------------------------------------------------------------

// Two layers: layer 0 sparse (with a shared expert as wide as the dense MLP), layer 1 dense.
const char* const kMoeConfig = R"({"model_type": "qwen2_moe", "hidden_size": 64, "intermediate_size": 48,
  "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 512,
  "rope_theta": 1000000.0, "num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [1]})";
// The same model as a dense Qwen2 (its attention is Qwen2-MoE's: q/k/v biased, no o bias).
const char* const kDenseConfig = R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 48,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 512, "rope_theta": 1000000.0})";

std::vector<float> logits_of(const ModelSpec& spec, ModelWeights w, const std::vector<int64_t>& tokens) {
  DecoderModel model(spec, std::move(w), Device::cpu(), 64, 4, 64, 512);
  KvCache kv(spec.num_layers(), 8, 16, spec.config.num_key_value_heads, spec.config.head_dim, DType::bf16,
             Device::cpu());
  return test::prefill_logits(model, kv, tokens, nullptr);
}

Tensor scaled(const Tensor& t, double factor) {
  Tensor r = t.clone();
  for (int64_t i = 0; i < r.numel(); ++i)
    store_element(r.view().element_ptr(i), r.dtype(), factor * load_element(t.view().element_ptr(i), t.dtype()));
  return r;
}

// With its gate weight zero the shared expert is scaled by sigmoid(0) = 1/2, and with the
// routed experts' down projections zero they add nothing: the sparse block is then exactly a
// dense SwiGLU MLP with the shared expert's weights and half its down projection (halving
// is exact in bf16, and so is every rounding that follows). Checks that the shared expert
// runs on the block's input, uses gate rows first, is gated by a sigmoid and is added to
// the routed experts' output, with the dense layer after it untouched.
TEST(Qwen2Moe, SharedExpertIsAGatedMlpAddedToTheRoutedExperts) {
  const ModelSpec moe = model_spec_for(parse_model_config(kMoeConfig));
  const ModelSpec dense = model_spec_for(parse_model_config(kDenseConfig));
  ASSERT_TRUE(moe.is_moe_layer(0) && !moe.is_moe_layer(1));
  ModelWeights wm = dummy_weights(moe, DType::bf16, Device::cpu(), fk::test::seed_for("Qwen2MoeShared"));
  const Tensor routed_down = wm.layers[0].w2;
  wm.layers[0].w2 = Tensor::zeros(routed_down.shape(), DType::bf16);
  wm.layers[0].shared_gate = Tensor::zeros({1, 64}, DType::bf16);

  ModelWeights wd = wm;
  LayerWeights& l0 = wd.layers[0];
  l0.gate_up = wm.layers[0].shared_gate_up;
  l0.down = scaled(wm.layers[0].shared_down, 0.5);
  l0.router = l0.w13 = l0.w2 = l0.shared_gate_up = l0.shared_down = l0.shared_gate = Tensor{};

  const std::vector<int64_t> tokens = {5, 17, 200, 3, 99, 42, 7, 128, 64, 1, 250};
  const std::vector<float> got = logits_of(moe, wm, tokens), want = logits_of(dense, wd, tokens);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "logit " << i;

  // Control: with the routed experts back the block is no longer that MLP.
  wm.layers[0].w2 = routed_down;
  EXPECT_NE(logits_of(moe, wm, tokens), want);
}

// ---- through the engine ------------------------------------------------------------------

TEST(Qwen2Moe, TinyModelGeneratesThroughTheEngine) {
  EngineConfig c;
  c.model = "tiny-qwen2-moe";
  c.backend = DeviceType::cpu;
  c.num_pages = 32;
  c.max_num_batched_tokens = 24;  // the 30-token prompt is chunked
  c.max_model_len = 128;
  SamplingParams sp;
  sp.temperature = 0;
  sp.ignore_eos = true;
  sp.max_tokens = 6;
  std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {}, {9}};
  for (int64_t i = 0; i < 30; ++i) prompts[1].push_back(3 + (i * 37) % 250);
  Engine a(c);
  const auto first = a.generate(prompts, sp);
  ASSERT_EQ(first.size(), prompts.size());
  for (const auto& r : first) EXPECT_EQ(r.output_tokens.size(), 6u);
  // The same tokens from a second engine, each prompt alone.
  for (size_t i = 0; i < prompts.size(); ++i) {
    Engine b(c);
    EXPECT_EQ(b.generate({prompts[i]}, sp)[0].output_tokens, first[i].output_tokens) << "prompt " << i;
  }
}

}  // namespace
}  // namespace fk::engine
