// MoE checkpoints: the experts of every MoE family load from HF's per-expert tensors
// (Mixtral's block_sparse_moe.experts.N.w1/w3/w2, Qwen3-MoE's and OLMoE's
// mlp.experts.N.gate_proj/up_proj/down_proj) and from transformers 5's fused
// mlp.experts.gate_up_proj / down_proj, into the same stacked [E, 2I, H] / [E, H, I]
// tensors; a checkpoint without them is a clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/llm/model_spec.h"
#include "models/llm/weights.h"
#include "models/llm/model_config.h"
#include "core/safetensors/safetensors.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

namespace fs = std::filesystem;

TensorView part(const Tensor& t, int64_t first_element, const Shape& shape) {
  return make_view(t.view().element_ptr(first_element), shape.data(), static_cast<int>(shape.size()), t.dtype(),
                   t.device());
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

enum class Layout { per_expert, fused };

// Writes `w` as an HF checkpoint folder of model `name`; returns the folder.
fs::path write_checkpoint(const std::string& name, const ModelSpec& spec, const ModelWeights& w, Layout layout,
                          const std::string& module, const std::array<std::string, 3>& expert_names) {
  const ModelConfig& c = spec.config;
  const int64_t H = c.hidden_size, q = c.q_size(), kv = c.kv_size(), E = spec.moe.num_experts,
                Ie = spec.moe.intermediate;
  const fs::path dir = fs::temp_directory_path() / ("fk_moe_weights_" + name + std::to_string(static_cast<int>(layout)) +
                                                    std::to_string(test::seed_for(name) % 100000));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << model_config_json_by_name(name);
  safetensors::NamedViews t;
  t.emplace_back("model.embed_tokens.weight", w.embed.view());
  t.emplace_back("model.norm.weight", w.final_norm.view());
  t.emplace_back("lm_head.weight", w.lm_head.view());
  for (int64_t l = 0; l < spec.num_layers(); ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.emplace_back(p + "input_layernorm.weight", lw.input_norm.view());
    t.emplace_back(p + "post_attention_layernorm.weight", lw.pre_mlp_norm.view());
    t.emplace_back(p + "self_attn.q_proj.weight", part(lw.qkv, 0, {q, H}));
    t.emplace_back(p + "self_attn.k_proj.weight", part(lw.qkv, q * H, {kv, H}));
    t.emplace_back(p + "self_attn.v_proj.weight", part(lw.qkv, (q + kv) * H, {kv, H}));
    t.emplace_back(p + "self_attn.o_proj.weight", lw.o_proj.view());
    if (lw.q_norm.defined()) {
      t.emplace_back(p + "self_attn.q_norm.weight", lw.q_norm.view());
      t.emplace_back(p + "self_attn.k_norm.weight", lw.k_norm.view());
    }
    t.emplace_back(p + module + ".gate.weight", lw.router.view());
    if (layout == Layout::fused) {
      t.emplace_back(p + module + ".experts.gate_up_proj", lw.w13.view());
      t.emplace_back(p + module + ".experts.down_proj", lw.w2.view());
      continue;
    }
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = p + module + ".experts." + std::to_string(e) + ".";
      t.emplace_back(x + expert_names[0] + ".weight", part(lw.w13, e * 2 * Ie * H, {Ie, H}));
      t.emplace_back(x + expert_names[1] + ".weight", part(lw.w13, (e * 2 + 1) * Ie * H, {Ie, H}));
      t.emplace_back(x + expert_names[2] + ".weight", part(lw.w2, e * H * Ie, {H, Ie}));
    }
  }
  safetensors::save(dir / "model.safetensors", t);
  return dir;
}

void check_round_trip(const std::string& name, Layout layout, const std::string& module,
                      const std::array<std::string, 3>& expert_names) {
  SCOPED_TRACE(name + (layout == Layout::fused ? " fused" : " per expert"));
  const ModelSpec spec = model_spec_for(model_config_by_name(name));
  ASSERT_TRUE(spec.moe.enabled);
  const ModelWeights want = dummy_weights(spec, DType::bf16, Device::cpu(), 7);
  const fs::path dir = write_checkpoint(name, spec, want, layout, module, expert_names);
  const auto ckpt = safetensors::Checkpoint::open(dir);
  const ModelWeights got = load_checkpoint_weights(spec, ckpt, DType::bf16, Device::cpu());
  for (size_t l = 0; l < want.layers.size(); ++l) {
    EXPECT_TRUE(same(got.layers[l].router, want.layers[l].router)) << "layer " << l;
    EXPECT_TRUE(same(got.layers[l].w13, want.layers[l].w13)) << "layer " << l;
    EXPECT_TRUE(same(got.layers[l].w2, want.layers[l].w2)) << "layer " << l;
    EXPECT_TRUE(same(got.layers[l].qkv, want.layers[l].qkv)) << "layer " << l;
    EXPECT_FALSE(got.layers[l].gate_up.defined()) << "MoE layers have no dense MLP";
  }
  EXPECT_EQ(got.bytes, want.bytes);
  fs::remove_all(dir);
}

TEST(MoeWeights, PerExpertAndFusedCheckpointsLoadTheSameExperts) {
  const std::array<std::string, 3> hf = {"gate_proj", "up_proj", "down_proj"}, mixtral = {"w1", "w3", "w2"};
  check_round_trip("tiny-mixtral", Layout::per_expert, "block_sparse_moe", mixtral);
  check_round_trip("tiny-mixtral", Layout::fused, "mlp", hf);
  check_round_trip("tiny-qwen3-moe", Layout::per_expert, "mlp", hf);
  check_round_trip("tiny-qwen3-moe", Layout::fused, "mlp", hf);
  check_round_trip("tiny-olmoe", Layout::per_expert, "mlp", hf);
}

