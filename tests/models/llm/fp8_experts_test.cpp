// Block-fp8 experts in the engine (CPU backend). Checkpoints: a Qwen2-MoE model written
// with every projection in F8_E4M3 plus its "_scale_inv" block scales (the layout of
// DeepSeek-V3 and Qwen3-*-FP8), per expert and as transformers 5's fused experts, computes
// exactly what the same model written in bf16 with those projections dequantized computes;
// its experts stay fp8 (with their scale grids stacked as fused_experts reads them) and
// every other projection loads dequantized. Configs and checkpoints the engine cannot run
// fail naming the problem. Dummy weights with quantization "fp8" are the bf16 draws
// quantized per 128x128 block, and run through the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "serving/generate/engine.h"
#include "models/llm/golden_check.h"  // prefill_logits (tests/models/llm/)
#include "models/llm/fp8_blocks.h"
#include "models/llm/model_spec.h"
#include "models/llm/weights.h"
#include "fk/element.h"
#include "models/llm/model_config.h"
#include "core/safetensors/safetensors.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

namespace fs = std::filesystem;
using Tensors = std::map<std::string, Tensor>;

// Two Qwen2-MoE layers whose projections cover whole and partial 128x128 blocks: hidden 192
// (128 + 64), 4 experts `expert_width` wide, a shared expert 144 wide, layer 1 dense (160
// wide), 256 words, an untied head.
std::string config_json(int64_t expert_width, const std::string& quantization) {
  std::string s = R"({"model_type": "qwen2_moe", "hidden_size": 192, "intermediate_size": 160,
    "moe_intermediate_size": )" + std::to_string(expert_width) + R"(, "shared_expert_intermediate_size": 144,
    "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 1, "vocab_size": 256,
    "max_position_embeddings": 512, "rope_theta": 1000000.0, "num_experts": 4, "num_experts_per_tok": 2,
    "mlp_only_layers": [1], "tie_word_embeddings": false)";
  if (!quantization.empty()) s += R"(, "quantization_config": )" + quantization;
  return s + "}";
}
// Qwen3-30B-A3B-FP8's quantization_config.
const std::string kFp8 =
    R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]})";

const std::vector<int64_t> kTokens = {5, 17, 200, 3, 99, 42, 7, 128, 64, 1, 250};

double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

