// Qwen3-VL end to end on the CPU engine against a forward composed here in double from the
// upstream description (transformers' Qwen3VLTextModel): a checkpoint written under the
// upstream names (model.language_model.*, model.visual.*, lm_head.weight; bf16 values),
// loaded by the engine from its folder. The reference embeds the prompt, puts the vision
// tower's merged features at the image tokens, and runs each layer: RMSNorm, q/k/v, per-head
// q/k RMSNorm, interleaved M-RoPE at get_rope_index's positions, causal GQA attention,
// o_proj, residual, RMSNorm, SiLU MLP, residual, then deepstack feature j added at the image
// tokens after layer j; the final norm and the head. The vision tower (golden-tested on its
// own, qwen3_vl_golden_test) gives the features from the same checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "models/llm/decoder_llm.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "models/vlm/qwen3_vl/rope_index.h"
#include "models/vlm/qwen3_vl/vision_config.h"
#include "models/vlm/qwen3_vl/vision_tower.h"
#include "models/vlm/qwen3_vl/vision_weights.h"
#include "serving/generate/engine.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

using Mat = std::vector<double>;  // row-major

struct Checkpoint {
  std::filesystem::path dir;
  std::map<std::string, Tensor> tensors;  // f32 holding bf16 values
  const Tensor& at(const std::string& n) const { return tensors.at(n); }
};

double bf16_round(double x) {
  uint8_t b[2];
  store_element(b, DType::bf16, x);
  return load_element(b, DType::bf16);
}

// Random weights under the upstream names for the tiny config (projections ~ 1/sqrt(fan_in),
// norms near one), written to a folder with its config.json.
Checkpoint write_checkpoint(uint64_t seed, bool tied) {
  nlohmann::json cfg = nlohmann::json::parse(models::vlm::kTinyQwen3VLConfig);
  cfg["tie_word_embeddings"] = tied;
  Checkpoint ck;
  ck.dir = std::filesystem::temp_directory_path() /
           ("fk_qwen3_vl_ref_" + std::to_string(::getpid()) + (tied ? "_tied" : ""));
  std::filesystem::create_directories(ck.dir);
  std::ofstream(ck.dir / "config.json") << cfg.dump(2);
  auto text = DecoderLlm::from_config("qwen3_vl", cfg.dump(), "test");
  std::vector<models::TensorDecl> decls = text->weights();
  const auto vision = models::vlm::qwen3_vl_vision_weight_decls(
      models::vlm::parse_qwen3_vl_vision_config(cfg.dump(), "test"), DType::f32);
  decls.insert(decls.end(), vision.begin(), vision.end());
  safetensors::NamedViews views;
  uint64_t offset = 0;
  for (const models::TensorDecl& d : decls) {
    if (tied && d.name == "lm_head.weight") continue;
    Tensor t = Tensor::empty(d.shape, DType::f32);
    const bool norm = d.name.find("norm") != std::string::npos && d.shape.size() == 1;
    const double fan_in = d.shape.size() >= 2 ? static_cast<double>(t.numel() / d.shape[0]) : 1.0;
    const float r = d.name.find("embed_tokens") != std::string::npos ? 1.f
                    : d.shape.size() >= 2                              ? static_cast<float>(std::sqrt(3.0 / fan_in))
                                                                       : 0.1f;
    fill_uniform(t.view(), seed, offset++, -r, r);
    float* v = t.data_as<float>();
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(bf16_round((norm ? 1.0 : 0.0) + v[i]));
    ck.tensors[d.name] = t;
  }
  for (auto& [n, t] : ck.tensors) views.emplace_back(n, t.view());
  safetensors::save(ck.dir / "model.safetensors", views);
  return ck;
}

Mat get_mat(const Tensor& t) {
  Mat m(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) m[static_cast<size_t>(i)] = t.data_as<float>()[i];
  return m;
}

// y [T, out] = x [T, in] . W^T, W [out, in].
Mat linear(const Mat& x, int64_t T, int64_t in, const Mat& w, int64_t out) {
  Mat y(static_cast<size_t>(T * out), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += x[static_cast<size_t>(t * in + i)] * w[static_cast<size_t>(o * in + i)];
      y[static_cast<size_t>(t * out + o)] = s;
    }
  return y;
}

// RMSNorm of each `width` slice.
void rms_norm(Mat& x, int64_t width, const Mat& w, double eps) {
  for (size_t r = 0; r < x.size() / static_cast<size_t>(width); ++r) {
    double ss = 0;
    for (int64_t i = 0; i < width; ++i) ss += x[r * width + i] * x[r * width + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(width) + eps);
    for (int64_t i = 0; i < width; ++i) x[r * width + i] *= inv * w[static_cast<size_t>(i)];
  }
}

