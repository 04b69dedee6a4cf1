// gpt-oss's config, spec, checkpoint layout and forward pass: the published configs and
// GptOssConfig's defaults (alternating sliding / full layers, YaRN with truncate false,
// biases, the clamped SwiGLU's constants), named refusals (other quantizations, sinks of
// the wrong length, misshapen MXFP4 scales, bad limits), the load-time transposition and
// de-interleaving of the experts and the dequantization of MXFP4 ones,
// and the engine's logits on the CPU against a forward pass written here in double from
// transformers' definitions (GptOssForCausalLM: eager attention with the sink appended to
// each softmax row, the sliding window, YaRN, softmax over the top-k router logits, the
// clamped SwiGLU experts) over a random checkpoint in the upstream layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/rope_cache.h"
#include "fk/status.h"
#include "models/llm/decoder_llm.h"
#include "models/llm/model_config.h"
#include "models/llm/model_spec.h"
#include "models/llm/weights.h"
#include "models/registry.h"
#include "serving/generate/engine.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

std::string tiny_with(const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(model_config_json_by_name("tiny-gpt-oss"));
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

#define EXPECT_GPT_OSS_ERROR(text, expected)                 \
  do {                                                       \
    const std::string msg = error_of(text);                  \
    EXPECT_NE(msg.find(expected), std::string::npos) << msg; \
  } while (0)

TEST(GptOss, ProductionConfig) {
  const ModelConfig c = model_config_by_name("gpt-oss-120b");
  EXPECT_EQ(c.model_type, "gpt_oss");
  EXPECT_EQ(c.num_hidden_layers, 36);
  EXPECT_EQ(c.hidden_size, 2880);
  EXPECT_EQ(c.num_attention_heads, 64);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.sliding_window, 128);
  for (int64_t l = 0; l < 36; ++l)
    EXPECT_EQ(c.layer_types[static_cast<size_t>(l)], l % 2 == 0 ? AttentionKind::sliding : AttentionKind::full) << l;
  EXPECT_EQ(c.rope_scaling.type, RopeScalingKind::yarn);
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_FALSE(c.rope_scaling.truncate);
  EXPECT_EQ(c.rope_theta, 150000.0);
  EXPECT_TRUE(c.attention_bias && c.attention_out_bias);
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_EQ(c.moe.num_experts, 128);
  EXPECT_EQ(c.moe.num_experts_per_tok, 4);
  EXPECT_EQ(c.moe.expert_intermediate_size, 2880);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.swiglu_alpha, 1.702);
  EXPECT_EQ(c.swiglu_limit, 7.0);

  const ModelSpec s = model_spec_for(c);
  EXPECT_EQ(s.family, "gpt_oss");
  EXPECT_EQ(s.norm, NormKind::rms);
  EXPECT_TRUE(s.qkv_bias && s.o_bias && s.attention_sinks);
  EXPECT_EQ(s.layers[0].window_left, 127);  // transformers: q - k < sliding_window
  EXPECT_EQ(s.layers[1].window_left, -1);
  EXPECT_TRUE(s.moe.swigluoai && s.moe.renormalize);
  EXPECT_EQ(s.moe.router_name, "router");
  EXPECT_FLOAT_EQ(s.moe.swiglu_alpha, 1.702f);
  EXPECT_FLOAT_EQ(s.moe.swiglu_limit, 7.0f);
  EXPECT_FLOAT_EQ(s.sm_scale, 0.125f);
  ASSERT_EQ(s.ropes.size(), 1u);
  EXPECT_EQ(s.ropes[0].scaling, RopeScalingType::yarn);
  EXPECT_EQ(s.ropes[0].yarn_truncate, 0);
  EXPECT_NEAR(rope_attention_factor(s.ropes[0]), 0.1 * std::log(32.0) + 1.0, 1e-12);
  EXPECT_EQ(models::registration("gpt_oss").category, "dense-moe-llm");

  const ModelConfig small = model_config_by_name("gpt-oss-20b");
  EXPECT_EQ(small.num_hidden_layers, 24);
  EXPECT_EQ(small.moe.num_experts, 32);
  const ModelConfig one_gpu = model_config_by_name("gpt-oss-120b-8l");
  EXPECT_EQ(one_gpu.num_hidden_layers, 8);
  EXPECT_EQ(one_gpu.moe.num_experts, 128);
  EXPECT_EQ(one_gpu.hidden_size, 2880);
}

