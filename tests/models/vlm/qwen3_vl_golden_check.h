// The Qwen3-VL golden check shared by the CPU and GPU golden tests: transformers' tiny
// vision tower (tests/data/models/qwen3_vl/, written by make_qwen3_vl_vision_goldens.py) on
// its pixel values — merged and deepstack features — and get_rope_index's position ids of
// its prompt. Skips, naming the script, while the data has not been made.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/runtime.h"
#include "models/vlm/qwen3_vl/rope_index.h"
#include "models/vlm/qwen3_vl/vision_tower.h"

namespace fk::models::vlm::test {

inline std::string qwen3_vl_golden_dir() { return std::string(FK_SOURCE_DIR) + "/tests/data/models/qwen3_vl"; }

inline bool qwen3_vl_golden_present() { return std::filesystem::exists(qwen3_vl_golden_dir() + "/golden.json"); }

#define FK_REQUIRE_QWEN3_VL_GOLDENS()                                                                       \
  if (!::fk::models::vlm::test::qwen3_vl_golden_present())                                                  \
  GTEST_SKIP() << "no golden data in " << ::fk::models::vlm::test::qwen3_vl_golden_dir()                    \
               << ": run tests/data/models/make_qwen3_vl_vision_goldens.py tests/data/models (torch, transformers)"

inline nlohmann::json qwen3_vl_golden_json() {
  std::ifstream f(qwen3_vl_golden_dir() + "/golden.json");
  return nlohmann::json::parse(f);
}

inline std::vector<PatchGrid> grids_of(const nlohmann::json& j) {
  std::vector<PatchGrid> g;
  for (const auto& e : j) g.push_back({e.at(0).get<int64_t>(), e.at(1).get<int64_t>(), e.at(2).get<int64_t>()});
  return g;
}

// Relative L2 error of a [rows, cols] device or host view against f32 goldens.
inline double relative_error(const TensorView& got_view, const TensorView& want) {
  Tensor host;
  TensorView got = got_view;
  if (!got_view.device.is_cpu()) {
    host = Tensor::empty({got_view.shape[0], got_view.shape[1]}, got_view.dtype);
    rt::memcpy_sync(host.data(), Device::cpu(), got_view.data, got_view.device, static_cast<size_t>(got_view.nbytes()));
    got = host.view();
  }
  EXPECT_EQ(got.shape[0], want.shape[0]);
  EXPECT_EQ(got.shape[1], want.shape[1]);
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.shape[0]; ++i)
    for (int64_t j = 0; j < want.shape[1]; ++j) {
      const double g = get(got, i, j), e = get(want, i, j);
      num += (g - e) * (g - e), den += e * e;
    }
  return std::sqrt(num / den);
}

// Runs the golden tower on `device` and checks merged and deepstack features (bf16
// activations against float32 transformers: within 2% of the output's norm).
inline void check_qwen3_vl_vision_goldens(Device device) {
  const nlohmann::json j = qwen3_vl_golden_json();
  std::ifstream cf(qwen3_vl_golden_dir() + "/config.json");
  std::stringstream text;
  text << cf.rdbuf();
  const Qwen3VLVisionConfig c = parse_qwen3_vl_vision_config(text.str(), "qwen3_vl golden config.json");
  const auto golden = safetensors::File::open(qwen3_vl_golden_dir() + "/golden.safetensors");
  const TensorView px = golden.view("pixel_values");
  Tensor pixels = Tensor::empty({px.shape[0], px.shape[1]}, DType::bf16);
  for (int64_t i = 0; i < px.numel(); ++i) store_element(pixels.view().element_ptr(i), DType::bf16, load_element(px.element_ptr(i), px.dtype));
  if (!device.is_cpu()) pixels = pixels.to(device);
  Qwen3VLVisionTower tower(c, load_qwen3_vl_vision_weights(c, qwen3_vl_golden_dir() + "/model.safetensors", DType::bf16, device),
                           DType::bf16, device, px.shape[0], nullptr);
  const TensorView merged = tower.forward(pixels.view(), grids_of(j.at("vision_grids")), nullptr);
  if (!device.is_cpu()) rt::device_synchronize();
  EXPECT_LT(relative_error(merged, golden.view("merged")), 0.02) << "merged";
  ASSERT_EQ(tower.num_deepstack(), c.deepstack_visual_indexes.size());
  for (size_t k = 0; k < tower.num_deepstack(); ++k)
    EXPECT_LT(relative_error(tower.deepstack(k), golden.view("deepstack." + std::to_string(k))), 0.02) << "deepstack " << k;
}

}  // namespace fk::models::vlm::test