// The composed forward: logits [T, V] of the prompt with `merged` / `deepstack` features
// ([image tokens, H] each, in prompt order).
Mat reference_logits(const Checkpoint& ck, const std::vector<int64_t>& ids, const std::vector<int64_t>& pos3,
                     const Mat& merged, const std::vector<Mat>& deepstack, bool tied) {
  const int64_t T = static_cast<int64_t>(ids.size()), H = 24, Hq = 2, Hk = 1, D = 16, I = 48, V = 64, L = 2;
  const double eps = 1e-6, theta = 10000;
  const std::string p = "model.language_model.";
  const Mat embed = get_mat(ck.at(p + "embed_tokens.weight"));
  Mat h(static_cast<size_t>(T * H));
  std::vector<int64_t> image_row(static_cast<size_t>(T), -1);
  for (int64_t t = 0, k = 0; t < T; ++t) {
    if (ids[static_cast<size_t>(t)] == 60) image_row[static_cast<size_t>(t)] = k++;
    for (int64_t i = 0; i < H; ++i)
      h[static_cast<size_t>(t * H + i)] = image_row[static_cast<size_t>(t)] >= 0
                                              ? merged[static_cast<size_t>(image_row[static_cast<size_t>(t)] * H + i)]
                                              : embed[static_cast<size_t>(ids[static_cast<size_t>(t)] * H + i)];
  }
  // Interleaved M-RoPE: frequency i reads axis h when i % 3 == 1 (i < 3 * 2), w when i % 3 == 2 (i < 3 * 2), else t.
  auto rope = [&](Mat& x, int64_t heads) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hd = 0; hd < heads; ++hd)
        for (int64_t i = 0; i < D / 2; ++i) {
          const int axis = (i % 3 == 1 && i < 6) ? 1 : (i % 3 == 2 && i < 6) ? 2 : 0;
          const double pos = static_cast<double>(pos3[static_cast<size_t>(axis * T + t)]);
          const double ang = pos * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
          double& a = x[static_cast<size_t>((t * heads + hd) * D + i)];
          double& b = x[static_cast<size_t>((t * heads + hd) * D + i + D / 2)];
          const double a0 = a, b0 = b;
          a = a0 * std::cos(ang) - b0 * std::sin(ang);
          b = b0 * std::cos(ang) + a0 * std::sin(ang);
        }
  };
  for (int64_t l = 0; l < L; ++l) {
    const std::string n = p + "layers." + std::to_string(l) + ".";
    Mat x = h;
    rms_norm(x, H, get_mat(ck.at(n + "input_layernorm.weight")), eps);
    Mat q = linear(x, T, H, get_mat(ck.at(n + "self_attn.q_proj.weight")), Hq * D);
    Mat k = linear(x, T, H, get_mat(ck.at(n + "self_attn.k_proj.weight")), Hk * D);
    const Mat v = linear(x, T, H, get_mat(ck.at(n + "self_attn.v_proj.weight")), Hk * D);
    rms_norm(q, D, get_mat(ck.at(n + "self_attn.q_norm.weight")), eps);
    rms_norm(k, D, get_mat(ck.at(n + "self_attn.k_norm.weight")), eps);
    rope(q, Hq);
    rope(k, Hk);
    Mat attn(static_cast<size_t>(T * Hq * D), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hd = 0; hd < Hq; ++hd) {
        const int64_t kh = hd / (Hq / Hk);
        std::vector<double> s(static_cast<size_t>(t + 1));
        double m = -1e300, z = 0;
        for (int64_t u = 0; u <= t; ++u) {
          double dot = 0;
          for (int64_t i = 0; i < D; ++i)
            dot += q[static_cast<size_t>((t * Hq + hd) * D + i)] * k[static_cast<size_t>((u * Hk + kh) * D + i)];
          s[static_cast<size_t>(u)] = dot / std::sqrt(static_cast<double>(D));
          m = std::max(m, s[static_cast<size_t>(u)]);
        }
        for (double& e : s) z += (e = std::exp(e - m));
        for (int64_t u = 0; u <= t; ++u)
          for (int64_t i = 0; i < D; ++i)
            attn[static_cast<size_t>((t * Hq + hd) * D + i)] +=
                s[static_cast<size_t>(u)] / z * v[static_cast<size_t>((u * Hk + kh) * D + i)];
      }
    const Mat o = linear(attn, T, Hq * D, get_mat(ck.at(n + "self_attn.o_proj.weight")), H);
    for (size_t i = 0; i < h.size(); ++i) h[i] += o[i];
    x = h;
    rms_norm(x, H, get_mat(ck.at(n + "post_attention_layernorm.weight")), eps);
    const Mat g = linear(x, T, H, get_mat(ck.at(n + "mlp.gate_proj.weight")), I);
    const Mat u = linear(x, T, H, get_mat(ck.at(n + "mlp.up_proj.weight")), I);
    Mat a(static_cast<size_t>(T * I));
    for (size_t i = 0; i < a.size(); ++i) a[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    const Mat d = linear(a, T, I, get_mat(ck.at(n + "mlp.down_proj.weight")), H);
    for (size_t i = 0; i < h.size(); ++i) h[i] += d[i];
    if (l < static_cast<int64_t>(deepstack.size()))
      for (int64_t t = 0; t < T; ++t)
        if (image_row[static_cast<size_t>(t)] >= 0)
          for (int64_t i = 0; i < H; ++i)
            h[static_cast<size_t>(t * H + i)] +=
                deepstack[static_cast<size_t>(l)][static_cast<size_t>(image_row[static_cast<size_t>(t)] * H + i)];
  }
  rms_norm(h, H, get_mat(ck.at(p + "norm.weight")), eps);
  return linear(h, T, H, get_mat(ck.at(tied ? p + "embed_tokens.weight" : "lm_head.weight")), V);
}