TEST(GptOss, DefaultsRopeParametersAndRoundTrip) {
  // Without layer_types: even layers sliding, odd full (GptOssConfig); without swiglu_*:
  // 1.702 and 7; without rope_scaling: YaRN x32 over 4096 with truncate false.
  nlohmann::json j = nlohmann::json::parse(tiny_with("layer_types", ""));
  j.erase("swiglu_limit");
  j.erase("rope_scaling");
  j["num_hidden_layers"] = 4;
  const ModelConfig c = parse_model_config(j.dump());
  EXPECT_EQ(c.layer_types, (std::vector<AttentionKind>{AttentionKind::sliding, AttentionKind::full,
                                                         AttentionKind::sliding, AttentionKind::full}));
  EXPECT_EQ(c.swiglu_limit, 7.0);
  EXPECT_EQ(c.swiglu_alpha, 1.702);
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_FALSE(c.rope_scaling.truncate);
  // transformers >= 5 writes rope_parameters (theta inside) and may write swiglu_alpha.
  nlohmann::json k = nlohmann::json::parse(tiny_with("rope_scaling", ""));
  k.erase("rope_theta");
  k["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 150000.0}, {"factor", 4.0}, {"beta_fast", 32.0},
                          {"beta_slow", 1.0}, {"truncate", false}, {"original_max_position_embeddings", 64}};
  k["swiglu_alpha"] = 1.5;
  const ModelConfig p = parse_model_config(k.dump());
  EXPECT_EQ(p.rope_scaling, model_config_by_name("tiny-gpt-oss").rope_scaling);
  EXPECT_EQ(p.swiglu_alpha, 1.5);
  for (const char* name : {"tiny-gpt-oss", "gpt-oss-120b", "gpt-oss-20b", "gpt-oss-120b-8l"}) {
    const ModelConfig b = model_config_by_name(name);
    EXPECT_EQ(parse_model_config(model_config_to_json(b)), b) << name;
  }
}

TEST(GptOss, WhatIsNotSupportedIsANamedError) {
  EXPECT_GPT_OSS_ERROR(tiny_with("quantization_config", R"({"quant_method": "awq"})"), "quant_method 'awq'");
  EXPECT_GPT_OSS_ERROR(tiny_with("swiglu_limit", "0"), "'swiglu_limit' must be positive");
  EXPECT_GPT_OSS_ERROR(tiny_with("num_experts_per_tok", "5"), "'num_experts_per_tok' (5) exceeds the number of experts (4)");
  EXPECT_GPT_OSS_ERROR(tiny_with("num_local_experts", ""), "num_local_experts");
  EXPECT_GPT_OSS_ERROR(tiny_with("rope_scaling", R"({"rope_type": "yarn", "factor": 4.0, "truncate": "no"})"),
                       "'truncate' must be true or false");
  EXPECT_GPT_OSS_ERROR(tiny_with("layer_types", R"(["sliding_attention", "linear_attention"])"),
                       "which this model type does not have");
}

// ---- a checkpoint in transformers' layout ----------------------------------------------

struct Checkpoint {
  std::filesystem::path dir;
  std::map<std::string, Tensor> tensors;  // bf16 host tensors, by name
  ~Checkpoint() { std::filesystem::remove_all(dir); }
};

