// Qwen3-VL on the CUDA engine (skips without a GPU): a tiny model (the tiny preset's vision
// tower; its text model with heads of 64, which the CUDA attention kernels take) against the
// same model on the CPU engine, and Qwen3-VL-8B's width (2 of its 36 text layers, the whole
// vision tower; dummy weights) running an image prompt's prefill and decode, its decode
// steps against the teacher-forced prefill.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "fk/random.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "serving/generate/engine.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

// A checkpoint folder holding only config.json (the engine runs dummy weights).
std::string config_folder(const std::string& name, const nlohmann::json& config) {
  const auto dir = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir.string();
}

nlohmann::json cuda_tiny() {
  nlohmann::json j = nlohmann::json::parse(models::vlm::kTinyQwen3VLConfig);
  j["text_config"]["head_dim"] = 64;
  j["text_config"]["rope_scaling"]["mrope_section"] = {16, 8, 8};
  return j;
}

EngineConfig config(const std::string& model, DeviceType backend, int64_t budget = 256) {
  EngineConfig c;
  c.model = model;
  c.dummy_weights = true;
  c.backend = backend;
  c.num_pages = 256;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 16;  // prefill_logits returns at most max_num_seqs rows: the whole tiny prompt
  c.max_model_len = 512;  // the tiny config's max_position_embeddings
  c.weight_seed = 11;
  return c;
}

std::shared_ptr<RequestImages> image(std::array<int64_t, 3> grid, int64_t patch_dim, uint64_t seed) {
  auto im = std::make_shared<RequestImages>();
  im->grids = {grid};
  im->pixel_values = Tensor::empty({grid[0] * grid[1] * grid[2], patch_dim}, DType::f32);
  fill_uniform(im->pixel_values.view(), seed, 0, -1.f, 1.f);
  return im;
}

std::vector<int64_t> prompt(std::array<int64_t, 3> grid, int64_t start, int64_t image_token, int64_t end) {
  std::vector<int64_t> p = {1, 2, 3, start};
  p.insert(p.end(), grid[0] * (grid[1] / 2) * (grid[2] / 2), image_token);
  for (int64_t t : {end, int64_t{4}, int64_t{5}}) p.push_back(t);
  return p;
}

SamplingParams greedy(int64_t n, int64_t first_banned, int64_t vocab) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = n;
  p.ignore_eos = true;
  p.logprobs = 0;
  for (int64_t t = first_banned; t < first_banned + 6 && t < vocab; ++t) p.logit_bias.push_back({t, -100.f});
  return p;
}

double log_softmax_at(const float* row, int64_t V, int64_t id) {
  double m = row[0], s = 0;
  for (int64_t v = 1; v < V; ++v) m = std::max(m, static_cast<double>(row[v]));
  for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - m);
  return row[id] - m - std::log(s);
}

GenerationResult run_one(Engine& e, const std::vector<int64_t>& p, const SamplingParams& s,
                         std::shared_ptr<RequestImages> im) {
  e.add_request(p, s, "r", std::move(im));
  std::vector<GenerationResult> done;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) done.push_back(std::move(g));
  EXPECT_EQ(done.size(), 1u);
  return done.at(0);
}

TEST(Qwen3VLGpu, TinyModelMatchesTheCpuEngine) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("Qwen3VLGpu.Tiny");
  const std::string folder = config_folder("fk_qwen3_vl_cuda_tiny", cuda_tiny());
  const std::array<int64_t, 3> grid = {1, 4, 6};
  const std::vector<int64_t> p = prompt(grid, 58, 60, 59);
  Engine cpu(config(folder, DeviceType::cpu)), gpu(config(folder, DeviceType::cuda));
  const std::vector<float> a = cpu.prefill_logits(p, static_cast<int64_t>(p.size()), image(grid, 96, seed));
  const std::vector<float> b = gpu.prefill_logits(p, static_cast<int64_t>(p.size()), image(grid, 96, seed));
  ASSERT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += a[i] * a[i];
  EXPECT_LE(std::sqrt(num / den), 0.03);
  // Generation with chunked prefill across the image on CUDA: the CPU's log-probabilities.
  Engine chunked(config(folder, DeviceType::cuda, 5));
  const GenerationResult x = run_one(cpu, p, greedy(8, 58, 64), image(grid, 96, seed));
  const GenerationResult y = run_one(chunked, p, greedy(8, 58, 64), image(grid, 96, seed));
  for (size_t k = 0; k < x.output_tokens.size() && k < y.output_tokens.size(); ++k) {
    if (x.output_tokens[k] != y.output_tokens[k]) break;  // a near-tie may diverge; compare up to it
    EXPECT_NEAR(x.output_logprobs[k].logprob, y.output_logprobs[k].logprob, 0.1) << "token " << k;
  }
}

