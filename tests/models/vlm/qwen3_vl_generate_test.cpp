// Qwen3-VL generating text on the CPU engine (tiny-qwen3-vl, dummy weights): the config and
// its refusals, M-RoPE with three equal rows being the ordinary rotary embedding (what decode
// steps use), an image prompt's decode steps against its teacher-forced prefill, chunked
// prefill across the image tokens, an image changing the output, text-only prompts, and the
// named errors of bad image requests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "fk/op_registry.h"
#include "fk/ops/mrope.h"
#include "fk/ops/rope.h"
#include "fk/random.h"
#include "fk/rope_cache.h"
#include "models/llm/model_config.h"
#include "models/llm/model_spec.h"
#include "models/registry.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "serving/generate/engine.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

// tiny-qwen3-vl's special tokens (presets.cpp).
constexpr int64_t kVisionStart = 58, kVisionEnd = 59, kImage = 60, kVideo = 61;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(stmt, text)                                       \
  do {                                                                 \
    const std::string e_ = error_of([&] { stmt; });                    \
    EXPECT_NE(e_.find(text), std::string::npos) << "got: '" << e_ << "'"; \
  } while (0)

EngineConfig tiny_vl(int64_t budget = 256) {
  EngineConfig c;
  c.model = "tiny-qwen3-vl";
  c.backend = DeviceType::cpu;
  c.num_pages = 64;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 8;
  c.max_model_len = 256;
  c.weight_seed = 7;
  return c;
}

// One image of `grid` patches (its pixel values uniform in [-1, 1) from `seed`).
std::shared_ptr<RequestImages> image(std::array<int64_t, 3> grid, uint64_t seed) {
  auto im = std::make_shared<RequestImages>();
  im->grids = {grid};
  im->pixel_values = Tensor::empty({grid[0] * grid[1] * grid[2], 3 * 2 * 4 * 4}, DType::f32);
  fill_uniform(im->pixel_values.view(), seed, 0, -1.f, 1.f);
  return im;
}

std::shared_ptr<RequestImages> copy(const RequestImages& im) {
  auto c = std::make_shared<RequestImages>();
  c->grids = im.grids;
  c->pixel_values = im.pixel_values;
  return c;
}

// Text, <|vision_start|>, the image's merged tokens, <|vision_end|>, text.
std::vector<int64_t> image_prompt(std::array<int64_t, 3> grid) {
  std::vector<int64_t> p = {1, 2, 3, kVisionStart};
  p.insert(p.end(), grid[0] * (grid[1] / 2) * (grid[2] / 2), kImage);
  for (int64_t t : {kVisionEnd, int64_t{4}, int64_t{5}, int64_t{6}}) p.push_back(t);
  return p;
}

// Greedy, never the special tokens (a sampled image token would be one without an image),
// with the sampled tokens' raw logprobs.
SamplingParams greedy(int64_t n) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = n;
  p.ignore_eos = true;
  p.logprobs = 0;
  for (int64_t t = kVisionStart; t < 64; ++t) p.logit_bias.push_back({t, -100.f});
  return p;
}

GenerationResult run_one(Engine& e, const std::vector<int64_t>& prompt, const SamplingParams& p,
                         std::shared_ptr<RequestImages> images) {
  e.add_request(prompt, p, "r", std::move(images));
  std::vector<GenerationResult> done;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) done.push_back(std::move(g));
  EXPECT_EQ(done.size(), 1u);
  return done.at(0);
}

double log_softmax_at(const float* row, int64_t V, int64_t id) {
  double m = row[0];
  for (int64_t v = 1; v < V; ++v) m = std::max(m, static_cast<double>(row[v]));
  double s = 0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - m);
  return row[id] - m - std::log(s);
}

TEST(Qwen3VLConfig, TextConfigParsesWithMrope) {
  const ModelConfig c = model_config_by_name("tiny-qwen3-vl");
  EXPECT_EQ(c.model_type, "qwen3_vl_text");
  EXPECT_EQ(c.mrope_section, (std::vector<int64_t>{4, 2, 2}));
  EXPECT_TRUE(c.mrope_interleaved);
  EXPECT_EQ(c.qk_norm, QkNorm::per_head);
  EXPECT_EQ(c.hidden_size, 24);
  const ModelSpec s = model_spec_for(c);
  EXPECT_EQ(s.prefix, "model.language_model.");
  EXPECT_TRUE(s.qk_norm);
  const ModelConfig big = model_config_by_name("qwen3-vl-8b");
  EXPECT_EQ(big.mrope_section, (std::vector<int64_t>{24, 20, 20}));
  EXPECT_EQ(big.num_hidden_layers, 36);
  EXPECT_EQ(big.eos_token_ids, (std::vector<int64_t>{151645}));
  // The registry: Generate pattern, multimodal, both presets.
  const models::ModelSource src = models::resolve_model("tiny-qwen3-vl");
  EXPECT_EQ(src.registration->architecture, "qwen3_vl");
  EXPECT_EQ(src.registration->pattern, models::RunPattern::generate);
  EXPECT_EQ(models::resolve_model("qwen3-vl-8b").preset->kind, models::PresetKind::production);
  // Its ops' tasks (fk capture) go to the multimodal category, beside the vision tower's.
  EXPECT_EQ(models::category_of("tiny-qwen3-vl"), "multimodal");
}

