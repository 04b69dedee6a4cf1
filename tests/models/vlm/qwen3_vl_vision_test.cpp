// Qwen3-VL's vision tower on the CPU: its config (the 8B preset, named refusals), the
// host-side layout (patch order, bilinear taps, 2D rope, per-frame attention), and the
// forward pass through the registry ops against a double-precision forward written here
// from transformers' Qwen3VLVisionModel (raster-order position interpolation then the
// processor's merge-block permutation, rotate-half rope from cat(freqs, freqs), attention
// per frame), on the tiny config with random weights: two images, one a 2-frame video.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/vision_block.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/registry.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "models/vlm/qwen3_vl/vision_config.h"
#include "models/vlm/qwen3_vl/vision_layout.h"
#include "models/vlm/qwen3_vl/vision_model.h"
#include "models/vlm/qwen3_vl/vision_tower.h"
#include "support/test_seed.h"

namespace fk::models::vlm {
namespace {

double bf16_round(double v) {
  Tensor t = Tensor::empty({1}, DType::bf16);
  store_element(t.data(), DType::bf16, v);
  return load_element(t.data(), DType::bf16);
}

// Element i of a contiguous tensor in row-major order.
double flat(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }

Qwen3VLVisionConfig tiny() { return parse_qwen3_vl_vision_config(kTinyQwen3VLConfig, "tiny"); }

void expect_refused(const std::string& vision_json, const std::string& needle) {
  const std::string json = R"({"model_type": "qwen3_vl", "vision_config": )" + vision_json + "}";
  try {
    parse_qwen3_vl_vision_config(json, "test");
    ADD_FAILURE() << "accepted " << vision_json;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << " lacks " << needle;
  }
}

TEST(Qwen3VLVisionConfig, EightBPreset) {
  const Qwen3VLVisionConfig c = parse_qwen3_vl_vision_config(kQwen3VL8BConfig, "8b");
  EXPECT_EQ(c.depth, 27);
  EXPECT_EQ(c.hidden_size, 1152);
  EXPECT_EQ(c.num_heads, 16);
  EXPECT_EQ(c.head_dim(), 72);
  EXPECT_EQ(c.intermediate_size, 4304);
  EXPECT_EQ(c.patch_dim(), 1536);
  EXPECT_EQ(c.out_hidden_size, 4096);
  EXPECT_EQ(c.grid_side(), 48);
  EXPECT_EQ(c.deepstack_visual_indexes, (std::vector<int64_t>{8, 16, 24}));
  EXPECT_EQ(c.gelu, ops::GeluApprox::tanh);
}

TEST(Qwen3VLVisionConfig, NamedRefusals) {
  expect_refused(R"({"num_position_embeddings": 2300})", "not a square");
  expect_refused(R"({"hidden_size": 1000, "num_heads": 16})", "not a multiple of num_heads");
  expect_refused(R"({"hidden_size": 1040, "num_heads": 16})", "head dim 65");
  expect_refused(R"({"hidden_act": "relu"})", "hidden_act 'relu'");
  expect_refused(R"({"deepstack_visual_indexes": [8, 27]})", "entry 27 is outside");
  expect_refused(R"({"deepstack_visual_indexes": [8, 8]})", "twice");
  expect_refused(R"({"depth": "27"})", "'depth' must be an integer");
  try {
    parse_qwen3_vl_vision_config(R"({"model_type": "llama"})", "test");
    ADD_FAILURE() << "accepted a llama config";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a Qwen3-VL config"), std::string::npos) << e.what();
  }
}

TEST(Qwen3VLVisionLayout, MergeBlockOrderTapsRopeAndFrames) {
  const Qwen3VLVisionConfig c = tiny();  // side 4, merge 2, head dim 16
  const VisionLayout L = qwen3_vl_vision_layout(c, {{1, 4, 6}, {2, 2, 2}});
  ASSERT_EQ(L.patches, 24 + 8);
  EXPECT_EQ(L.merged_tokens, 8);
  EXPECT_EQ(L.cu_seqlens, (std::vector<int32_t>{0, 24, 28, 32}));  // the video's frames attend apart
  EXPECT_EQ(L.max_seqlen, 24);
  // The first merge block covers rows 0-1, columns 0-1; the second columns 2-3.
  const std::vector<int64_t> rows = {0, 0, 1, 1, 0, 0, 1, 1}, cols = {0, 1, 0, 1, 2, 3, 2, 3};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(L.row[i], rows[i]) << i;
    EXPECT_EQ(L.col[i], cols[i]) << i;
  }
  // Bilinear taps: the corners sit on grid rows (weight 1), every patch's weights sum to 1.
  EXPECT_EQ(L.pos_ids[0], 0);
  EXPECT_FLOAT_EQ(L.pos_weights[0], 1.f);
  const size_t last = 23;  // row 3, column 5 of the 4 x 6 image: the grid's last row
  EXPECT_EQ(L.row[last], 3);
  EXPECT_EQ(L.col[last], 5);
  EXPECT_EQ(L.pos_ids[4 * last], 15);
  EXPECT_FLOAT_EQ(L.pos_weights[4 * last], 1.f);
  for (int64_t p = 0; p < L.patches; ++p) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += L.pos_weights[static_cast<size_t>(4 * p + j)];
    EXPECT_NEAR(s, 1.0, 1e-6) << p;
  }
  // Column 1 of 6 maps to 0.6 on the 4-wide grid: taps 0 and 1 weigh 0.4 and 0.6.
  EXPECT_NEAR(L.pos_weights[4 * 1 + 0], 0.4, 1e-6);
  EXPECT_NEAR(L.pos_weights[4 * 1 + 1], 0.6, 1e-6);
  // Rope: pair 0 turns by the row, pair D/4 by the column (frequency 1 both).
  const size_t D = 16, p = 6;  // row 1, column 2
  EXPECT_NEAR(L.rope_cos_sin[p * D + 0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(L.rope_cos_sin[p * D + 4], std::cos(2.0), 1e-6);
  EXPECT_NEAR(L.rope_cos_sin[p * D + 8 + 4], std::sin(2.0), 1e-6);
  EXPECT_NEAR(L.rope_cos_sin[p * D + 1], std::cos(1.0 * std::pow(10000.0, -0.25)), 1e-6);
  // The video's second frame repeats its first frame's positions.
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(L.row[24 + i], L.row[28 + i]);
    EXPECT_EQ(L.pos_ids[4 * (24 + i)], L.pos_ids[4 * (28 + i)]);
  }
  try {
    qwen3_vl_vision_layout(c, {{1, 4, 5}});
    ADD_FAILURE() << "an odd grid was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of spatial_merge_size 2"), std::string::npos) << e.what();
  }
}