// Every tensor DecoderLlm declares, random (projections ~ U(+-sqrt(3/fan_in)) so that
// activations keep their size, norms around 1, biases and sinks of a few tenths / units).
std::unique_ptr<Checkpoint> write_checkpoint(const std::string& config, uint64_t seed,
                                             const std::map<std::string, std::vector<int64_t>>& override_shapes = {}) {
  const ModelSpec spec = model_spec_for(parse_model_config(config));
  const DecoderLlm llm("gpt_oss", spec);
  auto ck = std::make_unique<Checkpoint>();
  ck->dir = std::filesystem::temp_directory_path() / concat("fk_gpt_oss_", ::getpid(), "_", seed % 100000);
  std::filesystem::create_directories(ck->dir);
  safetensors::NamedViews views;
  uint64_t stream = 1;
  for (const models::TensorDecl& d : llm.weights()) {
    auto shape = d.shape;
    if (auto it = override_shapes.find(d.name); it != override_shapes.end()) shape = it->second;
    Tensor t = Tensor::empty(Shape(shape.begin(), shape.end()), DType::bf16);
    const std::string& n = d.name;
    const int64_t fan_in = n.find("gate_up_proj") != std::string::npos && n.find("bias") == std::string::npos
                               ? shape[1]  // [E, H, 2I]: input-major
                           : n.find("down_proj") != std::string::npos && n.find("bias") == std::string::npos
                               ? shape[1]  // [E, I, H]
                               : shape.back();
    float lo = -1.f, hi = 1.f;
    if (n.find("norm") != std::string::npos) lo = 0.8f, hi = 1.2f;
    else if (n.find("embed_tokens") != std::string::npos) lo = -1.7f, hi = 1.7f;
    else if (n.find("sinks") != std::string::npos) lo = -2.f, hi = 3.f;
    else if (n.find("bias") != std::string::npos) lo = -0.3f, hi = 0.3f;
    else lo = -static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in))), hi = -lo;
    fill_uniform(t.view(), seed, (stream++) << 40, lo, hi);
    ck->tensors[n] = t;
    views.push_back({n, t.view()});
  }
  safetensors::save(ck->dir / "model.safetensors", views);
  std::ofstream(ck->dir / "config.json") << config;
  return ck;
}

double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

// transformers' GptOssForCausalLM in double over the checkpoint's own tensors: the logits
// [n, V] of one prompt from position 0, and the smallest gap between the k-th and the
// (k+1)-th router logit over layers and positions (relative to their spread).
struct Reference {
  std::vector<double> logits;
  double routing_margin = INFINITY;
};

