// Qwen3-Next's config, spec, state and checkpoint layout: layer types from layer_types or
// full_attention_interval, the linear-attention shapes, named refusals of what is not
// implemented, the recurrent-slot state beside paged KV for the attention layers only, and
// the load-time regrouping of in_proj_qkvz / in_proj_ba (per key-head groups) and of the
// gated q_proj (per-head [query; gate]) into the column ranges the forward pass reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/status.h"
#include "models/llm/decoder_llm.h"
#include "models/llm/decoder_model.h"
#include "models/llm/model_config.h"
#include "models/llm/model_spec.h"
#include "models/llm/weights.h"
#include "models/registry.h"

namespace fk::engine {
namespace {

// tiny-qwen3-next's config.json with one field replaced (or removed: empty value).
std::string tiny_with(const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(model_config_json_by_name("tiny-qwen3-next"));
  if (value.empty())
    j.erase(key);
  else
    j[key] = nlohmann::json::parse(value);
  return j.dump();
}

std::string error_of(const std::string& text) {
  try {
    model_spec_for(parse_model_config(text, "cfg.json"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_QWEN3_NEXT_ERROR(text, expected)                \
  do {                                                         \
    const std::string msg = error_of(text);                    \
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;   \
  } while (0)

TEST(Qwen3Next, ProductionConfig) {
  const ModelConfig c = model_config_by_name("qwen3-next-80b-a3b");
  EXPECT_EQ(c.model_type, "qwen3_next");
  EXPECT_EQ(c.num_hidden_layers, 48);
  for (int64_t l = 0; l < 48; ++l)
    EXPECT_EQ(c.layer_types[static_cast<size_t>(l)], (l + 1) % 4 == 0 ? AttentionKind::full : AttentionKind::linear)
        << l;
  EXPECT_EQ(c.linear_attention.k_heads, 16);
  EXPECT_EQ(c.linear_attention.v_heads, 32);
  EXPECT_EQ(c.linear_attention.conv_dim(), 2 * 16 * 128 + 32 * 128);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.rotary_dim(), 64);  // partial rotary 0.25
  EXPECT_TRUE(c.attention_output_gate);
  EXPECT_TRUE(c.norm_weight_offset);
  EXPECT_FALSE(c.embedding_scale);
  EXPECT_EQ(c.moe.num_experts, 512);
  EXPECT_EQ(c.moe.num_experts_per_tok, 10);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 512);

  const ModelSpec s = model_spec_for(c);
  EXPECT_EQ(s.family, "qwen3_next");
  EXPECT_EQ(s.norm, NormKind::gemma_rms);
  EXPECT_FALSE(s.scale_embeddings);
  EXPECT_TRUE(s.qk_norm && s.qk_norm_weight_offset);
  EXPECT_EQ(s.moe.shared_intermediate, 512);
  EXPECT_TRUE(s.moe.renormalize);
  EXPECT_EQ(s.qkv_rows(), 2 * 16 * 256 + 2 * 2 * 256);  // q, k, v and the gate
  EXPECT_EQ(s.num_kv_layers(), 12);
  EXPECT_EQ(s.kv_layer(3), 0);
  EXPECT_EQ(s.kv_layer(47), 11);
  EXPECT_EQ(s.kv_layer(4), -1);
}

TEST(Qwen3Next, LayerTypesAndRoundTrip) {
  // An explicit layer_types wins over full_attention_interval.
  const ModelConfig c = parse_model_config(
      tiny_with("layer_types", R"(["full_attention", "linear_attention", "linear_attention", "full_attention"])"));
  EXPECT_EQ(c.layer_types, (std::vector<AttentionKind>{AttentionKind::full, AttentionKind::linear,
                                                         AttentionKind::linear, AttentionKind::full}));
  EXPECT_EQ(parse_model_config(tiny_with("full_attention_interval", "2")).layer_types,
            (std::vector<AttentionKind>{AttentionKind::linear, AttentionKind::full, AttentionKind::linear,
                                        AttentionKind::full}));
  // transformers >= 5 writes partial_rotary_factor inside rope_parameters.
  nlohmann::json j = nlohmann::json::parse(tiny_with("partial_rotary_factor", ""));
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e7}, {"partial_rotary_factor", 0.5}};
  EXPECT_EQ(parse_model_config(j.dump()).rotary_dim(), 32);
  const ModelConfig one_gpu = model_config_by_name("qwen3-next-80b-a3b-12l");
  EXPECT_EQ(one_gpu.num_hidden_layers, 12);
  EXPECT_EQ(model_spec_for(one_gpu).num_kv_layers(), 3);
  for (const char* name : {"tiny-qwen3-next", "qwen3-next-80b-a3b", "qwen3-next-80b-a3b-12l"}) {
    const ModelConfig b = model_config_by_name(name);
    EXPECT_EQ(parse_model_config(model_config_to_json(b)), b) << name;
  }
}

TEST(Qwen3Next, WhatIsNotImplementedIsANamedError) {
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("linear_conv_kernel_dim", "5"), "'linear_conv_kernel_dim' 5 is not implemented");
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("linear_num_value_heads", "3"),
                          "'linear_num_value_heads' (3) is not a multiple of 'linear_num_key_heads' (2)");
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("linear_key_head_dim", ""), "missing required field 'linear_key_head_dim'");
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("hidden_act", "\"gelu\""), "'hidden_act' 'gelu' is not implemented for qwen3_next");
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("attention_bias", "true"), "'attention_bias' true is not implemented");
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("layer_types", R"(["linear_attention", "local", "full_attention", "full_attention"])"),
                          "'layer_types'[1]");
  EXPECT_QWEN3_NEXT_ERROR(tiny_with("full_attention_interval", "0"), "'full_attention_interval' must be positive");
  // Other families have no linear-attention layers.
  EXPECT_QWEN3_NEXT_ERROR(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10, "layer_types": ["linear_attention"]})",
                          "which this model type does not have");
}