// A checkpoint written under the upstream names and shapes (f32) loads into the tower's
// layout (bf16): the Conv3d weight as [hidden, C*Tp*P*P] rows, every tensor in its slot;
// a bare Qwen3VLVisionModel's names (no prefix) too; a missing or mis-shaped tensor is named.
TEST(Qwen3VLVisionWeights, LoadsTheUpstreamLayout) {
  const Qwen3VLVisionConfig c = tiny();
  const std::vector<TensorDecl> decls = qwen3_vl_vision_weight_decls(c, DType::f32);
  ASSERT_EQ(decls.front().name, "model.visual.patch_embed.proj.weight");
  EXPECT_EQ(decls.front().shape, (std::vector<int64_t>{32, 3, 2, 4, 4}));
  std::vector<Tensor> values;
  const uint64_t seed = test::seed_for("qwen3_vl_vision_weights");
  for (size_t i = 0; i < decls.size(); ++i) {
    values.push_back(Tensor::empty(decls[i].shape, DType::f32));
    fill_uniform(values.back().view(), seed, i, -1.f, 1.f);
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fk_qwen3_vl_weights_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& prefix, size_t skip, const std::string& file) {
    safetensors::NamedViews views;
    for (size_t i = 0; i < decls.size(); ++i)
      if (i != skip) views.emplace_back(prefix + decls[i].name.substr(std::string("model.visual.").size()), values[i].view());
    safetensors::save(dir / file, views);
    return dir / file;
  };
  for (const std::string prefix : {"model.visual.", ""}) {
    const Qwen3VLVisionWeights w =
        load_qwen3_vl_vision_weights(c, write(prefix, decls.size(), "w.safetensors"), DType::bf16, Device::cpu());
    ASSERT_EQ(w.patch.size(0), 32);
    ASSERT_EQ(w.patch.size(1), 96);
    // Element (o=5, c=2, t=1, p=3, q=0) of the Conv3d weight is row 5, column ((2*2+1)*4+3)*4+0.
    EXPECT_EQ(get(w.patch.view(), 5, 92), bf16_round(flat(values[0], 5 * 96 + 92)));
    ASSERT_EQ(w.blocks.size(), 3u);
    size_t qkv = 0;
    while (decls[qkv].name != "model.visual.blocks.2.attn.qkv.weight") ++qkv;
    EXPECT_EQ(get(w.blocks[2].qkv.view(), 17, 3), bf16_round(flat(values[qkv], 17 * 32 + 3)));
    ASSERT_EQ(w.deepstack.size(), 2u);
    EXPECT_EQ(w.deepstack[1].norm.size(0), 128);  // post-shuffle: over the merged 4H
    EXPECT_EQ(w.merger.norm.size(0), 32);
    EXPECT_EQ(get(w.deepstack[1].fc2_bias.view(), 7), bf16_round(flat(values.back(), 7)));
  }
  try {
    load_qwen3_vl_vision_weights(c, write("model.visual.", 5, "missing.safetensors"), DType::bf16, Device::cpu());
    ADD_FAILURE() << "a checkpoint without " << decls[5].name << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no tensor '" + decls[5].name + "'"), std::string::npos) << e.what();
  }
  std::string wide_json = kTinyQwen3VLConfig;  // the vision config's (the second) intermediate_size
  const std::string field = "\"intermediate_size\": 48";
  wide_json.replace(wide_json.rfind(field), field.size(), "\"intermediate_size\": 64");
  const Qwen3VLVisionConfig wide = parse_qwen3_vl_vision_config(wide_json, "wide");
  ASSERT_EQ(wide.intermediate_size, 64);
  try {
    load_qwen3_vl_vision_weights(wide, dir / "w.safetensors", DType::bf16, Device::cpu());
    ADD_FAILURE() << "a mis-shaped fc1 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.linear_fc1.weight' has shape"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// ---- the double-precision forward from transformers' definition ---------------------------

using Mat = std::vector<std::vector<double>>;

Mat host_mat(const Tensor& t) {
  const Tensor h = t.device().is_cpu() ? t : t.to(Device::cpu());
  const TensorView v = h.view();
  const int64_t r = v.rank == 1 ? 1 : v.shape[0], c = v.rank == 1 ? v.shape[0] : v.numel() / v.shape[0];
  Mat m(static_cast<size_t>(r), std::vector<double>(static_cast<size_t>(c)));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) m[i][j] = load_element(v.element_ptr(i * c + j), v.dtype);
  return m;
}

Mat linear(const Mat& x, const Tensor& w, const Tensor& b) {
  const Mat W = host_mat(w), B = host_mat(b);
  Mat y(x.size(), std::vector<double>(W.size()));
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t o = 0; o < W.size(); ++o) {
      double s = B[0][o];
      for (size_t k = 0; k < x[i].size(); ++k) s += x[i][k] * W[o][k];
      y[i][o] = s;
    }
  return y;
}