Mat view_to_mat(const TensorView& v) {
  Mat m(static_cast<size_t>(v.numel()));
  for (int64_t i = 0; i < v.shape[0]; ++i)
    for (int64_t j = 0; j < v.shape[1]; ++j) m[static_cast<size_t>(i * v.shape[1] + j)] = get(v, i, j);
  return m;
}

TEST(Qwen3VLReference, EngineMatchesTheComposedForwardFromAnUpstreamCheckpoint) {
  const uint64_t seed = test::seed_for("qwen3_vl_reference");
  for (bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied embeddings" : "lm_head.weight");
    const Checkpoint ck = write_checkpoint(seed, tied);
    // Text, an image of 4 x 6 patches (6 tokens), text, a tall 8 x 2 one (4 tokens), text.
    std::vector<int64_t> ids = {1, 2, 58};
    ids.insert(ids.end(), 6, 60);
    for (int64_t t : {59, 4, 58}) ids.push_back(t);
    ids.insert(ids.end(), 4, 60);
    for (int64_t t : {59, 5, 6, 7}) ids.push_back(t);
    const std::vector<std::array<int64_t, 3>> grids = {{1, 4, 6}, {1, 8, 2}};
    auto im = std::make_shared<RequestImages>();
    im->grids = grids;
    im->pixel_values = Tensor::empty({40, 96}, DType::f32);
    fill_uniform(im->pixel_values.view(), seed, 999, -1.f, 1.f);
    float* px = im->pixel_values.data_as<float>();
    for (int64_t i = 0; i < im->pixel_values.numel(); ++i) px[i] = static_cast<float>(bf16_round(px[i]));

    // The vision tower's features from the same checkpoint, and get_rope_index's positions.
    const auto vc = models::vlm::parse_qwen3_vl_vision_config(models::vlm::kTinyQwen3VLConfig, "tiny");
    models::vlm::Qwen3VLVisionTower tower(
        vc, models::vlm::load_qwen3_vl_vision_weights(vc, ck.dir / "model.safetensors", DType::bf16, Device::cpu()),
        DType::bf16, Device::cpu(), 40, nullptr);
    Tensor pix = Tensor::empty({40, 96}, DType::bf16);
    for (int64_t i = 0; i < 40 * 96; ++i) store_element(static_cast<uint8_t*>(pix.data()) + 2 * i, DType::bf16, px[i]);
    const Mat merged = view_to_mat(tower.forward(pix.view(), {{1, 4, 6}, {1, 8, 2}}, nullptr));
    std::vector<Mat> deepstack;
    for (size_t k = 0; k < tower.num_deepstack(); ++k) deepstack.push_back(view_to_mat(tower.deepstack(k)));
    const auto pos = models::vlm::qwen3_vl_rope_index(ids, {{1, 4, 6}, {1, 8, 2}}, 60, 2);
    const Mat want = reference_logits(ck, ids, pos.positions, merged, deepstack, tied);

    EngineConfig c;
    c.model = ck.dir.string();
    c.backend = DeviceType::cpu;
    c.num_pages = 32;
    c.max_num_seqs = 32;  // prefill_logits returns at most max_num_seqs rows
    c.max_model_len = 128;
    Engine e(c);
    const int64_t T = static_cast<int64_t>(ids.size()), V = 64;
    const std::vector<float> got = e.prefill_logits(ids, T, im);
    ASSERT_EQ(got.size(), want.size());
    for (int64_t t = 0; t < T; ++t) {
      double num = 0, den = 0;
      for (int64_t v = 0; v < V; ++v) {
        const double d = got[static_cast<size_t>(t * V + v)] - want[static_cast<size_t>(t * V + v)];
        num += d * d, den += want[static_cast<size_t>(t * V + v)] * want[static_cast<size_t>(t * V + v)];
      }
      EXPECT_LE(std::sqrt(num / den), 0.03) << "position " << t << " seed " << seed;
    }
    std::filesystem::remove_all(ck.dir);
  }
}

}  // namespace
}  // namespace fk::engine