TEST(Qwen3Next, StateIsPagedKvForAttentionAndASlotForLinearLayers) {
  const auto model = models::create_model("tiny-qwen3-next");
  EXPECT_EQ(model->task_category(), "ssm");
  const std::vector<runtime::StateSpec> state = model->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].kind, runtime::StateKind::paged_kv);
  EXPECT_EQ(state[0].layers, (std::vector<int64_t>{3}));
  EXPECT_EQ(state[0].head_dim, 64);
  EXPECT_EQ(state[1].kind, runtime::StateKind::recurrent_slot);
  EXPECT_EQ(state[1].layers, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_EQ(state[1].slot_tensors.size(), 2u);
  EXPECT_EQ(state[1].slot_tensors[0].name, "conv");
  EXPECT_EQ(state[1].slot_tensors[0].shape, (std::vector<int64_t>{2 * 2 * 64 + 4 * 64, 3}));
  EXPECT_EQ(state[1].slot_tensors[0].dtype, DType::bf16);
  EXPECT_EQ(state[1].slot_tensors[1].name, "ssm");
  EXPECT_EQ(state[1].slot_tensors[1].shape, (std::vector<int64_t>{4, 64, 64}));
  EXPECT_EQ(state[1].slot_tensors[1].dtype, DType::f32);
  EXPECT_EQ(state[1].slot_bytes_per_layer, 512 * 3 * 2 + 4 * 64 * 64 * 4);
  EXPECT_EQ(models::registration("qwen3_next").category, "linear-attention-ssm");
}

// Every checkpoint tensor holds its row index in every column (exact in f16): the loaded
// matrices show which source row each of their rows came from.
TEST(Qwen3Next, CheckpointRowsAreRegroupedForTheForwardPass) {
  const ModelSpec spec = model_spec_for(model_config_by_name("tiny-qwen3-next"));
  const DecoderLlm llm("qwen3_next", spec);
  std::vector<Tensor> keep;
  safetensors::NamedViews views;
  for (const models::TensorDecl& d : llm.weights()) {
    Tensor t = Tensor::empty(Shape(d.shape.begin(), d.shape.end()), DType::f32);
    const int64_t rows = d.shape[0], cols = t.numel() / std::max<int64_t>(rows, 1);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(i / cols);
    if (d.name.find("A_log") != std::string::npos || d.name.find("dt_bias") != std::string::npos)
      for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = 0.5f * static_cast<float>(i);
    views.push_back({d.name, t.view()});
    keep.push_back(t);
  }
  const auto dir = std::filesystem::temp_directory_path() / ("fk_qwen3_next_rows_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  safetensors::save(dir / "model.safetensors", views);
  const ModelWeights w = load_checkpoint_weights(spec, safetensors::Checkpoint::open(dir), DType::f16, Device::cpu());
  std::filesystem::remove_all(dir);

  auto row_of = [](const Tensor& t, int64_t r) {
    return load_element(static_cast<const char*>(t.data()) + r * t.size(1) * 2, t.dtype());
  };
  // Linear layer 0: Hk = 2 groups of [q 64 | k 64 | v 128 | z 128] rows (r = Hv / Hk = 2).
  const LayerWeights& lin = w.layers[0];
  ASSERT_EQ(lin.lin_in.size(0), 512 + 8);
  std::vector<int64_t> want;
  for (int part : {0, 1, 2})  // q, k, v of both groups
    for (int64_t g = 0; g < 2; ++g) {
      const int64_t offset[] = {0, 64, 128}, size[] = {64, 64, 128};
      for (int64_t i = 0; i < size[part]; ++i) want.push_back(g * 384 + offset[part] + i);
    }
  for (int part : {0, 1})  // b, a: per group [b b | a a]
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t i = 0; i < 2; ++i) want.push_back(g * 4 + part * 2 + i);
  for (size_t r = 0; r < want.size(); ++r)
    EXPECT_EQ(row_of(lin.lin_in, static_cast<int64_t>(r)), static_cast<double>(want[r])) << "lin_in row " << r;
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t i = 0; i < 128; ++i)
      EXPECT_EQ(row_of(lin.lin_z, g * 128 + i), static_cast<double>(g * 384 + 256 + i)) << "lin_z row " << g * 128 + i;
  EXPECT_EQ(lin.a_log.dtype(), DType::f32);
  EXPECT_EQ(lin.a_log.data_as<float>()[3], 1.5f);
  EXPECT_EQ(lin.conv_w.shape(), (Shape{512, 4}));
  EXPECT_FALSE(lin.qkv.defined());
  // Attention layer 3: q_proj [2 heads x (query 64; gate 64)] -> [q | k | v | gate].
  const LayerWeights& att = w.layers[3];
  ASSERT_EQ(att.qkv.size(0), 128 + 64 + 64 + 128);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 0; d < 64; ++d) {
      EXPECT_EQ(row_of(att.qkv, h * 64 + d), static_cast<double>(h * 128 + d));
      EXPECT_EQ(row_of(att.qkv, 256 + h * 64 + d), static_cast<double>(h * 128 + 64 + d));
    }
  EXPECT_EQ(row_of(att.qkv, 128), 0.0);  // k
  EXPECT_EQ(row_of(att.qkv, 192), 0.0);  // v
  // q/k norms are offsets from one in the checkpoint: loaded with the one added.
  EXPECT_EQ(load_element(att.q_norm.data(), att.q_norm.dtype()), 1.0);
}

}  // namespace
}  // namespace fk::engine