Mat layer_norm(const Mat& x, const Tensor& w, const Tensor& b, double eps) {
  const Mat W = host_mat(w), B = host_mat(b);
  Mat y = x;
  for (auto& row : y) {
    double mean = 0, var = 0;
    for (double v : row) mean += v;
    mean /= static_cast<double>(row.size());
    for (double v : row) var += (v - mean) * (v - mean);
    var /= static_cast<double>(row.size());
    for (size_t k = 0; k < row.size(); ++k) row[k] = (row[k] - mean) / std::sqrt(var + eps) * W[0][k] + B[0][k];
  }
  return y;
}

double gelu(double x, bool tanh_approx) {
  if (tanh_approx) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

Mat merger(const Mat& x, const PatchMergerWeights& w, bool postshuffle, int64_t unit) {
  Mat joined(x.size() / static_cast<size_t>(unit));
  auto join = [&](const Mat& m) {
    Mat j(m.size() / static_cast<size_t>(unit));
    for (size_t i = 0; i < m.size(); ++i) j[i / unit].insert(j[i / unit].end(), m[i].begin(), m[i].end());
    return j;
  };
  joined = postshuffle ? layer_norm(join(x), w.norm, w.norm_bias, 1e-6) : join(layer_norm(x, w.norm, w.norm_bias, 1e-6));
  Mat h = linear(joined, w.fc1, w.fc1_bias);
  for (auto& r : h)
    for (double& v : r) v = gelu(v, false);
  return linear(h, w.fc2, w.fc2_bias);
}

struct Reference {
  Mat merged;
  std::vector<Mat> deepstack;
};

Reference reference_forward(const Qwen3VLVisionConfig& c, const Qwen3VLVisionWeights& w, const Mat& pixels,
                            const std::vector<PatchGrid>& grids) {
  const int64_t m = c.spatial_merge_size, side = c.grid_side(), H = c.hidden_size, D = c.head_dim();
  const int64_t heads = c.num_heads;
  // Each patch's (row, column) and frame, in the processor's order: view(t, h/m, m, w/m, m)
  // permuted to (t, h/m, w/m, m, m).
  std::vector<int64_t> prow, pcol, frame_start, frame_len;
  for (const PatchGrid& g : grids)
    for (int64_t f = 0; f < g.t; ++f) {
      frame_start.push_back(static_cast<int64_t>(prow.size()));
      frame_len.push_back(g.h * g.w);
      for (int64_t br = 0; br < g.h / m; ++br)
        for (int64_t bc = 0; bc < g.w / m; ++bc)
          for (int64_t ir = 0; ir < m; ++ir)
            for (int64_t ic = 0; ic < m; ++ic) prow.push_back(br * m + ir), pcol.push_back(bc * m + ic);
    }
  Mat x = linear(pixels, w.patch, w.patch_bias);
  // Position grid sampled at linspace(0, side - 1, h) x linspace(0, side - 1, w).
  const Mat table = host_mat(w.pos_embed);
  size_t p = 0;
  for (const PatchGrid& g : grids)
    for (int64_t f = 0; f < g.t; ++f)
      for (int64_t i = 0; i < g.h * g.w; ++i, ++p) {
        const double y = g.h == 1 ? 0 : prow[p] * double(side - 1) / double(g.h - 1);
        const double xx = g.w == 1 ? 0 : pcol[p] * double(side - 1) / double(g.w - 1);
        const int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(xx);
        const int64_t y1 = std::min(y0 + 1, side - 1), x1 = std::min(x0 + 1, side - 1);
        const double dy = y - y0, dx = xx - x0;
        for (int64_t k = 0; k < H; ++k)
          x[p][k] += (1 - dy) * (1 - dx) * table[y0 * side + x0][k] + (1 - dy) * dx * table[y0 * side + x1][k] +
                     dy * (1 - dx) * table[y1 * side + x0][k] + dy * dx * table[y1 * side + x1][k];
      }
  const int64_t N = static_cast<int64_t>(x.size());
  Reference ref;
  for (int64_t l = 0; l < c.depth; ++l) {
    const VisionBlockWeights& b = w.blocks[static_cast<size_t>(l)];
    Mat qkv = linear(layer_norm(x, b.norm1, b.norm1_bias, 1e-6), b.qkv, b.qkv_bias);
    // emb = cat(freqs, freqs), freqs = [row * inv_freq, col * inv_freq]; x*cos + rotate_half(x)*sin.
    for (int64_t t = 0; t < N; ++t) {
      std::vector<double> emb(static_cast<size_t>(D));
      for (int64_t k = 0; k < D / 4; ++k) {
        const double inv = 1.0 / std::pow(10000.0, 2.0 * k / (D / 2.0));
        emb[k] = emb[k + D / 2] = prow[t] * inv;
        emb[k + D / 4] = emb[k + D / 4 + D / 2] = pcol[t] * inv;
      }
      for (int64_t part = 0; part < 2; ++part)
        for (int64_t hd = 0; hd < heads; ++hd) {
          double* v = &qkv[t][part * H + hd * D];
          std::vector<double> old(v, v + D);
          for (int64_t k = 0; k < D; ++k) {
            const double rot = k < D / 2 ? -old[k + D / 2] : old[k - D / 2];
            v[k] = old[k] * std::cos(emb[k]) + rot * std::sin(emb[k]);
          }
        }
    }
    Mat attn(static_cast<size_t>(N), std::vector<double>(static_cast<size_t>(H), 0.0));
    for (size_t f = 0; f < frame_start.size(); ++f)
      for (int64_t hd = 0; hd < heads; ++hd)
        for (int64_t i = frame_start[f]; i < frame_start[f] + frame_len[f]; ++i) {
          std::vector<double> s;
          double mx = -1e300, z = 0;
          for (int64_t j = frame_start[f]; j < frame_start[f] + frame_len[f]; ++j) {
            double d = 0;
            for (int64_t k = 0; k < D; ++k) d += qkv[i][hd * D + k] * qkv[j][H + hd * D + k];
            s.push_back(d / std::sqrt(static_cast<double>(D)));
            mx = std::max(mx, s.back());
          }
          for (double& v : s) z += (v = std::exp(v - mx));
          for (int64_t j = 0; j < frame_len[f]; ++j)
            for (int64_t k = 0; k < D; ++k) attn[i][hd * D + k] += s[j] / z * qkv[frame_start[f] + j][2 * H + hd * D + k];
        }
    const Mat o = linear(attn, b.proj, b.proj_bias);
    for (int64_t t = 0; t < N; ++t)
      for (int64_t k = 0; k < H; ++k) x[t][k] += o[t][k];
    Mat hmid = linear(layer_norm(x, b.norm2, b.norm2_bias, 1e-6), b.fc1, b.fc1_bias);
    for (auto& r : hmid)
      for (double& v : r) v = gelu(v, true);
    const Mat mlp = linear(hmid, b.fc2, b.fc2_bias);
    for (int64_t t = 0; t < N; ++t)
      for (int64_t k = 0; k < H; ++k) x[t][k] += mlp[t][k];
    for (size_t d = 0; d < c.deepstack_visual_indexes.size(); ++d)
      if (c.deepstack_visual_indexes[d] == l) ref.deepstack.push_back(merger(x, w.deepstack[d], true, c.merge_unit()));
  }
  ref.merged = merger(x, w.merger, false, c.merge_unit());
  return ref;
}

// Relative L2 error over the whole output and the largest element error against its scale.
void expect_close(const TensorView& got, const Mat& want, const std::string& what) {
  ASSERT_EQ(got.shape[0], static_cast<int64_t>(want.size())) << what;
  ASSERT_EQ(got.shape[1], static_cast<int64_t>(want[0].size())) << what;
  double num = 0, den = 0, worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].size(); ++j) scale = std::max(scale, std::fabs(want[i][j]));
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].size(); ++j) {
      const double g = get(got, static_cast<int64_t>(i), static_cast<int64_t>(j)), e = want[i][j];
      ASSERT_TRUE(std::isfinite(g)) << what << " [" << i << ", " << j << "]";
      num += (g - e) * (g - e), den += e * e;
      worst = std::max(worst, std::fabs(g - e));
    }
  // bf16 activations over 3 blocks: about 1% of the output's norm; a wrong rope axis,
  // patch order or tap is O(1).
  EXPECT_LT(std::sqrt(num / den), 0.03) << what;
  EXPECT_LT(worst, 0.1 * scale) << what;
}