bool same(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() ||
         (a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

// Whether `part` is byte for byte what `whole` holds from element `first` on.
bool holds(const Tensor& whole, int64_t first, const Tensor& part) {
  return whole.dtype() == part.dtype() && first + part.numel() <= whole.numel() &&
         std::memcmp(whole.view().element_ptr(first), part.data(), part.nbytes()) == 0;
}

// A standalone copy of `shape` elements of `t` from element `first` on.
Tensor part(const Tensor& t, int64_t first, const Shape& shape) {
  Tensor p = Tensor::empty(shape, t.dtype());
  std::memcpy(p.data(), t.view().element_ptr(first), p.nbytes());
  return p;
}

enum class Experts { per_expert, fused };

// A Qwen2-MoE model's weights under its HF checkpoint names.
Tensors hf_tensors(const ModelSpec& spec, const ModelWeights& w, Experts layout) {
  const ModelConfig& c = spec.config;
  const int64_t H = c.hidden_size, q = c.q_size(), kv = c.kv_size(), I = c.intermediate_size, E = spec.moe.num_experts,
                Ie = spec.moe.intermediate, Is = spec.moe.shared_intermediate;
  Tensors t;
  t["model.embed_tokens.weight"] = w.embed;
  t["model.norm.weight"] = w.final_norm;
  t["lm_head.weight"] = w.lm_head;
  for (int64_t l = 0; l < spec.num_layers(); ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t[p + "input_layernorm.weight"] = lw.input_norm;
    t[p + "post_attention_layernorm.weight"] = lw.pre_mlp_norm;
    t[p + "self_attn.q_proj.weight"] = part(lw.qkv, 0, {q, H});
    t[p + "self_attn.k_proj.weight"] = part(lw.qkv, q * H, {kv, H});
    t[p + "self_attn.v_proj.weight"] = part(lw.qkv, (q + kv) * H, {kv, H});
    t[p + "self_attn.q_proj.bias"] = part(lw.qkv_bias, 0, {q});
    t[p + "self_attn.k_proj.bias"] = part(lw.qkv_bias, q, {kv});
    t[p + "self_attn.v_proj.bias"] = part(lw.qkv_bias, q + kv, {kv});
    t[p + "self_attn.o_proj.weight"] = lw.o_proj;
    if (!spec.is_moe_layer(l)) {
      t[p + "mlp.gate_proj.weight"] = part(lw.gate_up, 0, {I, H});
      t[p + "mlp.up_proj.weight"] = part(lw.gate_up, I * H, {I, H});
      t[p + "mlp.down_proj.weight"] = lw.down;
      continue;
    }
    t[p + "mlp.gate.weight"] = lw.router;
    t[p + "mlp.shared_expert.gate_proj.weight"] = part(lw.shared_gate_up, 0, {Is, H});
    t[p + "mlp.shared_expert.up_proj.weight"] = part(lw.shared_gate_up, Is * H, {Is, H});
    t[p + "mlp.shared_expert.down_proj.weight"] = lw.shared_down;
    t[p + "mlp.shared_expert_gate.weight"] = lw.shared_gate;
    if (layout == Experts::fused) {
      t[p + "mlp.experts.gate_up_proj"] = lw.w13;
      t[p + "mlp.experts.down_proj"] = lw.w2;
      continue;
    }
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      t[x + "gate_proj.weight"] = part(lw.w13, e * 2 * Ie * H, {Ie, H});
      t[x + "up_proj.weight"] = part(lw.w13, (e * 2 + 1) * Ie * H, {Ie, H});
      t[x + "down_proj.weight"] = part(lw.w2, e * H * Ie, {H, Ie});
    }
  }
  return t;
}

// Block fp8 as the test computes it: per 128x128 block of each matrix ([..., R, C]) a scale,
// q = fp8(w / scale), and the dequantized q * scale rounded once to bf16. `pow2`: the scale
// is the power of two at or above absmax / 448 times 1, 2 or 4 by the block's position
// (neighbouring blocks differ, and q * scale is exact in bf16); else absmax / 448 in f32,
// what a checkpoint's quantizer writes.
struct Quantized {
  Tensor q, scale, dequantized;
};
Quantized quantize(const Tensor& w, bool pow2) {
  const Shape shape = w.shape();
  const size_t rank = shape.size();
  const int64_t R = shape[rank - 2], C = shape[rank - 1], M = w.numel() / (R * C);
  const int64_t RB = (R + 127) / 128, CB = (C + 127) / 128;
  Shape grid = shape;
  grid[rank - 2] = RB;
  grid[rank - 1] = CB;
  Quantized out{Tensor::empty(shape, DType::f8e4m3fn), Tensor::empty(grid, DType::f32),
                Tensor::empty(shape, DType::bf16)};
  for (int64_t m = 0; m < M; ++m)
    for (int64_t br = 0; br < RB; ++br)
      for (int64_t bc = 0; bc < CB; ++bc) {
        const int64_t r1 = std::min(R, (br + 1) * 128), c1 = std::min(C, (bc + 1) * 128);
        double amax = 0;
        for (int64_t r = br * 128; r < r1; ++r)
          for (int64_t c = bc * 128; c < c1; ++c) amax = std::max(amax, std::fabs(at(w, (m * R + r) * C + c)));
        double s = 1;
        if (amax > 0 && pow2)
          s = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(amax / 448)))) * (1 << ((br * CB + bc) % 3));
        else if (amax > 0)
          s = static_cast<float>(amax / 448);
        store_element(out.scale.view().element_ptr((m * RB + br) * CB + bc), DType::f32, s);
        for (int64_t r = br * 128; r < r1; ++r)
          for (int64_t c = bc * 128; c < c1; ++c) {
            const int64_t i = (m * R + r) * C + c;
            store_element(out.q.view().element_ptr(i), DType::f8e4m3fn, at(w, i) / s);
            store_element(out.dequantized.view().element_ptr(i), DType::bf16, at(out.q, i) * s);
          }
      }
  return out;
}