TEST(Qwen3VLConfig, RefusesWhatItDoesNotRun) {
  const std::string base = models::vlm::kTinyQwen3VLConfig;
  std::string moe = base;
  moe.replace(moe.find("\"qwen3_vl\""), 10, "\"qwen3_vl_moe\"");
  EXPECT_ERROR(parse_model_config(moe), "qwen3_vl_moe");
  std::string no_mrope = base;
  no_mrope.replace(no_mrope.find("\"mrope_section\": [4, 2, 2]"), 26, "\"mrope_sectionx\": [4, 2, 2]");
  EXPECT_ERROR(parse_model_config(no_mrope), "needs 'mrope_section'");
  std::string bad = base;
  bad.replace(bad.find("[4, 2, 2]"), 9, "[4, 2, 3]");
  EXPECT_ERROR(parse_model_config(bad), "not head_dim / 2 = 8");
}

// Decode steps rotate by the ordinary rotary embedding at position + rope delta: with the
// three M-RoPE rows equal, every frequency reads the same position, so the two ops agree
// bit for bit (CPU implementations; f32 and bf16).
TEST(Qwen3VLMrope, EqualRowsAreTheOrdinaryRotaryEmbedding) {
  const uint64_t seed = test::seed_for("qwen3_vl_mrope_equal_rows");
  const int64_t T = 7, Hq = 2, Hk = 1, D = 16, max_pos = 64;
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor q = Tensor::empty({T, Hq * D}, dt), k = Tensor::empty({T, Hk * D}, dt);
    fill_uniform(q.view(), seed, 1, -1.f, 1.f);
    fill_uniform(k.view(), seed, 2, -1.f, 1.f);
    Tensor q2 = q.clone(), k2 = k.clone();
    Tensor pos = Tensor::empty({T}, DType::i64), pos3 = Tensor::empty({3, T}, DType::i64);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = (t * 13 + static_cast<int64_t>(seed % 17)) % max_pos;
      pos.data_as<int64_t>()[t] = p;
      for (int a = 0; a < 3; ++a) pos3.data_as<int64_t>()[a * T + t] = p;
    }
    RopeConfig rc;
    rc.theta = 10000;
    const Tensor cache = make_rope_cos_sin_cache(rc, max_pos, D, DType::f32, Device::cpu());
    call_op(ops::RotaryEmbeddingArgs{pos.view(), q.view(), k.view(), cache.view(), static_cast<int32_t>(D),
                                     ops::RopeStyle::neox},
            DeviceType::cpu, nullptr);
    call_op(ops::MropeRotaryEmbeddingArgs{pos3.view(), q2.view(), k2.view(), cache.view(), static_cast<int32_t>(D),
                                          {4, 2, 2}, 1},
            DeviceType::cpu, nullptr);
    EXPECT_EQ(std::memcmp(q.data(), q2.data(), q.nbytes()), 0) << dtype_name(dt);
    EXPECT_EQ(std::memcmp(k.data(), k2.data(), k.nbytes()), 0) << dtype_name(dt);
  }
}

// A text prompt through the M-RoPE prefill path (images with no image: three equal rows)
// gives the logits of the ordinary path, up to the one extra bf16 rounding of q and k.
TEST(Qwen3VLEngine, TextPromptThroughMropeMatchesTheOrdinaryPath) {
  Engine e(tiny_vl());
  const std::vector<int64_t> prompt = {1, 5, 9, 2, 33, 17, 4, 8, 12};
  const std::vector<float> plain = e.prefill_logits(prompt, 4);
  const std::vector<float> mrope = e.prefill_logits(prompt, 4, std::make_shared<RequestImages>());
  ASSERT_EQ(plain.size(), mrope.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(plain[i]) - mrope[i]));
    scale = std::max(scale, std::abs(static_cast<double>(plain[i])));
  }
  EXPECT_LE(worst, 0.02 * std::max(scale, 1.0)) << "scale " << scale;
}