TEST(Qwen3VLVisionTower, CpuForwardMatchesTheDefinition) {
  const Qwen3VLVisionConfig c = tiny();
  const uint64_t seed = test::seed_for("qwen3_vl_vision_tower");
  const std::vector<PatchGrid> grids = {{1, 4, 6}, {2, 2, 2}};
  Qwen3VLVisionTower tower(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cpu(), seed, nullptr),
                           DType::bf16, Device::cpu(), 64, nullptr);
  Tensor pixels = Tensor::empty({32, c.patch_dim()}, DType::bf16);
  fill_uniform(pixels.view(), seed, 1000, -1.f, 1.f);
  const TensorView merged = tower.forward(pixels.view(), grids, nullptr);
  const Reference ref = reference_forward(c, tower.weights(), host_mat(pixels), grids);
  expect_close(merged, ref.merged, "merged");
  ASSERT_EQ(tower.num_deepstack(), 2u);
  for (size_t k = 0; k < 2; ++k) expect_close(tower.deepstack(k), ref.deepstack[k], "deepstack " + std::to_string(k));
  // A call with fewer patches reuses the buffers.
  const std::vector<PatchGrid> one = {{1, 2, 4}};
  TensorView px = pixels.view();
  px.shape[0] = 8;
  const TensorView merged1 = tower.forward(px, one, nullptr);
  Mat pix8 = host_mat(pixels);
  pix8.resize(8);
  expect_close(merged1, reference_forward(c, tower.weights(), pix8, one).merged, "one image");
}