// A checkpoint with every projection (rank >= 2, not an embedding or a norm) in fp8 plus
// its "_scale_inv", and the same model with those projections dequantized.
struct QuantizedCheckpoint {
  Tensors fp8, dequantized;
  std::map<std::string, Quantized> parts;
};
QuantizedCheckpoint quantize_projections(const Tensors& t, bool pow2) {
  QuantizedCheckpoint out;
  for (const auto& [name, x] : t) {
    if (x.rank() < 2 || name.find("embed_tokens") != std::string::npos || name.find("norm") != std::string::npos) {
      out.fp8[name] = out.dequantized[name] = x;
      continue;
    }
    const Quantized qz = quantize(x, pow2);
    out.fp8[name] = qz.q;
    out.fp8[name + "_scale_inv"] = qz.scale;
    out.dequantized[name] = qz.dequantized;
    out.parts[name] = qz;
  }
  return out;
}

// A checkpoint folder (config.json + model.safetensors) of a fresh name.
fs::path write_folder(const std::string& tag, const std::string& config, const Tensors& t) {
  const fs::path dir =
      fs::temp_directory_path() / ("fk_fp8_experts_" + tag + "_" + std::to_string(fk::test::seed_for(tag) % 1000000));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  safetensors::NamedViews views;
  for (const auto& [name, x] : t) views.emplace_back(name, x.view());
  safetensors::save(dir / "model.safetensors", views);
  return dir;
}

ModelSpec spec_of(const fs::path& dir, const std::string& quantization = "") {
  ModelSpec spec = model_spec_for(load_model_config(dir));
  apply_quantization(spec, quantization);
  return spec;
}

ModelWeights load(const fs::path& dir, const std::string& quantization = "") {
  return load_checkpoint_weights(spec_of(dir, quantization), safetensors::Checkpoint::open(dir), DType::bf16,
                                 Device::cpu());
}

std::vector<float> logits_of(const ModelSpec& spec, ModelWeights w) {
  DecoderModel model(spec, std::move(w), Device::cpu(), 64, 4, 64, 512);
  KvCache kv(spec.num_layers(), 8, 16, spec.config.num_key_value_heads, spec.config.head_dim, DType::bf16,
             Device::cpu());
  return test::prefill_logits(model, kv, kTokens, nullptr);
}

std::vector<float> logits_of(const fs::path& dir, const std::string& quantization = "") {
  return logits_of(spec_of(dir, quantization), load(dir, quantization));
}

// The message of what `f` throws ("(no error)" when it does not).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Weights of the test model, drawn, under its HF names.
Tensors drawn_tensors(int64_t expert_width, Experts layout, const std::string& tag) {
  const ModelSpec spec = model_spec_for(parse_model_config(config_json(expert_width, "")));
  return hf_tensors(spec, dummy_weights(spec, DType::bf16, Device::cpu(), fk::test::seed_for(tag)), layout);
}

// ---- (a) the fp8 checkpoint computes what its dequantized twin computes ------------------