// Decode steps (position + rope delta) against the teacher-forced prefill of the prompt and
// the generated tokens (M-RoPE positions throughout): the same log-probabilities.
TEST(Qwen3VLEngine, DecodeWithRopeDeltaMatchesTeacherForcedPrefill) {
  const uint64_t seed = test::seed_for("qwen3_vl_decode_vs_prefill");
  const std::array<int64_t, 3> grid = {1, 4, 6};
  auto im = image(grid, seed);
  const std::vector<int64_t> prompt = image_prompt(grid);
  Engine e(tiny_vl());
  const int64_t n = 8;
  const GenerationResult g = run_one(e, prompt, greedy(n), copy(*im));
  ASSERT_EQ(static_cast<int64_t>(g.output_tokens.size()), n);
  std::vector<int64_t> all = prompt;
  all.insert(all.end(), g.output_tokens.begin(), g.output_tokens.end() - 1);
  const std::vector<float> tf = e.prefill_logits(all, n, copy(*im));
  const int64_t V = e.spec().config.vocab_size;
  for (int64_t k = 0; k < n; ++k) {
    const double want = log_softmax_at(tf.data() + k * V, V, g.output_tokens[static_cast<size_t>(k)]);
    EXPECT_NEAR(g.output_logprobs[static_cast<size_t>(k)].logprob, want, 0.05) << "token " << k;
  }
}

// Chunked prefill across the image tokens (a 5-token budget splits the image's 6 tokens)
// gives the unchunked run's tokens and log-probabilities; the vision tower runs once.
TEST(Qwen3VLEngine, ChunkedPrefillAcrossImageTokens) {
  const uint64_t seed = test::seed_for("qwen3_vl_chunked");
  const std::array<int64_t, 3> grid = {1, 4, 6};
  auto im = image(grid, seed);
  const std::vector<int64_t> prompt = image_prompt(grid);
  Engine whole(tiny_vl(256)), chunked(tiny_vl(5));
  const GenerationResult a = run_one(whole, prompt, greedy(6), copy(*im));
  const GenerationResult b = run_one(chunked, prompt, greedy(6), copy(*im));
  EXPECT_GE(chunked.stats().prefill_steps + chunked.stats().mixed_steps, 3);
  ASSERT_EQ(a.output_tokens.size(), b.output_tokens.size());
  for (size_t k = 0; k < a.output_tokens.size(); ++k)
    EXPECT_NEAR(a.output_logprobs[k].logprob, b.output_logprobs[k].logprob, 0.05) << "token " << k;
}

// The image is read: two images give different logits for the same prompt, and one image
// twice (fresh requests) the same; a text prompt generates on the same engine.
TEST(Qwen3VLEngine, TheImageChangesTheOutputAndTextPromptsStillRun) {
  const uint64_t seed = test::seed_for("qwen3_vl_image_matters");
  const std::array<int64_t, 3> grid = {1, 4, 4};
  const std::vector<int64_t> prompt = image_prompt(grid);
  Engine e(tiny_vl());
  const std::vector<float> x = e.prefill_logits(prompt, 3, image(grid, seed));
  const std::vector<float> x2 = e.prefill_logits(prompt, 3, image(grid, seed));
  const std::vector<float> y = e.prefill_logits(prompt, 3, image(grid, seed + 1));
  double diff = 0, same = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(x[i]) - y[i]));
    same = std::max(same, std::abs(static_cast<double>(x[i]) - x2[i]));
  }
  EXPECT_EQ(same, 0.0);
  EXPECT_GT(diff, 1e-2);
  const GenerationResult t = run_one(e, {1, 2, 3, 4, 5}, greedy(4), nullptr);
  EXPECT_EQ(t.output_tokens.size(), 4u);
  EXPECT_EQ(t.finish_reason, FinishReason::length);
}