Reference reference_forward(const ModelConfig& c, const Checkpoint& ck, const std::vector<int64_t>& tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size()), H = c.hidden_size, Hq = c.num_attention_heads,
                Hk = c.num_key_value_heads, D = c.head_dim, E = c.moe.num_experts, k = c.moe.num_experts_per_tok,
                I = c.moe.expert_intermediate_size, V = c.vocab_size;
  auto T = [&](const std::string& name) -> const Tensor& { return ck.tensors.at(name); };
  auto rms = [&](const std::vector<double>& x, const Tensor& w) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + c.rms_norm_eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * at(w, static_cast<int64_t>(i));
    return y;
  };
  auto linear = [&](const std::vector<double>& x, const Tensor& w, const Tensor* b, int64_t rows) {
    std::vector<double> y(static_cast<size_t>(rows));
    const int64_t cols = static_cast<int64_t>(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      double s = b ? at(*b, r) : 0.0;
      for (int64_t j = 0; j < cols; ++j) s += at(w, r * cols + j) * x[static_cast<size_t>(j)];
      y[static_cast<size_t>(r)] = s;
    }
    return y;
  };
  // YaRN (transformers' _compute_yarn_parameters; truncate false: no floor / ceil).
  const RopeScaling& rs = c.rope_scaling;
  const double base = c.rope_theta, factor = rs.factor, orig = static_cast<double>(rs.original_max_position_embeddings);
  auto corr = [&](double rot) { return static_cast<double>(D) * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(base)); };
  double low = corr(rs.beta_fast), high = corr(rs.beta_slow);
  if (rs.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(D - 1));
  if (low == high) high += 0.001;
  std::vector<double> inv_freq(static_cast<size_t>(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) {
    const double pos_freq = std::pow(base, static_cast<double>(2 * i) / static_cast<double>(D));
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;
    inv_freq[static_cast<size_t>(i)] = 1.0 / (factor * pos_freq) * (1 - extrapolation) + 1.0 / pos_freq * extrapolation;
  }
  const double mscale = 0.1 * std::log(factor) + 1.0;
  auto rope = [&](double* head, int64_t pos) {
    for (int64_t i = 0; i < D / 2; ++i) {
      const double a = static_cast<double>(pos) * inv_freq[static_cast<size_t>(i)];
      const double cs = std::cos(a) * mscale, sn = std::sin(a) * mscale;
      const double x1 = head[i], x2 = head[i + D / 2];
      head[i] = x1 * cs - x2 * sn;
      head[i + D / 2] = x2 * cs + x1 * sn;
    }
  };

  Reference ref;
  std::vector<std::vector<double>> x(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < H; ++h) x[static_cast<size_t>(t)].push_back(at(T("model.embed_tokens.weight"), tokens[t] * H + h));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = concat("model.layers.", l, ".");
    const bool sliding = c.layer_types[static_cast<size_t>(l)] == AttentionKind::sliding;
    std::vector<std::vector<double>> q(static_cast<size_t>(n)), kk(static_cast<size_t>(n)), v(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
      const auto hn = rms(x[static_cast<size_t>(t)], T(p + "input_layernorm.weight"));
      q[t] = linear(hn, T(p + "self_attn.q_proj.weight"), &T(p + "self_attn.q_proj.bias"), Hq * D);
      kk[t] = linear(hn, T(p + "self_attn.k_proj.weight"), &T(p + "self_attn.k_proj.bias"), Hk * D);
      v[t] = linear(hn, T(p + "self_attn.v_proj.weight"), &T(p + "self_attn.v_proj.bias"), Hk * D);
      for (int64_t h = 0; h < Hq; ++h) rope(q[t].data() + h * D, t);
      for (int64_t h = 0; h < Hk; ++h) rope(kk[t].data() + h * D, t);
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> attn(static_cast<size_t>(Hq * D), 0.0);
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / (Hq / Hk);
        std::vector<double> s;
        for (int64_t j = 0; j <= t; ++j) {
          const bool visible = !sliding || t - j < c.sliding_window;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[t][h * D + d] * kk[j][g * D + d];
          s.push_back(visible ? dot / std::sqrt(static_cast<double>(D)) : -INFINITY);
        }
        const double sink = at(T(p + "self_attn.sinks"), h);
        double mx = sink;
        for (double e : s) mx = std::max(mx, e);
        double den = std::exp(sink - mx);
        for (double e : s) den += std::exp(e - mx);
        for (int64_t j = 0; j <= t; ++j) {
          const double pj = std::exp(s[static_cast<size_t>(j)] - mx) / den;
          for (int64_t d = 0; d < D; ++d) attn[h * D + d] += pj * v[j][g * D + d];
        }
      }
      const auto o = linear(attn, T(p + "self_attn.o_proj.weight"), &T(p + "self_attn.o_proj.bias"), H);
      for (int64_t i = 0; i < H; ++i) x[t][i] += o[i];
    }
    for (int64_t t = 0; t < n; ++t) {
      const auto hn = rms(x[t], T(p + "post_attention_layernorm.weight"));
      const auto r = linear(hn, T(p + "mlp.router.weight"), &T(p + "mlp.router.bias"), E);
      std::vector<int64_t> order(static_cast<size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return r[a] > r[b]; });
      if (k < E) {
        double mean = 0, var = 0;
        for (double e : r) mean += e / static_cast<double>(E);
        for (double e : r) var += (e - mean) * (e - mean) / static_cast<double>(E);
        ref.routing_margin = std::min(ref.routing_margin, (r[order[k - 1]] - r[order[k]]) / std::sqrt(var));
      }
      double mx = r[order[0]], den = 0;
      for (int64_t j = 0; j < k; ++j) den += std::exp(r[order[j]] - mx);
      const Tensor &gu = T(p + "mlp.experts.gate_up_proj"), &gub = T(p + "mlp.experts.gate_up_proj_bias"),
                   &dn = T(p + "mlp.experts.down_proj"), &dnb = T(p + "mlp.experts.down_proj_bias");
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = order[j];
        const double w = std::exp(r[e] - mx) / den;
        std::vector<double> glu(static_cast<size_t>(I));
        for (int64_t i = 0; i < I; ++i) {
          double gate = at(gub, e * 2 * I + 2 * i), up = at(gub, e * 2 * I + 2 * i + 1);
          for (int64_t m = 0; m < H; ++m) {
            gate += hn[m] * at(gu, (e * H + m) * 2 * I + 2 * i);
            up += hn[m] * at(gu, (e * H + m) * 2 * I + 2 * i + 1);
          }
          gate = std::min(gate, c.swiglu_limit);
          up = std::clamp(up, -c.swiglu_limit, c.swiglu_limit);
          glu[i] = (up + 1.0) * gate / (1.0 + std::exp(-c.swiglu_alpha * gate));
        }
        for (int64_t m = 0; m < H; ++m) {
          double y = at(dnb, e * H + m);
          for (int64_t i = 0; i < I; ++i) y += glu[i] * at(dn, (e * I + i) * H + m);
          x[t][m] += w * y;
        }
      }
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    const auto hn = rms(x[t], T("model.norm.weight"));
    const auto lg = linear(hn, T("lm_head.weight"), nullptr, V);
    ref.logits.insert(ref.logits.end(), lg.begin(), lg.end());
  }
  return ref;
}