TEST(Fp8Experts, CheckpointComputesWhatItsDequantizedWeightsCompute) {
  for (Experts layout : {Experts::per_expert, Experts::fused}) {
    const std::string tag = layout == Experts::fused ? "fused" : "per_expert";
    SCOPED_TRACE(tag);
    const Tensors drawn = drawn_tensors(128, layout, "exact_" + tag);
    const QuantizedCheckpoint qc = quantize_projections(drawn, /*pow2=*/true);
    const fs::path fp8_dir = write_folder("exact_fp8_" + tag, config_json(128, kFp8), qc.fp8);
    const fs::path bf16_dir = write_folder("exact_bf16_" + tag, config_json(128, ""), qc.dequantized);
    const fs::path drawn_dir = write_folder("exact_drawn_" + tag, config_json(128, ""), drawn);

    const ModelSpec spec = spec_of(fp8_dir);
    EXPECT_TRUE(spec.fp8_checkpoint);
    EXPECT_TRUE(spec.moe.fp8);
    const ModelWeights got = load(fp8_dir);
    const LayerWeights& moe = got.layers[0];
    ASSERT_EQ(moe.w13.dtype(), DType::f8e4m3fn);
    ASSERT_EQ(moe.w2.dtype(), DType::f8e4m3fn);
    EXPECT_EQ(moe.w13_scale.shape(), (Shape{4, 2, 2}));
    EXPECT_EQ(moe.w2_scale.shape(), (Shape{4, 2, 1}));

    const std::vector<float> fp8 = logits_of(fp8_dir), dequantized = logits_of(bf16_dir);
    ASSERT_EQ(fp8.size(), dequantized.size());
    for (size_t i = 0; i < fp8.size(); ++i) ASSERT_EQ(fp8[i], dequantized[i]) << "logit " << i;
    // Control: quantizing changed the model (the comparison above is not of one model with itself).
    EXPECT_NE(fp8, logits_of(drawn_dir));
    // The engine's --quantization fp8 is redundant with such a checkpoint.
    EXPECT_EQ(logits_of(fp8_dir, "fp8"), fp8);
    // The engine loads the folder the same way.
    EngineConfig c;
    c.model = fp8_dir.string();
    c.backend = DeviceType::cpu;
    c.num_pages = 16;
    c.max_model_len = 128;
    c.max_num_batched_tokens = 64;
    Engine engine(c);
    EXPECT_TRUE(engine.spec().moe.fp8);
    EXPECT_EQ(engine.prefill_logits(kTokens, 2), std::vector<float>(dequantized.end() - 2 * 256, dequantized.end()));
    for (const fs::path& d : {fp8_dir, bf16_dir, drawn_dir}) fs::remove_all(d);
  }
}

// ---- (b) experts stay fp8 as stored, every other projection is dequantized ----------------