// Image requests packed into shared steps with a text request, chunked and preempted (a
// small cache: recomputation encodes the images again) give each request's solo results.
TEST(Qwen3VLEngine, PackedAndPreemptedImageRequestsMatchSoloRuns) {
  const uint64_t seed = test::seed_for("qwen3_vl_packed");
  const std::vector<std::array<int64_t, 3>> grids = {{1, 4, 6}, {1, 8, 2}, {1, 4, 4}};
  std::vector<std::vector<int64_t>> prompts;
  std::vector<std::shared_ptr<RequestImages>> images;
  for (size_t i = 0; i < grids.size(); ++i) {
    prompts.push_back(image_prompt(grids[i]));
    images.push_back(image(grids[i], seed + i));
  }
  prompts.push_back({1, 9, 17, 25, 33, 41, 49, 2, 3});
  images.push_back(nullptr);
  const SamplingParams p = greedy(20);
  std::vector<GenerationResult> solo;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Engine e(tiny_vl());
    solo.push_back(run_one(e, prompts[i], p, images[i] ? copy(*images[i]) : nullptr));
  }
  EngineConfig c = tiny_vl(16);
  c.num_pages = 5;  // 16-token pages: four requests of two pages each cannot all stay
  c.page_size = 16;
  Engine e(c);
  for (size_t i = 0; i < prompts.size(); ++i)
    e.add_request(prompts[i], p, "r" + std::to_string(i), images[i] ? copy(*images[i]) : nullptr);
  std::map<std::string, GenerationResult> got;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) got[g.id] = std::move(g);
  EXPECT_GT(e.stats().preemptions, 0) << "the test means to force preemption";
  for (size_t i = 0; i < prompts.size(); ++i) {
    const GenerationResult& g = got.at("r" + std::to_string(i));
    ASSERT_EQ(g.output_tokens.size(), solo[i].output_tokens.size()) << "request " << i;
    for (size_t k = 0; k < g.output_tokens.size(); ++k) {
      EXPECT_NEAR(g.output_logprobs[k].logprob, solo[i].output_logprobs[k].logprob, 0.05)
          << "request " << i << " token " << k;
      if (g.output_tokens[k] != solo[i].output_tokens[k]) break;  // a near-tie may diverge; compare up to it
    }
  }
}

// Text requests decoding beside an image request under a 5-token budget: the image prompt
// is prefilled a token or a few a step, some steps decode-only (one token per request, an
// image token among them); its results are its solo run's.
TEST(Qwen3VLEngine, ImagePromptBesideDecodesUnderATightBudget) {
  const uint64_t seed = test::seed_for("qwen3_vl_budget");
  const std::array<int64_t, 3> grid = {1, 4, 6};
  const std::vector<int64_t> prompt = image_prompt(grid);
  auto im = image(grid, seed);
  Engine solo(tiny_vl());
  const GenerationResult want = run_one(solo, prompt, greedy(8), copy(*im));
  Engine e(tiny_vl(5));
  for (int i = 0; i < 4; ++i) e.add_request({1, 2, 3, 4 + i}, greedy(40), "text" + std::to_string(i));
  for (int i = 0; i < 3; ++i) e.step();  // the text requests are decoding
  const int64_t decode_steps = e.stats().decode_steps;
  e.add_request(prompt, greedy(8), "image", copy(*im));
  std::map<std::string, GenerationResult> got;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) got[g.id] = std::move(g);
  EXPECT_GT(e.stats().decode_steps, decode_steps);
  const GenerationResult& g = got.at("image");
  ASSERT_EQ(g.output_tokens.size(), want.output_tokens.size());
  for (size_t k = 0; k < g.output_tokens.size(); ++k) {
    EXPECT_NEAR(g.output_logprobs[k].logprob, want.output_logprobs[k].logprob, 0.05) << "token " << k;
    if (g.output_tokens[k] != want.output_tokens[k]) break;
  }
}

TEST(Qwen3VLEngine, BadImageRequestsAreRefusedByName) {
  const uint64_t seed = test::seed_for("qwen3_vl_bad_requests");
  Engine e(tiny_vl());
  const std::array<int64_t, 3> grid = {1, 4, 6};
  std::vector<int64_t> prompt = image_prompt(grid);
  // One image token too many for the grid.
  std::vector<int64_t> longer = prompt;
  longer.insert(longer.begin() + 5, kImage);
  EXPECT_ERROR(e.add_request(longer, greedy(2), "", image(grid, seed)), "7 image tokens");
  // Image tokens without an image; an image without image tokens.
  EXPECT_ERROR(e.add_request(prompt, greedy(2)), "more image-token runs than the 0 images");
  EXPECT_ERROR(e.add_request({1, 2, 3}, greedy(2), "", image(grid, seed)), "prompt has 0 image-token runs");
  // Video, pixel values of the wrong size, an odd grid.
  EXPECT_ERROR(e.add_request({1, kVideo, 2}, greedy(2)), "video inputs are not supported");
  auto wrong = image(grid, seed);
  wrong->pixel_values = Tensor::empty({5, 96}, DType::f32);
  EXPECT_ERROR(e.add_request(prompt, greedy(2), "", wrong), "do not hold the grids' 24 patches");
  auto odd = image({1, 4, 5}, seed);
  EXPECT_ERROR(e.add_request(prompt, greedy(2), "", odd), "not a multiple of spatial_merge_size 2");
  EXPECT_FALSE(e.has_unfinished());
  // A text-only model takes no images.
  EngineConfig c = tiny_vl();
  c.model = "tiny-qwen3";
  Engine text(c);
  EXPECT_ERROR(text.add_request({1, 2, 3}, greedy(2), "", image(grid, seed)), "reads none");
}

}  // namespace
}  // namespace fk::engine