// Text requests decoding beside an image request under a 5-token budget: the image prompt
// is prefilled a token or a few a step, in decode-only steps too (which then run eagerly,
// not from the captured graphs); its results are its solo run's.
TEST(Qwen3VLGpu, ImagePromptBesideDecodesUnderATightBudget) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("Qwen3VLGpu.Budget");
  const std::string folder = config_folder("fk_qwen3_vl_cuda_tiny_budget", cuda_tiny());
  const std::array<int64_t, 3> grid = {1, 4, 6};
  const std::vector<int64_t> p = prompt(grid, 58, 60, 59);
  Engine solo(config(folder, DeviceType::cuda));
  const GenerationResult want = run_one(solo, p, greedy(8, 58, 64), image(grid, 96, seed));
  Engine e(config(folder, DeviceType::cuda, 5));
  for (int i = 0; i < 4; ++i) e.add_request({1, 2, 3, 4 + i}, greedy(40, 58, 64), "text" + std::to_string(i));
  for (int i = 0; i < 3; ++i) e.step();  // the text requests are decoding
  e.add_request(p, greedy(8, 58, 64), "image", image(grid, 96, seed));
  std::map<std::string, GenerationResult> got;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) got[g.id] = std::move(g);
  const GenerationResult& g = got.at("image");
  ASSERT_EQ(g.output_tokens.size(), want.output_tokens.size());
  for (size_t k = 0; k < g.output_tokens.size(); ++k) {
    EXPECT_NEAR(g.output_logprobs[k].logprob, want.output_logprobs[k].logprob, 0.1) << "token " << k;
    if (g.output_tokens[k] != want.output_tokens[k]) break;
  }
}

TEST(Qwen3VLGpu, ProductionWidthPrefillAndDecode) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("Qwen3VLGpu.8B");
  nlohmann::json j = nlohmann::json::parse(models::vlm::kQwen3VL8BConfig);
  j["text_config"]["num_hidden_layers"] = 2;  // deepstack enters layers 0 and 1 (and 2: absent)
  j["vision_config"]["deepstack_visual_indexes"] = {8, 16};
  const std::string folder = config_folder("fk_qwen3_vl_8b_2l", j);
  // A 448 x 448 image: 28 x 28 patches of 16, 196 image tokens.
  const std::array<int64_t, 3> grid = {1, 28, 28};
  const std::vector<int64_t> p = prompt(grid, 151652, 151655, 151653);
  Engine e(config(folder, DeviceType::cuda, 2048));
  const auto t0 = std::chrono::steady_clock::now();
  const GenerationResult g = run_one(e, p, greedy(8, 151643, 151936), image(grid, 3 * 2 * 16 * 16, seed));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("qwen3-vl-8b (2 text layers): %zu prompt tokens, 8 tokens in %.3f s\n", p.size(), s);
  ASSERT_EQ(g.output_tokens.size(), 8u);
  std::vector<int64_t> all = p;
  all.insert(all.end(), g.output_tokens.begin(), g.output_tokens.end() - 1);
  const std::vector<float> tf = e.prefill_logits(all, 8, image(grid, 3 * 2 * 16 * 16, seed));
  const int64_t V = e.spec().config.vocab_size;
  for (int64_t k = 0; k < 8; ++k) {
    ASSERT_TRUE(std::isfinite(g.output_logprobs[static_cast<size_t>(k)].logprob));
    EXPECT_NEAR(g.output_logprobs[static_cast<size_t>(k)].logprob,
                log_softmax_at(tf.data() + k * V, V, g.output_tokens[static_cast<size_t>(k)]), 0.1)
        << "token " << k;
  }
}

}  // namespace
}  // namespace fk::engine