TEST(Fp8Experts, ExpertsStayFp8AndOtherProjectionsAreDequantized) {
  for (Experts layout : {Experts::per_expert, Experts::fused}) {
    const std::string tag = layout == Experts::fused ? "fused" : "per_expert";
    SCOPED_TRACE(tag);
    // Scales as a checkpoint's quantizer writes them (absmax / 448): not powers of two, so
    // a loader that rounded them, or the dequantized values twice, would show.
    const QuantizedCheckpoint qc = quantize_projections(drawn_tensors(128, layout, "load_" + tag), /*pow2=*/false);
    const fs::path fp8_dir = write_folder("load_fp8_" + tag, config_json(128, kFp8), qc.fp8);
    const fs::path bf16_dir = write_folder("load_bf16_" + tag, config_json(128, ""), qc.dequantized);
    const ModelWeights got = load(fp8_dir), want = load(bf16_dir);
    ASSERT_EQ(got.layers.size(), 2u);
    EXPECT_TRUE(same(got.lm_head, want.lm_head));
    EXPECT_TRUE(same(got.embed, want.embed));
    int64_t expert_elements = 0, scale_elements = 0;
    for (size_t l = 0; l < 2; ++l) {
      const LayerWeights &g = got.layers[l], &x = want.layers[l];
      SCOPED_TRACE("layer " + std::to_string(l));
      EXPECT_TRUE(same(g.qkv, x.qkv) && same(g.qkv_bias, x.qkv_bias) && same(g.o_proj, x.o_proj));
      EXPECT_TRUE(same(g.router, x.router));
      EXPECT_TRUE(same(g.shared_gate_up, x.shared_gate_up) && same(g.shared_down, x.shared_down) &&
                  same(g.shared_gate, x.shared_gate));
      EXPECT_TRUE(same(g.gate_up, x.gate_up) && same(g.down, x.down));
      EXPECT_EQ(g.qkv.dtype(), DType::bf16);
      if (l == 1) {
        EXPECT_FALSE(g.w13.defined() || g.w13_scale.defined()) << "layer 1 is dense";
        continue;
      }
      EXPECT_FALSE(x.w13_scale.defined() || x.w2_scale.defined()) << "the bf16 checkpoint's experts have no scales";
      // The experts' bytes and scales as written, gate then up rows of each expert.
      const std::string p = "model.layers.0.mlp.experts.";
      if (layout == Experts::fused) {
        EXPECT_TRUE(same(g.w13, qc.parts.at(p + "gate_up_proj").q));
        EXPECT_TRUE(same(g.w13_scale, qc.parts.at(p + "gate_up_proj").scale));
        EXPECT_TRUE(same(g.w2, qc.parts.at(p + "down_proj").q));
        EXPECT_TRUE(same(g.w2_scale, qc.parts.at(p + "down_proj").scale));
      } else {
        for (int64_t e = 0; e < 4; ++e) {
          const std::string x_ = p + std::to_string(e) + ".";
          const Quantized &gate = qc.parts.at(x_ + "gate_proj.weight"), &up = qc.parts.at(x_ + "up_proj.weight"),
                          &down = qc.parts.at(x_ + "down_proj.weight");
          EXPECT_TRUE(holds(g.w13, e * 256 * 192, gate.q) && holds(g.w13, e * 256 * 192 + 128 * 192, up.q)) << e;
          EXPECT_TRUE(holds(g.w13_scale, e * 4, gate.scale) && holds(g.w13_scale, e * 4 + 2, up.scale)) << e;
          EXPECT_TRUE(holds(g.w2, e * 192 * 128, down.q) && holds(g.w2_scale, e * 2, down.scale)) << e;
        }
      }
      // Dequantized with the op's convention (w13_scale[e, r / 128, c / 128]) they are the
      // bf16 checkpoint's experts.
      for (const auto& [w, s, bf16] :
           {std::tuple{&g.w13, &g.w13_scale, &x.w13}, std::tuple{&g.w2, &g.w2_scale, &x.w2}}) {
        const int64_t R = w->size(1), C = w->size(2), RB = s->size(1), CB = s->size(2);
        for (int64_t i = 0; i < w->numel(); ++i) {
          const int64_t e = i / (R * C), r = (i / C) % R, c = i % C;
          uint8_t out[2];
          store_element(out, DType::bf16, at(*w, i) * at(*s, (e * RB + r / 128) * CB + c / 128));
          ASSERT_EQ(load_element(out, DType::bf16), at(*bf16, i)) << "element " << i;
        }
        expert_elements += w->numel();
        scale_elements += s->numel();
      }
    }
    // fp8 experts take a byte an element, plus 4 per scale.
    EXPECT_EQ(got.bytes, want.bytes - expert_elements + 4 * scale_elements);
    // Their twin's logits, whose experts are rounded to bf16, are close.
    const std::vector<float> a = logits_of(fp8_dir), b = logits_of(bf16_dir);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
    }
    EXPECT_LE(worst, 0.02 * scale) << "logits up to " << scale;
    fs::remove_all(fp8_dir);
    fs::remove_all(bf16_dir);
  }
}

// --quantization fp8 with a 16-bit checkpoint: its experts are quantized at load time.
TEST(Fp8Experts, SixteenBitCheckpointExpertsAreQuantizedOnRequest) {
  const Tensors drawn = drawn_tensors(128, Experts::per_expert, "online");
  const fs::path dir = write_folder("online", config_json(128, ""), drawn);
  const ModelWeights plain = load(dir), fp8 = load(dir, "fp8");
  EXPECT_EQ(plain.layers[0].w13.dtype(), DType::bf16);
  const Fp8Blocks w13 = quantize_fp8_blocks(plain.layers[0].w13), w2 = quantize_fp8_blocks(plain.layers[0].w2);
  EXPECT_TRUE(same(fp8.layers[0].w13, w13.weight) && same(fp8.layers[0].w13_scale, w13.scale));
  EXPECT_TRUE(same(fp8.layers[0].w2, w2.weight) && same(fp8.layers[0].w2_scale, w2.scale));
  EXPECT_TRUE(same(fp8.layers[0].qkv, plain.layers[0].qkv));
  EXPECT_EQ(logits_of(dir, "fp8").size(), kTokens.size() * 256);
  fs::remove_all(dir);
}