TEST(MoeWeights, OlmoeNormsSpanTheWholeProjection) {
  const ModelSpec spec = model_spec_for(model_config_by_name("tiny-olmoe"));
  EXPECT_TRUE(spec.qk_norm_across_heads);
  EXPECT_FALSE(spec.qk_norm);
  const ModelWeights w = dummy_weights(spec, DType::bf16, Device::cpu(), 1);
  EXPECT_EQ(w.layers[0].q_norm.numel(), spec.config.q_size());
  EXPECT_EQ(w.layers[0].k_norm.numel(), spec.config.kv_size());
}

TEST(MoeWeights, MissingExpertsAreAClearError) {
  const std::string name = "tiny-qwen3-moe";
  const ModelSpec spec = model_spec_for(model_config_by_name(name));
  const ModelWeights w = dummy_weights(spec, DType::bf16, Device::cpu(), 1);
  // Experts written under names no family uses.
  const fs::path dir = write_checkpoint(name, spec, w, Layout::per_expert, "mlp", {"fc1", "fc3", "fc2"});
  const auto ckpt = safetensors::Checkpoint::open(dir);
  try {
    load_checkpoint_weights(spec, ckpt, DType::bf16, Device::cpu());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no expert weights for layer 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mlp.experts.0.gate_proj.weight"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// config.json as transformers 5 writes it for the tiny golden models of make_goldens.py
// (rope_parameters, the experts count under either key, OLMoE without head_dim).
TEST(MoeWeights, TransformersConfigsOfTheGoldenModelsResolve) {
  const std::string common = R"("hidden_act": "silu", "vocab_size": 256, "max_position_embeddings": 512,
    "rms_norm_eps": 1e-06, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
    "bos_token_id": 1, "eos_token_id": 2, "dtype": "bfloat16", "tie_word_embeddings": false,
    "transformers_version": "5.17.0", )";
  const ModelSpec mixtral = model_spec_for(parse_model_config("{" + common + R"("model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"], "hidden_size": 64, "head_dim": 64, "intermediate_size": 128,
    "num_local_experts": 8, "num_experts_per_tok": 2, "router_jitter_noise": 0.0, "sliding_window": null,
    "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}})"));
  EXPECT_EQ(mixtral.moe.num_experts, 8);
  EXPECT_EQ(mixtral.moe.intermediate, 128);
  EXPECT_TRUE(mixtral.moe.renormalize);
  EXPECT_EQ(mixtral.layers[0].window_left, -1);
  const ModelSpec qwen = model_spec_for(parse_model_config("{" + common + R"("model_type": "qwen3_moe",
    "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64, "head_dim": 64, "intermediate_size": 128,
    "moe_intermediate_size": 96, "num_local_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": true, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "use_sliding_window": false, "sliding_window": null, "attention_bias": false,
    "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}})"));
  EXPECT_EQ(qwen.moe.num_experts, 8);
  EXPECT_EQ(qwen.moe.intermediate, 96);
  EXPECT_TRUE(qwen.qk_norm);
  EXPECT_TRUE(qwen.is_moe_layer(0) && qwen.is_moe_layer(1));
  const ModelSpec olmoe = model_spec_for(parse_model_config("{" + common + R"("model_type": "olmoe",
    "architectures": ["OlmoeForCausalLM"], "hidden_size": 128, "intermediate_size": 128, "num_experts": 6,
    "num_experts_per_tok": 3, "norm_topk_prob": false, "clip_qkv": null, "pad_token_id": 0, "attention_bias": false,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}})"));
  EXPECT_EQ(olmoe.config.head_dim, 64);
  EXPECT_EQ(olmoe.moe.top_k, 3);
  EXPECT_FALSE(olmoe.moe.renormalize);
  EXPECT_TRUE(olmoe.qk_norm_across_heads);
  // Qwen2MoeConfig writes qkv_bias, its layer_types, and sliding_window 0 or null when
  // use_sliding_window is false; it has no head_dim.
  for (const char* window : {"0", "null"}) {
    const ModelSpec qwen2 = model_spec_for(parse_model_config("{" + common + R"("model_type": "qwen2_moe",
      "architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 128, "intermediate_size": 128,
      "moe_intermediate_size": 64, "shared_expert_intermediate_size": 192, "num_experts": 8,
      "num_experts_per_tok": 2, "norm_topk_prob": false, "decoder_sparse_step": 1, "mlp_only_layers": [],
      "qkv_bias": true, "use_sliding_window": false, "max_window_layers": 28, "sliding_window": )" + window + R"(,
      "layer_types": ["full_attention", "full_attention"], "router_aux_loss_coef": 0.001,
      "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}})"));
    EXPECT_EQ(qwen2.config.head_dim, 64);
    EXPECT_TRUE(qwen2.qkv_bias);
    EXPECT_FALSE(qwen2.o_bias);
    EXPECT_EQ(qwen2.moe.shared_intermediate, 192);
    EXPECT_EQ(qwen2.moe.top_k, 2);
    EXPECT_FALSE(qwen2.moe.renormalize);
    EXPECT_TRUE(qwen2.is_moe_layer(0) && qwen2.is_moe_layer(1));
    EXPECT_EQ(qwen2.layers[1].window_left, -1);
  }
}

TEST(MoeWeights, SharedExpertsAreRefusedClearly) {
  ModelConfig c = model_config_by_name("tiny-qwen3-moe");
  c.moe.shared_expert_intermediate_size = 64;
  try {
    model_spec_for(c);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared experts"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::engine