// Each block is one qwen3_vl_vision_block call (the L3 op a candidate replaces): a counting
// candidate for the op sees depth calls over every patch with the frames' boundaries, and
// the tower's output is bit for bit the one without it.
struct BlockCalls {
  int count = 0;
  std::vector<int64_t> rows, cu_seqlens;
};
BlockCalls g_block_calls;
fk_status counting_block(const void* args, void* stream) {
  const auto& a = *static_cast<const ops::Qwen3VLVisionBlockArgs*>(args);
  ++g_block_calls.count;
  g_block_calls.rows.push_back(a.hidden.shape[0]);
  g_block_calls.cu_seqlens.clear();
  for (int64_t i = 0; i < a.cu_seqlens_host.shape[0]; ++i)
    g_block_calls.cu_seqlens.push_back(get_index(a.cu_seqlens_host, i));
  return OpRegistry::global().baseline(ops::Qwen3VLVisionBlockArgs::kName, DeviceType::cpu)(args, stream);
}

TEST(Qwen3VLVisionTower, EachBlockIsOneVisionBlockCall) {
  const Qwen3VLVisionConfig c = tiny();
  const uint64_t seed = test::seed_for("qwen3_vl_vision_block_calls");
  const std::vector<PatchGrid> grids = {{1, 4, 6}, {2, 2, 2}};
  Tensor pixels = Tensor::empty({32, c.patch_dim()}, DType::bf16);
  fill_uniform(pixels.view(), seed, 1000, -1.f, 1.f);
  auto run = [&] {
    Qwen3VLVisionTower tower(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cpu(), seed, nullptr),
                             DType::bf16, Device::cpu(), 32, nullptr);
    const TensorView merged = tower.forward(pixels.view(), grids, nullptr);
    Tensor copy = Tensor::empty({merged.shape[0], merged.shape[1]}, merged.dtype);
    std::memcpy(copy.data(), merged.data, static_cast<size_t>(copy.numel()) * 2);  // packed bf16 rows
    return copy;
  };
  const Tensor plain = run();
  g_block_calls = {};
  OpRegistry::global().install(ops::Qwen3VLVisionBlockArgs::kName, DeviceType::cpu, counting_block, "candidate:test");
  const Tensor counted = run();
  OpRegistry::global().reset(ops::Qwen3VLVisionBlockArgs::kName, DeviceType::cpu);
  EXPECT_EQ(g_block_calls.count, c.depth);
  EXPECT_EQ(g_block_calls.rows, std::vector<int64_t>(static_cast<size_t>(c.depth), 32));
  EXPECT_EQ(g_block_calls.cu_seqlens, (std::vector<int64_t>{0, 24, 28, 32}));  // the video's frames apart
  ASSERT_EQ(plain.numel(), counted.numel());
  EXPECT_EQ(std::memcmp(plain.data(), counted.data(), static_cast<size_t>(plain.numel()) * 2), 0);
}