// ---- (c) what the engine cannot run fails, naming it ---------------------------------------

TEST(Fp8Experts, UnsupportedQuantizationConfigsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"quant_method": "gptq", "bits": 4, "group_size": 128})", "quant_method 'gptq' is not supported"},
      {R"({"quant_method": "fp8", "weight_block_size": [64, 64]})", "fp8 weight_block_size [64, 64] is not supported"},
      {R"({"quant_method": "fp8", "activation_scheme": "dynamic"})", "without weight_block_size"},
      {R"({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "static"})",
       "activation_scheme 'static'"},
  };
  for (const auto& [quantization, expected] : cases) {
    const std::string msg = error_of([&] { model_spec_for(parse_model_config(config_json(128, quantization))); });
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    EXPECT_NE(msg.find("qwen2_moe"), std::string::npos) << msg;
  }
  // Through the engine, from a checkpoint folder.
  const fs::path dir = write_folder("gptq", config_json(128, cases[0].first), {});
  EngineConfig c;
  c.model = dir.string();
  c.backend = DeviceType::cpu;
  const std::string msg = error_of([&] { Engine e(c); });
  EXPECT_NE(msg.find("quant_method 'gptq' is not supported"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Fp8Experts, ExpertWidthNotAMultipleOf128IsNamed) {
  // Per-expert gate and up 96 rows each: their scale blocks cannot stack into w13's.
  const QuantizedCheckpoint per_expert = quantize_projections(drawn_tensors(96, Experts::per_expert, "w96"), true);
  const fs::path dir = write_folder("w96", config_json(96, kFp8), per_expert.fp8);
  const std::string msg = error_of([&] { load(dir); });
  EXPECT_NE(msg.find("qwen2_moe model have intermediate size 96, not a multiple of 128"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
  fs::remove_all(dir);
  // Fused experts carry the grid of the fused [192, H] matrix: they load.
  const QuantizedCheckpoint fused = quantize_projections(drawn_tensors(96, Experts::fused, "w96f"), true);
  const fs::path fused_dir = write_folder("w96f", config_json(96, kFp8), fused.fp8);
  const ModelWeights w = load(fused_dir);
  EXPECT_EQ(w.layers[0].w13_scale.shape(), (Shape{4, 2, 2}));
  EXPECT_TRUE(same(w.layers[0].w13_scale, fused.parts.at("model.layers.0.mlp.experts.gate_up_proj").scale));
  fs::remove_all(fused_dir);
}

TEST(Fp8Experts, MissingOrMisshapenScalesAreNamed) {
  const QuantizedCheckpoint qc = quantize_projections(drawn_tensors(128, Experts::per_expert, "scales"), true);
  const std::string up = "model.layers.0.mlp.experts.1.up_proj.weight", o = "model.layers.0.self_attn.o_proj.weight";
  const std::string down = "model.layers.0.mlp.experts.0.down_proj.weight",
                    gate = "model.layers.1.mlp.gate_proj.weight";
  for (const std::string& name : {up, o}) {
    Tensors t = qc.fp8;
    t.erase(name + "_scale_inv");
    const fs::path dir = write_folder("missing", config_json(128, kFp8), t);
    const std::string msg = error_of([&] { load(dir); });
    EXPECT_NE(msg.find("'" + name + "' is fp8 (F8_E4M3) but '" + name + "_scale_inv', its block scales, is missing"),
              std::string::npos)
        << msg;
    fs::remove_all(dir);
  }
  for (const auto& [name, wrong, expected] :
       {std::tuple{down, Shape{1, 1}, std::string("has shape [1, 1] but the 128x128 block scales of '") + down +
                                          "' [192, 128] are [2, 1]"},
        std::tuple{gate, Shape{2, 1}, std::string("has shape [2, 1] but the 128x128 block scales of '") + gate +
                                          "' [160, 192] are [2, 2]"}}) {
    Tensors t = qc.fp8;
    t[name + "_scale_inv"] = Tensor::zeros(wrong, DType::f32);
    const fs::path dir = write_folder("misshapen", config_json(128, kFp8), t);
    const std::string msg = error_of([&] { load(dir); });
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    fs::remove_all(dir);
  }
}

TEST(Fp8Experts, Fp8TensorsNeedAnFp8ConfigAndConsistentExperts) {
  const QuantizedCheckpoint qc = quantize_projections(drawn_tensors(128, Experts::per_expert, "mixed"), true);
  // fp8 tensors, but config.json does not say how to scale them.
  const fs::path plain = write_folder("no_config", config_json(128, ""), qc.fp8);
  std::string msg = error_of([&] { load(plain); });
  EXPECT_NE(msg.find("is fp8 (F8_E4M3) but config.json has no quantization_config"), std::string::npos) << msg;
  fs::remove_all(plain);
  // One expert's up projection in bf16 among fp8 experts.
  Tensors t = qc.fp8;
  const std::string up = "model.layers.0.mlp.experts.2.up_proj.weight";
  t[up] = qc.dequantized.at(up);
  t.erase(up + "_scale_inv");
  const fs::path dir = write_folder("mixed", config_json(128, kFp8), t);
  msg = error_of([&] { load(dir); });
  EXPECT_NE(msg.find("'" + up + "' has dtype BF16 where fp8 (F8_E4M3) is expected"), std::string::npos) << msg;
  fs::remove_all(dir);
}

// ---- (d) dummy weights -----------------------------------------------------------------------

TEST(Fp8Experts, DummyExpertsAreTheDrawsQuantizedPerBlock) {
  const ModelSpec plain = model_spec_for(parse_model_config(config_json(128, "")));
  ModelSpec spec = plain;
  apply_quantization(spec, "fp8");
  EXPECT_TRUE(spec.moe.fp8);
  EXPECT_FALSE(spec.fp8_checkpoint);
  const uint64_t seed = fk::test::seed_for("Fp8Dummy");
  const ModelWeights drawn = dummy_weights(plain, DType::bf16, Device::cpu(), seed);
  const ModelWeights w = dummy_weights(spec, DType::bf16, Device::cpu(), seed);
  const LayerWeights &g = w.layers[0], &x = drawn.layers[0];
  ASSERT_EQ(g.w13.dtype(), DType::f8e4m3fn);
  ASSERT_EQ(g.w2.dtype(), DType::f8e4m3fn);
  ASSERT_EQ(g.w13.shape(), (Shape{4, 256, 192}));
  ASSERT_EQ(g.w13_scale.shape(), (Shape{4, 2, 2}));  // [E, ceil(2Ie/128), ceil(H/128)]
  ASSERT_EQ(g.w2_scale.shape(), (Shape{4, 2, 1}));   // [E, ceil(H/128), ceil(Ie/128)]
  ASSERT_EQ(g.w13_scale.dtype(), DType::f32);
  int64_t expert_elements = 0, scale_elements = 0;
  for (const auto& [q, s, d] : {std::tuple{&g.w13, &g.w13_scale, &x.w13}, std::tuple{&g.w2, &g.w2_scale, &x.w2}}) {
    const int64_t E = q->size(0), R = q->size(1), C = q->size(2), RB = s->size(1), CB = s->size(2);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t br = 0; br < RB; ++br)
        for (int64_t bc = 0; bc < CB; ++bc) {
          const double scale = at(*s, (e * RB + br) * CB + bc);
          float amax = 0;
          for (int64_t r = br * 128; r < std::min(R, br * 128 + 128); ++r)
            for (int64_t c = bc * 128; c < std::min(C, bc * 128 + 128); ++c) {
              const int64_t i = (e * R + r) * C + c;
              const double drawn_value = at(*d, i), value = at(*q, i) * scale;
              amax = std::max(amax, static_cast<float>(std::fabs(drawn_value)));
              // Within half an e4m3 step of the draw (2^-4 relative; 2^-10 * scale for subnormals).
              const double bound = std::max(std::fabs(drawn_value) * 0x1p-4, scale * 0x1p-10) * 1.000001;
              ASSERT_LE(std::fabs(value - drawn_value), bound)
                  << "expert " << e << " element " << r << ", " << c;
            }
          ASSERT_EQ(scale, static_cast<double>(amax / 448.0f)) << "block " << e << ", " << br << ", " << bc;
        }
    expert_elements += q->numel();
    scale_elements += s->numel();
  }
  // Everything else is the bf16 draws.
  EXPECT_TRUE(same(g.qkv, x.qkv) && same(g.router, x.router) && same(g.shared_gate_up, x.shared_gate_up));
  EXPECT_TRUE(same(w.layers[1].gate_up, drawn.layers[1].gate_up) && same(w.lm_head, drawn.lm_head));
  EXPECT_FALSE(w.layers[1].w13_scale.defined());
  EXPECT_EQ(w.bytes, drawn.bytes - expert_elements + 4 * scale_elements);
}

TEST(Fp8Experts, QuantizationOptionIsCheckedAgainstTheModel) {
  ModelSpec dense = model_spec_for(model_config_by_name("tiny-llama"));
  std::string msg = error_of([&] { apply_quantization(dense, "fp8"); });
  EXPECT_NE(msg.find("model_type 'llama' is dense"), std::string::npos) << msg;
  ModelSpec moe = model_spec_for(model_config_by_name("tiny-qwen3-moe"));
  msg = error_of([&] { apply_quantization(moe, "int8"); });
  EXPECT_NE(msg.find("quantization 'int8' is not supported"), std::string::npos) << msg;
  EXPECT_FALSE(moe.moe.fp8);
  EngineConfig c;
  c.model = "tiny-llama";
  c.quantization = "fp8";
  msg = error_of([&] { Engine e(c); });
  EXPECT_NE(msg.find("is dense"), std::string::npos) << msg;
  c.quantization = "fp4";
  msg = error_of([&] { c.validate(); });
  EXPECT_NE(msg.find("got 'fp4'"), std::string::npos) << msg;
}

// --dummy-weights --quantization fp8 through the engine: it generates, holds fewer bytes,
// and its logits are near (not equal to) those of the same draws in bf16.
TEST(Fp8Experts, DummyFp8ModelRunsThroughTheEngine) {
  EngineConfig c;
  c.model = "tiny-qwen3-moe";
  c.backend = DeviceType::cpu;
  c.num_pages = 32;
  c.max_num_batched_tokens = 24;
  c.max_model_len = 128;
  c.weight_seed = fk::test::seed_for("Fp8Engine");
  Engine bf16(c);
  c.quantization = "fp8";
  Engine fp8(c);
  EXPECT_TRUE(fp8.spec().moe.fp8);
  EXPECT_LT(fp8.stats().weight_bytes, bf16.stats().weight_bytes);
  const std::vector<float> a = fp8.prefill_logits(kTokens, 4), b = bf16.prefill_logits(kTokens, 4);
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, error_squares = 0, logit_squares = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double error = static_cast<double>(a[i]) - b[i];
    worst = std::max(worst, std::fabs(error));
    error_squares += error * error;
    logit_squares += static_cast<double>(b[i]) * b[i];
  }
  EXPECT_GT(worst, 0) << "the fp8 experts should change some logit";
  // A coarse bound: the exact checks are the checkpoint tests' and the fp8 op's. A tiny
  // random model amplifies fp8's 2^-4 relative steps unevenly across seeds (relative RMS
  // error 0.02 to 0.2 over 400 seeds; the largest single logit error is heavier-tailed
  // still, so it is not the measure). A lost or inverted scale multiplies the experts'
  // output by up to 448 / amax and is off by far more than 0.5.
  const double relative_rms_error = std::sqrt(error_squares / logit_squares);
  EXPECT_LE(relative_rms_error, 0.5) << "seed " << c.weight_seed;
  SamplingParams sp;
  sp.temperature = 0;
  sp.ignore_eos = true;
  sp.max_tokens = 4;
  const auto out = fp8.generate({{1, 2, 3}, {9, 8}}, sp);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& r : out) EXPECT_EQ(r.output_tokens.size(), 4u);
}

}  // namespace
}  // namespace fk::engine
