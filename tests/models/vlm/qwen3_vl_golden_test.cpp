// Qwen3-VL against transformers on the CPU backend: the tiny vision tower's merged and
// deepstack features (Qwen3VLVisionModel in float32) and get_rope_index's M-RoPE position
// ids of a prompt with two images. Skips, naming the script, while the data is absent.
#include "models/vlm/qwen3_vl_golden_check.h"  // tests/models/vlm/

namespace fk::models::vlm::test {
namespace {

TEST(Qwen3VLGolden, VisionTowerMatchesTransformersCpu) {
  FK_REQUIRE_QWEN3_VL_GOLDENS();
  check_qwen3_vl_vision_goldens(Device::cpu());
}

TEST(Qwen3VLGolden, RopeIndexMatchesTransformers) {
  FK_REQUIRE_QWEN3_VL_GOLDENS();
  const nlohmann::json j = qwen3_vl_golden_json();
  const auto ids = j.at("input_ids").get<std::vector<int64_t>>();
  const MropePositions got = qwen3_vl_rope_index(ids, grids_of(j.at("image_grids")), j.at("image_token_id").get<int64_t>(),
                                                 j.at("spatial_merge_size").get<int64_t>());
  const auto golden = safetensors::File::open(qwen3_vl_golden_dir() + "/golden.safetensors");
  const TensorView want = golden.view("position_ids");
  ASSERT_EQ(want.shape[0], 3);
  ASSERT_EQ(want.shape[1], static_cast<int64_t>(ids.size()));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t t = 0; t < want.shape[1]; ++t)
      EXPECT_EQ(got.positions[static_cast<size_t>(r * want.shape[1] + t)], get_index(want, r, t)) << "row " << r << " token " << t;
  EXPECT_EQ(got.delta, j.at("rope_delta").get<int64_t>());
}

}  // namespace
}  // namespace fk::models::vlm::test