TEST(GptOss, EngineLogitsMatchAForwardPassFromTransformersDefinitions) {
  const uint64_t seed = test::seed_for("GptOss.ReferenceForward");
  const std::string config = std::string(model_config_json_by_name("tiny-gpt-oss"));
  const auto ck = write_checkpoint(config, seed);
  const ModelConfig c = parse_model_config(config);
  EngineConfig ec;
  ec.model = ck->dir.string();
  ec.backend = DeviceType::cpu;
  ec.max_num_batched_tokens = 64;
  ec.max_num_seqs = 64;  // prefill_logits reads every position as a sequence's last row
  ec.num_pages = 32;
  ec.max_model_len = 128;
  Engine engine(ec);
  // Prompts whose every routing decision is clear (the engine's bf16 activations move the
  // router logits by a few hundredths of their spread, which must not flip an expert),
  // longer than the 8-token window.
  std::mt19937_64 rng(seed);
  int compared = 0;
  for (int draw = 0; draw < 400 && compared < 2; ++draw) {
    const int64_t n = compared == 0 ? 11 : 21;
    std::vector<int64_t> tokens(static_cast<size_t>(n));
    for (int64_t& t : tokens) t = static_cast<int64_t>(rng() % 253 + 3);
    const Reference ref = reference_forward(c, *ck, tokens);
    if (ref.routing_margin < 0.1) continue;
    const std::vector<float> got = engine.prefill_logits(tokens, n);
    ASSERT_EQ(got.size(), ref.logits.size());
    for (int64_t t = 0; t < n; ++t) {
      double scale = 0, worst = 0;
      for (int64_t v = 0; v < c.vocab_size; ++v) scale = std::max(scale, std::abs(ref.logits[t * c.vocab_size + v]));
      for (int64_t v = 0; v < c.vocab_size; ++v)
        worst = std::max(worst, std::abs(got[t * c.vocab_size + v] - ref.logits[t * c.vocab_size + v]));
      EXPECT_LE(worst, 0.03 * scale) << "position " << t << " of " << n << " (seed " << seed << ")";
    }
    ++compared;
  }
  EXPECT_EQ(compared, 2) << "no prompt with clear routing (seed " << seed << ")";
}

TEST(GptOss, CheckpointExpertsAreTransposedAndDeinterleaved) {
  const std::string config = std::string(model_config_json_by_name("tiny-gpt-oss"));
  const auto ck = write_checkpoint(config, 7);
  const ModelSpec spec = model_spec_for(parse_model_config(config));
  const ModelWeights w = load_checkpoint_weights(spec, safetensors::Checkpoint::open(ck->dir), DType::bf16, Device::cpu());
  const int64_t E = 4, H = 64, I = 32;
  const LayerWeights& lw = w.layers[1];
  const Tensor &gu = ck->tensors.at("model.layers.1.mlp.experts.gate_up_proj"),
               &gub = ck->tensors.at("model.layers.1.mlp.experts.gate_up_proj_bias"),
               &dn = ck->tensors.at("model.layers.1.mlp.experts.down_proj");
  ASSERT_EQ(lw.w13.shape(), (Shape{E, 2 * I, H}));
  ASSERT_EQ(lw.w2.shape(), (Shape{E, H, I}));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t i = 0; i < I; ++i) {
      for (int64_t h = 0; h < H; h += 7) {
        EXPECT_EQ(at(lw.w13, (e * 2 * I + i) * H + h), at(gu, (e * H + h) * 2 * I + 2 * i));          // gate
        EXPECT_EQ(at(lw.w13, (e * 2 * I + I + i) * H + h), at(gu, (e * H + h) * 2 * I + 2 * i + 1));  // up
        EXPECT_EQ(at(lw.w2, (e * H + h) * I + i), at(dn, (e * I + i) * H + h));
      }
      EXPECT_EQ(at(lw.w13_bias, e * 2 * I + i), at(gub, e * 2 * I + 2 * i));
      EXPECT_EQ(at(lw.w13_bias, e * 2 * I + I + i), at(gub, e * 2 * I + 2 * i + 1));
    }
  EXPECT_EQ(lw.sinks.dtype(), DType::f32);
  EXPECT_EQ(lw.sinks.numel(), 4);
  EXPECT_EQ(lw.sinks.data_as<float>()[2], at(ck->tensors.at("model.layers.1.self_attn.sinks"), 2));
  EXPECT_EQ(lw.router_bias.numel(), 4);
}

