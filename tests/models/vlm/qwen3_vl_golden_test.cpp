// Qwen3-VL against transformers on the CPU backend: the tiny vision tower's merged and
// deepstack features (Qwen3VLVisionModel in float32) and get_rope_index's M-RoPE position
// ids of a prompt with two images. Skips, naming the script, while the data is absent.
#include "fk/op_registry.h"
#include "fk/ops/mrope.h"
#include "fk/ops/rope.h"
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

// The text model's interleaved M-RoPE: mrope_rotary_embedding with the cache of
// rope_cos_sin_cache (theta 10000, head 16) at get_rope_index's positions gives
// Qwen3VLTextRotaryEmbedding + apply_rotary_pos_emb's q and k (f32).
TEST(Qwen3VLGolden, TextMropeMatchesTransformers) {
  FK_REQUIRE_QWEN3_VL_GOLDENS();
  const auto golden = safetensors::File::open(qwen3_vl_golden_dir() + "/golden.safetensors");
  const TensorView pos = golden.view("position_ids");
  const int64_t T = pos.shape[1], D = 16;
  auto copy = [](const TensorView& v) {
    Tensor t = Tensor::empty({v.shape[0], v.shape[1]}, DType::f32);
    for (int64_t i = 0; i < v.numel(); ++i) store_element(t.view().element_ptr(i), DType::f32, load_element(v.element_ptr(i), v.dtype));
    return t;
  };
  Tensor q = copy(golden.view("mrope.q")), k = copy(golden.view("mrope.k"));
  Tensor positions = Tensor::empty({3, T}, DType::i64);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t t = 0; t < T; ++t) positions.data_as<int64_t>()[r * T + t] = get_index(pos, r, t);
  Tensor cache = Tensor::empty({512, D}, DType::f32);
  RopeConfig rc;
  rc.theta = 10000.0;
  call_op(ops::RopeCosSinCacheArgs{cache.view(), rc}, DeviceType::cpu, nullptr);
  ops::MropeRotaryEmbeddingArgs a{};
  a.positions = positions.view();
  a.query = q.view();
  a.key = k.view();
  a.cos_sin_cache = cache.view();
  a.head_size = static_cast<int32_t>(D);
  a.mrope_section[0] = 4, a.mrope_section[1] = 2, a.mrope_section[2] = 2;
  a.interleaved = 1;
  call_op(a, DeviceType::cpu, nullptr);
  for (const auto& [got, name] : {std::pair{&q, "mrope.q_out"}, std::pair{&k, "mrope.k_out"}}) {
    const TensorView want = golden.view(name);
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(load_element(got->view().element_ptr(i), DType::f32), load_element(want.element_ptr(i), want.dtype), 1e-5)
          << name << " element " << i;
  }
}

}  // namespace
}  // namespace fk::models::vlm::test
