// The Qwen3-VL generation golden check shared by the CPU and GPU golden tests: the engine
// loads transformers' tiny checkpoint (tests/data/models/qwen3_vl_generate/, written by
// make_qwen3_vl_goldens.py) and runs its image prompt: the teacher-forced logits of every
// prompt position and 8 greedy tokens. Skips, naming the script, while the data is absent.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "serving/generate/engine.h"

namespace fk::engine::test {

inline std::string qwen3_vl_generate_dir() {
  return std::string(FK_SOURCE_DIR) + "/tests/data/models/qwen3_vl_generate";
}

#define FK_REQUIRE_QWEN3_VL_GENERATE_GOLDENS()                                                                \
  if (!std::filesystem::exists(::fk::engine::test::qwen3_vl_generate_dir() + "/golden.json"))                \
  GTEST_SKIP() << "no golden data in " << ::fk::engine::test::qwen3_vl_generate_dir()                         \
               << ": run tests/data/models/make_qwen3_vl_goldens.py tests/data/models (torch, transformers)"

inline void check_qwen3_vl_generate_goldens(DeviceType backend) {
  const std::string dir = qwen3_vl_generate_dir();
  std::ifstream f(dir + "/golden.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  const std::vector<int64_t> ids = j.at("input_ids").get<std::vector<int64_t>>();
  const std::vector<int64_t> greedy = j.at("greedy_tokens").get<std::vector<int64_t>>();
  const auto golden = safetensors::File::open(dir + "/golden.safetensors");
  auto images = [&] {
    auto im = std::make_shared<RequestImages>();
    const auto g = j.at("image_grid");
    im->grids = {{g.at(0).get<int64_t>(), g.at(1).get<int64_t>(), g.at(2).get<int64_t>()}};
    const TensorView pv = golden.view("pixel_values");
    im->pixel_values = Tensor::empty({pv.shape[0], pv.shape[1]}, DType::f32);
    for (int64_t i = 0; i < pv.numel(); ++i)
      im->pixel_values.data_as<float>()[i] = static_cast<float>(load_element(
          static_cast<const uint8_t*>(pv.data) + i * static_cast<int64_t>(dtype_size(pv.dtype)), pv.dtype));
    return im;
  };
  EngineConfig c;
  c.model = dir;
  c.backend = backend;
  c.num_pages = 64;
  c.max_num_seqs = 32;  // prefill_logits returns at most max_num_seqs rows
  c.max_model_len = 128;
  c.max_num_batched_tokens = 128;
  Engine e(c);
  const int64_t T = static_cast<int64_t>(ids.size()), V = e.spec().config.vocab_size;
  const std::vector<float> got = e.prefill_logits(ids, T, images());
  const TensorView want = golden.view("logits");
  ASSERT_EQ(want.shape[0], T);
  ASSERT_EQ(want.shape[1], V);
  // Per position, the relative L2 error of the bf16 engine against transformers' float32.
  for (int64_t t = 0; t < T; ++t) {
    double num = 0, den = 0;
    for (int64_t v = 0; v < V; ++v) {
      const double w = get(want, t, v), d = got[static_cast<size_t>(t * V + v)] - w;
      num += d * d, den += w * w;
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    EXPECT_LE(rel, 0.03) << "position " << t;
    std::printf("position %lld: relative L2 %.4f\n", static_cast<long long>(t), rel);
  }
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = static_cast<int64_t>(greedy.size());
  p.ignore_eos = true;
  e.add_request(ids, p, "golden", images());
  std::vector<GenerationResult> done;
  while (e.has_unfinished())
    for (GenerationResult& g : e.step()) done.push_back(std::move(g));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].output_tokens, greedy);
}

}  // namespace fk::engine::test