TEST(GptOss, BadCheckpointsAreNamedErrors) {
  const std::string config = std::string(model_config_json_by_name("tiny-gpt-oss"));
  const ModelSpec spec = model_spec_for(parse_model_config(config));
  auto load_error = [&](const Checkpoint& ck) {
    try {
      load_checkpoint_weights(spec, safetensors::Checkpoint::open(ck.dir), DType::bf16, Device::cpu());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  {  // sinks of the wrong length
    const auto ck = write_checkpoint(config, 11, {{"model.layers.0.self_attn.sinks", {5}}});
    const std::string msg = load_error(*ck);
    EXPECT_NE(msg.find("'model.layers.0.self_attn.sinks' has shape [5] but the config implies [4]"), std::string::npos)
        << msg;
  }
  {  // MXFP4 blocks without their scales
    const auto ck = write_checkpoint(config, 12);
    safetensors::NamedViews views;
    for (const auto& [name, t] : ck->tensors) views.push_back({name, t.view()});
    Tensor blocks = Tensor::zeros({4, 64, 2, 16}, DType::u8);
    views.push_back({"model.layers.0.mlp.experts.gate_up_proj_blocks", blocks.view()});
    safetensors::save(ck->dir / "model.safetensors", views);
    const std::string msg = load_error(*ck);
    EXPECT_NE(msg.find("has no tensor 'model.layers.0.mlp.experts.gate_up_proj_scales', which MXFP4 experts need"),
              std::string::npos)
        << msg;
  }
  {  // experts of another width than the config's
    const auto ck = write_checkpoint(config, 13, {{"model.layers.1.mlp.experts.gate_up_proj", {4, 64, 32}}});
    const std::string msg = load_error(*ck);
    EXPECT_NE(msg.find("gate_up_proj' has shape [4, 64, 32] but the config implies [4, 64, 64]"), std::string::npos)
        << msg;
  }
}

// gpt-oss's released layout: quantization_config "mxfp4", the experts as U8 blocks (two
// E2M1 values a byte, low nibble first) and E8M0 scales per 32 values, holding gate_up
// before transformers transposes it ([E, 2I, H]: rows alternate gate / up) and down_proj
// as [E, H, I]. Dequantized at load into w13 / w2, value by value; misshapen scales are a
// named error.
TEST(GptOss, Mxfp4ExpertsAreDequantizedAtLoad) {
  nlohmann::json j = nlohmann::json::parse(model_config_json_by_name("tiny-gpt-oss"));
  j["quantization_config"] = {{"quant_method", "mxfp4"}, {"modules_to_not_convert", nlohmann::json::array()}};
  const std::string config = j.dump();
  const ModelSpec spec = model_spec_for(parse_model_config(config));
  EXPECT_TRUE(spec.mxfp4_experts);
  const int64_t E = 4, H = 64, I = 32;
  const DecoderLlm llm("gpt_oss", spec);
  bool declared = false;
  for (const models::TensorDecl& d : llm.weights())
    if (d.name == "model.layers.0.mlp.experts.gate_up_proj_blocks")
      declared = d.shape == std::vector<int64_t>{E, 2 * I, H / 32, 16} && d.dtype == DType::u8;
  EXPECT_TRUE(declared) << "DecoderLlm::weights() names the MXFP4 blocks";

  const double kE2M1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  auto write = [&](uint64_t seed, const Shape& gate_up_scales_shape) {
    auto ck = write_checkpoint(config, seed);
    std::mt19937_64 rng(5);
    safetensors::NamedViews views;
    for (const auto& [name, t] : ck->tensors)
      if (name.find("experts.gate_up_proj") == std::string::npos || name.find("bias") != std::string::npos)
        if (name.find("experts.down_proj") == std::string::npos || name.find("bias") != std::string::npos)
          views.push_back({name, t.view()});
    for (int64_t l = 0; l < 2; ++l)
      for (const auto& [what, rows, cols] : {std::tuple<const char*, int64_t, int64_t>{"gate_up_proj", 2 * I, H},
                                             {"down_proj", H, I}}) {
        const std::string base = concat("model.layers.", l, ".mlp.experts.", what);
        Tensor blocks = Tensor::empty({E, rows, cols / 32, 16}, DType::u8);
        Shape scales_shape{E, rows, cols / 32};
        if (l == 1 && std::string(what) == "gate_up_proj") scales_shape = gate_up_scales_shape;
        Tensor scales = Tensor::empty(scales_shape, DType::u8);
        for (int64_t i = 0; i < blocks.numel(); ++i) blocks.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng());
        for (int64_t i = 0; i < scales.numel(); ++i) scales.data_as<uint8_t>()[i] = static_cast<uint8_t>(120 + rng() % 10);
        ck->tensors[base + "_blocks"] = blocks;
        ck->tensors[base + "_scales"] = scales;
        views.push_back({base + "_blocks", blocks.view()});
        views.push_back({base + "_scales", scales.view()});
      }
    safetensors::save(ck->dir / "model.safetensors", views);
    return ck;
  };
  const auto ck = write(21, {E, 2 * I, H / 32});
  const ModelWeights w = load_checkpoint_weights(spec, safetensors::Checkpoint::open(ck->dir), DType::bf16, Device::cpu());
  // The value at row r, column c of a dequantized [E, R, C] matrix.
  auto value = [&](const std::string& base, int64_t e, int64_t r, int64_t c, int64_t R, int64_t C) {
    const uint8_t byte = ck->tensors.at(base + "_blocks").data_as<uint8_t>()[((e * R + r) * (C / 32) + c / 32) * 16 + c % 32 / 2];
    const uint8_t s = ck->tensors.at(base + "_scales").data_as<uint8_t>()[(e * R + r) * (C / 32) + c / 32];
    return kE2M1[c % 2 == 0 ? byte & 0x0F : byte >> 4] * std::ldexp(1.0, s - 127);
  };
  const LayerWeights& lw = w.layers[1];
  const std::string gu = "model.layers.1.mlp.experts.gate_up_proj", dn = "model.layers.1.mlp.experts.down_proj";
  for (int64_t e = 0; e < E; ++e)
    for (int64_t h = 0; h < H; h += 3) {
      for (int64_t i = 0; i < I; ++i) {
        EXPECT_EQ(at(lw.w13, (e * 2 * I + i) * H + h), value(gu, e, 2 * i, h, 2 * I, H)) << e << " gate " << i;
        EXPECT_EQ(at(lw.w13, (e * 2 * I + I + i) * H + h), value(gu, e, 2 * i + 1, h, 2 * I, H)) << e << " up " << i;
        EXPECT_EQ(at(lw.w2, (e * H + h) * I + i), value(dn, e, h, i, H, I)) << e << " down " << h;
      }
    }
  // Misshapen scales: named.
  const auto bad = write(22, {E, 2 * I, H / 16});
  try {
    load_checkpoint_weights(spec, safetensors::Checkpoint::open(bad->dir), DType::bf16, Device::cpu());
    ADD_FAILURE() << "misshapen MXFP4 scales loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gate_up_proj_scales' is U8[4, 64, 4] but the E8M0 scales of this config's "
                                         "MXFP4 experts are U8[4, 64, 2]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fk::engine