TEST(Qwen3VLVisionTower, NamedErrors) {
  const Qwen3VLVisionConfig c = tiny();
  Qwen3VLVisionTower tower(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cpu(), 1, nullptr), DType::bf16,
                           Device::cpu(), 16, nullptr);
  Tensor pixels = Tensor::zeros({24, c.patch_dim()}, DType::bf16);
  auto refused = [&](const TensorView& px, const std::vector<PatchGrid>& g, const std::string& needle) {
    try {
      tower.forward(px, g, nullptr);
      ADD_FAILURE() << "accepted; expected " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(pixels.view(), {{1, 4, 6}}, "more than the 16");
  TensorView px = pixels.view();
  px.shape[0] = 8;
  refused(px, {{1, 4, 4}}, "pixel_values must be [16, 96]");
  refused(px, {{1, 2, 3}}, "not a multiple of spatial_merge_size");
  Tensor f32 = Tensor::zeros({8, c.patch_dim()}, DType::f32);
  refused(f32.view(), {{1, 2, 4}}, "model dtype bf16");
}

// The registered tiny preset through the Model interface (plan from the host grid, forward)
// gives the tower's output for the same weights; a bad grid is refused at plan.
TEST(Qwen3VLVisionModel, RegisteredTinyPresetRunsOnTheCpu) {
  const Qwen3VLVisionConfig c = tiny();
  std::unique_ptr<Model> m = create_model("tiny-qwen3-vl-vision");
  ASSERT_EQ(m->architecture(), "qwen3_vl_vision");
  EXPECT_EQ(m->outputs().size(), 3u);  // merged + 2 deepstack
  LoadOptions o;
  o.seed = test::seed_for("qwen3_vl_vision_model");
  o.max_tokens = 40;
  m->load(o);
  Tensor grid = Tensor::empty({2, 3}, DType::i64);
  const int64_t g[] = {1, 4, 6, 2, 2, 2};
  for (int i = 0; i < 6; ++i) grid.data_as<int64_t>()[i] = g[i];
  Tensor pixels = Tensor::empty({32, c.patch_dim()}, DType::bf16);
  fill_uniform(pixels.view(), o.seed, 7, -1.f, 1.f);
  StepInputs in;
  in.tensors = {{"pixel_values", pixels.view()}, {"image_grid_thw", grid.view()}};
  m->plan(in, nullptr);
  const TensorView got = m->forward(in, nullptr);
  Qwen3VLVisionTower tower(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cpu(), o.seed, nullptr),
                           DType::bf16, Device::cpu(), 32, nullptr);
  const TensorView want = tower.forward(pixels.view(), {{1, 4, 6}, {2, 2, 2}}, nullptr);
  ASSERT_EQ(got.shape[0], 8);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < c.out_hidden_size; ++j) ASSERT_EQ(get(got, i, j), get(want, i, j)) << i << ", " << j;
  grid.data_as<int64_t>()[2] = 5;
  try {
    m->plan(in, nullptr);
    ADD_FAILURE() << "an odd grid was planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of spatial_merge_size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::models::vlm
